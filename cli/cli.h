// The `statewatch` command line: `statewatch <verb> [options]` on a data directory, JSON on
// stdout (one document), messages on stderr. Exit 0 on success, 1 on a runtime error, 2 on
// a usage error. Runs in-process so that tests drive it without spawning a binary.
//
// Global options (before or after the verb): --data DIR (default ./data), --now MS (the
// command's clock), --durability sync|buffered. `statewatch help` lists the verbs.
//
// A one-shot command never runs the restart sweep (Engine::Start), and the inspecting verbs
// open the database with pruning off, so that looking never changes it.
//
// Not thread-safe: one call at a time per data directory (the engine locks it).
#ifndef STATEWATCH_CLI_CLI_H_
#define STATEWATCH_CLI_CLI_H_

#include <iosfwd>
#include <string>
#include <vector>

namespace statewatch::cli {

// Runs the command line `argv[0] <args...>`; reads stdin for `record --batch -`.
int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err);

// The same with the arguments after the program name and an explicit input stream.
int RunCli(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
           std::ostream& err);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_CLI_H_

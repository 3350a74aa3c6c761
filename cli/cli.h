// The `statewatch` command line: `statewatch <verb> [options]` on a data directory, JSON on
// stdout (one document), messages on stderr. Exit 0 on success, 1 on a runtime error, 2 on
// a usage error. Runs in-process so that tests drive it without spawning a binary.
//
// Global options (before or after the verb): --data DIR (default ./data), --now MS (the
// command's clock), --durability sync|buffered, --create (a writing verb may start a new
// database in an absent or empty --data; without it, it refuses), --server URL. `statewatch
// help` lists the verbs. An option no verb takes is "unknown option --NAME" wherever it
// stands.
//
// Exit 2 is for the shape of the command line (unknown verb or option, missing option, an
// option value that is not even of the right type: --limit abc, --now noon, --payload
// {bad). Values the engine or the session tools judge are runtime errors (exit 1): invalid
// events, malformed session keys, and a bad --changes-since, refused with exactly the
// session tools' message `changesSince must be a non-negative integer` so that the CLI and
// session_status refuse alike.
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

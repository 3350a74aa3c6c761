// Command: what one verb of `statewatch` runs with — its parsed arguments, the global
// options, the streams, and the engine (opened lazily, so that a usage error never touches
// the data directory). Plus the helpers every verb uses to turn options into API values and
// outcomes into exit codes.
//
// Exit codes: 0 success, 1 runtime error (message on stderr), 2 usage
// error (unknown verb or option, missing required option, malformed option value).
//
// Not thread-safe: one command, one thread.
#ifndef STATEWATCH_CLI_COMMAND_H_
#define STATEWATCH_CLI_COMMAND_H_

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <string_view>
#include <utility>

#include "cli/args.h"
#include "statewatch/engine.h"
#include "statewatch/options.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsageError = 2;

// How a verb uses the database. Inspecting verbs open it read-only, so that looking at a
// database never changes it (no file created, deleted or appended; docs/semantics.md,
// "Restarts and crashes"), works while `statewatch serve` holds it, and never creates one.
enum class Access {
  kReadOnly,      // read-only open: no pruning, no lock, no database created
  kWrite,         // pruning at open, as any writer
  kWriteNoPrune,  // `prune` itself: pruning at open would leave nothing for it to report
};

// The options every verb accepts.
struct GlobalOptions {
  std::string data_dir = "./data";
  std::optional<int64_t> now_ms;  // --now: a ManualClock for this command
  Durability durability = Durability::kSync;
  // --server URL[,URL…] (else $STATEWATCH_SERVER): run the verb against a daemon; "" =
  // locally. `server` is the first URL; `servers` all of them (a cluster's nodes, or a
  // daemon and its standby: cli/remote.h fails over between them).
  std::string server;
  std::vector<std::string> servers;
  // The bearer token read from --token-file (else $STATEWATCH_TOKEN_FILE); "" = none.
  std::string token;
  // For https:// servers: --ca-file (else $STATEWATCH_CA_FILE; else the system store) and
  // --client-cert/--client-key (mutual TLS).
  std::string ca_file;
  std::string client_cert;
  std::string client_key;
  // --create: a writing verb may make a new database where --data holds none. Without it
  // it refuses, so that a misspelled --data never quietly starts an empty database.
  bool create = false;
};

class Command {
 public:
  Command(const Args& args, GlobalOptions global, Access access, std::istream& in,
          std::ostream& out, std::ostream& err)
      : args(args), global(std::move(global)), in(in), out(out), err(err), access_(access) {}

  const Args& args;
  const GlobalOptions global;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;

  // Opens the engine on first use (never runs Engine::Start: no restart sweep in a
  // one-shot command). The Command owns it. Errors that lead somewhere: NotFound when a
  // writing verb finds no database in --data and --create was not given; Busy, naming
  // --server, when another process (a running daemon) holds the database's lock.
  Result<Engine*> OpenEngine();

 private:
  Access access_;
  std::unique_ptr<Engine> engine_;
};

// Reads --data, --now, --durability, --server (or STATEWATCH_SERVER) and --token-file (or
// STATEWATCH_TOKEN_FILE, read here). Usage errors name the option and value; an unreadable
// token file is one too.
Result<GlobalOptions> ReadGlobalOptions(const Args& args);

// Prints one JSON document and a newline on stdout; returns kExitOk.
int PrintJson(Command& c, const boost::json::value& document);
// Prints "statewatch: <message>" and a pointer to `help` on stderr; returns kExitUsageError.
int PrintUsageError(std::ostream& err, std::string_view message);
int UsageError(Command& c, std::string_view message);
// Prints "statewatch: <message>" on stderr — the bare message for InvalidArgument,
// NotFound (e.g. the byte-exact changesSince refusal) and Busy (the held database),
// "<code>: <message>" otherwise;
// returns kExitRuntimeError.
int RuntimeError(Command& c, const Status& status);

// A verb that asks one thing of the database: opens it, asks `ask(engine)` (a Result) and
// prints `to_json(answer)`; a failure of either is a runtime error.
template <typename Ask, typename ToJson>
int PrintEngineAnswer(Command& c, Ask ask, ToJson to_json) {
  auto engine = c.OpenEngine();
  if (!engine.ok()) return RuntimeError(c, engine.status());
  auto answer = ask(**engine);
  if (!answer.ok()) return RuntimeError(c, answer.status());
  return PrintJson(c, to_json(*answer));
}

// An integer option value; a usage error (InvalidArgument) when it is not one.
Result<int64_t> ParseIntOption(std::string_view name, const std::string& value);

// The session named by --<key_option> and --<agent_option> (docs/semantics.md,
// "Sessions and their keys"): an agent-scoped key brings its agent; a bare key takes the agent
// option or "main". InvalidArgument for a malformed key or a conflicting agent (a runtime error).
Result<SessionName> SessionFromOptions(const Args& args, std::string_view key_option,
                                       std::string_view agent_option);

// A verb that removes something of one session (the session itself, its upstream link): reads
// the session from --session and --agent, opens the database, calls `remove(engine,
// session)` and prints {"deleted": true}; a bad session or a failed remove is a runtime error.
int PrintSessionRemoved(Command& c,
                        const std::function<Status(Engine&, const SessionName&)>& remove);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_COMMAND_H_

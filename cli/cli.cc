#include "cli/cli.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/args.h"
#include "cli/command.h"
#include "cli/event_options.h"
#include "cli/verbs.h"
#include "server/serve_hook.h"

namespace statewatch::cli {
namespace {

struct Verb {
  std::string_view name;
  std::string_view synopsis;  // the options, for `statewatch help`
  Access access;
  std::vector<OptionSpec> options;
  int (*run)(Command&);
};

// Installed by the server library when it is linked in (server/serve_hook.h).
ServeVerbFn g_serve_verb = nullptr;

int RunServe(Command& c) {
  if (g_serve_verb == nullptr) {
    return UsageError(c, "'serve' is not available in this build (no server library)");
  }
  return g_serve_verb(c);
}

std::vector<OptionSpec> ServeOptions() {
  std::vector<OptionSpec> options;
  for (std::string_view name : kServeOptions) {
    options.push_back({std::string(name), /*required=*/false,
                       /*repeatable=*/name == "agent-to-agent-allow"});
  }
  return options;
}

// `serve` takes two flags, but every option of the grammar (cli/args.h) has a value: a bare
// flag becomes `--flag=true` unless a value follows it.
bool IsFlagValue(const std::string& token) {
  static const char* kWords[] = {"true", "false", "on", "off", "yes", "no"};
  for (const char* w : kWords) {
    if (token == w) return true;
  }
  return !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<std::string> ExpandServeFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    bool flag = std::any_of(std::begin(kServeFlags), std::end(kServeFlags),
                            [&](std::string_view f) { return argv[i] == "--" + std::string(f); });
    if (flag && (i + 1 >= argv.size() || !IsFlagValue(argv[i + 1]))) {
      out.push_back(argv[i] + "=true");
    } else {
      out.push_back(argv[i]);
    }
  }
  return out;
}

std::vector<OptionSpec> RecordOptions() {
  std::vector<OptionSpec> options{{"batch"}};
  for (const std::string& name : EventOptionNames()) {
    options.push_back({name, /*required=*/false, /*repeatable=*/name == "watcher"});
  }
  return options;
}

// The verb table: one place that says which options a verb takes and how it opens the
// database.
const std::vector<Verb>& Verbs() {
  static const auto* verbs = new std::vector<Verb>{
      {"record",
       "--session KEY [--agent ID] --kind KIND --actor-type human|agent|system [--actor-id ID]\n"
       "      [--run-id ID] [--session-id ID] [--summary TEXT] [--payload JSON] [--dedupe KEY]\n"
       "      [--occurred-at MS] [--watcher KEY]...   |   record --batch FILE|-",
       Access::kWrite, RecordOptions(), RunRecord},
      {"status",
       "--session KEY [--agent ID] [--changes-since N] [--limit N]",
       Access::kReadOnly,
       {{"session", true}, {"agent"}, {"changes-since"}, {"limit"}},
       RunStatus},
      {"versions",
       "--session KEY [--session KEY]... [--agent ID]",
       Access::kReadOnly,
       {{"session", true, true}, {"agent"}},
       RunVersions},
      {"delete-session",
       "--session KEY [--agent ID]",
       Access::kWrite,
       {{"session", true}, {"agent"}},
       RunDeleteSession},
      {"watch",
       "--watcher W --target T [--target-agent ID]",
       Access::kWrite,
       {{"watcher", true}, {"target", true}, {"target-agent"}},
       RunWatch},
      {"notices", "--watcher W", Access::kReadOnly, {{"watcher", true}}, RunNotices},
      {"drain", "--watcher W", Access::kWrite, {{"watcher", true}}, RunDrain},
      {"cursor",
       "--watcher W --target T [--target-agent ID]",
       Access::kReadOnly,
       {{"watcher", true}, {"target", true}, {"target-agent"}},
       RunCursor},
      {"reset-watcher", "--watcher W", Access::kWrite, {{"watcher", true}}, RunResetWatcher},
      {"sweep", "", Access::kWrite, {}, RunSweep},
      {"prune", "", Access::kWriteNoPrune, {}, RunPrune},
      {"stats", "", Access::kReadOnly, {}, RunStats},
      {"verify", "", Access::kReadOnly, {}, RunVerify},
      {"rebuild", "", Access::kWrite, {}, RunRebuild},
      {"upstream list", "", Access::kReadOnly, {}, RunUpstreamList},
      {"upstream add",
       "--session KEY [--agent ID] --catalog ID --host ID --thread ID --path FILE\n"
       "      [--kind jsonl] [--marker BYTES]",
       Access::kWrite,
       {{"session", true},
        {"agent"},
        {"catalog", true},
        {"host", true},
        {"thread", true},
        {"path", true},
        {"kind"},
        {"marker"}},
       RunUpstreamAdd},
      {"upstream remove",
       "--session KEY [--agent ID]",
       Access::kWrite,
       {{"session", true}, {"agent"}},
       RunUpstreamRemove},
      {"serve",
       "[--listen HOST:PORT] [--threads N] [--token T] [--manual-clock [MS]]\n"
       "      [--visibility self|tree|agent|all] [--agent-to-agent] [--agent-to-agent-allow "
       "ID]...\n"
       "      [--body-limit BYTES] [--read-timeout-ms MS] [--idle-timeout-ms MS]\n"
       "      [--port-file FILE] [--log-level LEVEL] [--shutdown-grace-ms MS] [--wake-window-ms "
       "MS]\n"
       "      [--max-ping-pong-turns 0..20] [--upstream-first-tick-ms MS] "
       "[--upstream-interval-ms MS]",
       Access::kWrite, ServeOptions(), RunServe},
  };
  return *verbs;
}

void PrintUsage(std::ostream& out) {
  out << "usage: statewatch [--data DIR] [--now MS] [--durability sync|buffered] <verb> "
         "[options]\n\nverbs:\n";
  for (const Verb& verb : Verbs()) out << "  " << verb.name << " " << verb.synopsis << "\n";
  out << "\nJSON on stdout. Exit 0 ok, 1 runtime error, 2 usage error.\n";
}

int Dispatch(const Args& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.help() || args.verb() == "help") {
    PrintUsage(out);
    return kExitOk;
  }
  if (args.verb().empty()) return PrintUsageError(err, "no verb given");
  const auto& verbs = Verbs();
  auto verb = std::find_if(verbs.begin(), verbs.end(),
                           [&](const Verb& v) { return v.name == args.verb(); });
  if (verb == verbs.end()) return PrintUsageError(err, "unknown verb '" + args.verb() + "'");
  std::vector<OptionSpec> options = verb->options;
  options.insert(options.end(), {{"data"}, {"now"}, {"durability"}});
  if (Status s = args.Check(options); !s.ok()) return PrintUsageError(err, s.message());
  auto global = ReadGlobalOptions(args);
  if (!global.ok()) return PrintUsageError(err, global.status().message());
  Command command(args, *global, verb->access, in, out, err);
  return verb->run(command);
}

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::istream& in, std::ostream& out,
           std::ostream& err) {
  // The edge of the process: nothing below throws by design, but an allocation failure or
  // a stream error must still end as a message and exit 1, not std::terminate.
  try {
    auto args = Args::Parse(ExpandServeFlags(argv));
    if (!args.ok()) return PrintUsageError(err, args.status().message());
    return Dispatch(*args, in, out, err);
  } catch (const std::exception& e) {
    err << "statewatch: internal error: " << e.what() << "\n";
    return kExitRuntimeError;
  }
}

int RunCli(int argc, char** argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args(argv + std::min(argc, 1), argv + std::max(argc, 0));
  return RunCli(args, std::cin, out, err);
}

void InstallServeVerb(ServeVerbFn fn) { g_serve_verb = fn; }

}  // namespace statewatch::cli

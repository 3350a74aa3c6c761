#include "cli/cli.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/args.h"
#include "cli/build_info.h"
#include "cli/command.h"
#include "cli/serve_command.h"
#include "cli/verb_table.h"
#include "statewatch/version.h"

namespace statewatch::cli {
namespace {

// Flags of the other verbs: `watch --drain`, and `--create` on the writing verbs.
constexpr std::string_view kVerbFlags[] = {"drain", "create"};

// `serve` takes flags, and so do a few verbs, but every option of the grammar (cli/args.h)
// has a value: a bare flag becomes `--flag=true` unless a value follows it.
bool IsFlagValue(const std::string& token) {
  static const char* kWords[] = {"true", "false", "on", "off", "yes", "no"};
  for (const char* w : kWords) {
    if (token == w) return true;
  }
  return !token.empty() && token.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<std::string> ExpandFlags(const std::vector<std::string>& argv) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    auto named = [&](std::string_view f) { return argv[i] == "--" + std::string(f); };
    bool flag = std::any_of(std::begin(kServeFlags), std::end(kServeFlags), named) ||
                std::any_of(std::begin(kVerbFlags), std::end(kVerbFlags), named);
    if (flag && (i + 1 >= argv.size() || !IsFlagValue(argv[i + 1]))) {
      out.push_back(argv[i] + "=true");
    } else {
      out.push_back(argv[i]);
    }
  }
  return out;
}

// Whether any verb, or the command line as a whole, takes option --`name`.
bool IsKnownOption(std::string_view name) {
  auto named = [&](const OptionHelp& o) { return o.name == name; };
  const auto& global = GlobalOptionHelp();
  if (std::any_of(global.begin(), global.end(), named)) return true;
  return std::any_of(Verbs().begin(), Verbs().end(), [&](const Verb& v) {
    return std::any_of(v.options.begin(), v.options.end(), named);
  });
}

// `help`, `help <verb>`, `help <group>`.
int RunHelp(std::string_view topic, std::ostream& out, std::ostream& err) {
  if (topic.empty()) {
    PrintUsage(out);
    return kExitOk;
  }
  if (const Verb* verb = FindVerb(topic)) {
    PrintVerbHelp(*verb, out);
    return kExitOk;
  }
  if (PrintGroupHelp(topic, out)) return kExitOk;
  return PrintUsageError(err, "no verb '" + std::string(topic) + "' to explain");
}

int Dispatch(const Args& args, std::istream& in, std::ostream& out, std::ostream& err) {
  if (args.version()) {
    out << "statewatch " << kVersion << " (commit " << kGitCommit << ")\n";
    return kExitOk;
  }
  const std::string& name = args.verb();
  if (name == "help" || name.rfind("help ", 0) == 0) {
    return RunHelp(name.size() > 4 ? std::string_view(name).substr(5) : "", out, err);
  }
  if (name.empty()) {
    if (args.help()) return RunHelp("", out, err);
    return PrintUsageError(err, "no verb given");
  }
  const Verb* verb = FindVerb(name);
  if (verb == nullptr) {
    if (PrintGroupHelp(name, args.help() ? out : err)) return args.help() ? kExitOk : kExitUsageError;
    return PrintUsageError(err, "unknown verb '" + name + "'");
  }
  if (args.help()) {
    PrintVerbHelp(*verb, out);
    return kExitOk;
  }
  if (Status s = args.Check(OptionSpecs(*verb)); !s.ok()) return PrintUsageError(err, s.message());
  auto global = ReadGlobalOptions(args);
  if (!global.ok()) return PrintUsageError(err, global.status().message());
  bool remote = !global->server.empty();
  Command command(args, *global, verb->access, in, out, err);
  if (!remote) return verb->run(command);
  if (verb->remote == nullptr) {
    return PrintUsageError(err, "'" + name + "' runs on the local database only; it does not "
                                "take --server (or STATEWATCH_SERVER)");
  }
  return verb->remote(command);
}

}  // namespace

int RunCli(const std::vector<std::string>& argv, std::istream& in, std::ostream& out,
           std::ostream& err) {
  // The edge of the process: nothing below throws by design, but an allocation failure or
  // a stream error must still end as a message and exit 1, not std::terminate.
  try {
    auto args = Args::Parse(ExpandFlags(argv), IsKnownOption);
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

}  // namespace statewatch::cli

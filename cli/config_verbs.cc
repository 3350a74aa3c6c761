// `statewatch config check FILE`: reads the daemon's configuration file the way
// `statewatch serve --config FILE` does (config/config_file.h) and prints the effective
// configuration, or the first refusal with its key's path (exit 1). Touches no database.
#include "cli/verbs.h"
#include "config/config_file.h"

namespace statewatch::cli {

int RunConfigCheck(Command& c) {
  const std::string& path = c.args.operand();
  if (path.empty())
    return UsageError(c, "'config check' needs the configuration file: config check FILE");
  tools::DaemonConfig config;  // the daemon's defaults
  if (Status s = tools::ApplyConfigFile(path, &config); !s.ok()) return RuntimeError(c, s);
  boost::json::object out;
  out["ok"] = true;
  out["file"] = path;
  out["effective"] = tools::DaemonConfigToJson(config);
  return PrintJson(c, out);
}

}  // namespace statewatch::cli

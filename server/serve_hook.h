// How `statewatch serve` reaches the daemon without cli/ depending on Beast.
//
// cli/cli.cc owns the verb table and holds a pointer to the serve verb; the executable's
// server registration object (server/serve_registration.cc, compiled into statewatch_bin
// only) installs it before main() runs. A binary without the server library (the CLI tests)
// keeps answering `serve` with a usage error.
//
// Thread-safe: installed during static initialisation, read afterwards.
#ifndef STATEWATCH_SERVER_SERVE_HOOK_H_
#define STATEWATCH_SERVER_SERVE_HOOK_H_

#include <string_view>

namespace statewatch::cli {

class Command;

// Runs `statewatch serve`; returns the process exit code (0 after a graceful shutdown,
// 1 on a runtime error, 2 on a usage error).
using ServeVerbFn = int (*)(Command& command);

// Defined in cli/cli.cc.
void InstallServeVerb(ServeVerbFn fn);

// The options of `serve` (besides the global --data, --now and --durability). The flags
// --manual-clock and --agent-to-agent may be written without a value (cli.cc rewrites a
// bare flag to `--flag=true`).
inline constexpr std::string_view kServeOptions[] = {"listen",
                                                     "threads",
                                                     "token",
                                                     "manual-clock",
                                                     "visibility",
                                                     "agent-to-agent",
                                                     "agent-to-agent-allow",
                                                     "body-limit",
                                                     "read-timeout-ms",
                                                     "idle-timeout-ms",
                                                     "port-file",
                                                     "log-level",
                                                     "shutdown-grace-ms",
                                                     "wake-window-ms",
                                                     "max-ping-pong-turns",
                                                     "upstream-first-tick-ms",
                                                     "upstream-interval-ms"};
inline constexpr std::string_view kServeFlags[] = {"manual-clock", "agent-to-agent"};

}  // namespace statewatch::cli

#endif  // STATEWATCH_SERVER_SERVE_HOOK_H_

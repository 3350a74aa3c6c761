// `statewatch serve`: the daemon (server/daemon.h) behind the command line.
//
// Options: --listen HOST:PORT (default 127.0.0.1:7411), --threads N, --token T (required for
// a non-loopback address), --manual-clock [true|START_MS] (loopback only),
// --visibility self|tree|agent|all, --agent-to-agent [true|false],
// --agent-to-agent-allow ID[,ID...] (repeatable), --body-limit BYTES, --read-timeout-ms,
// --idle-timeout-ms, --shutdown-grace-ms, --wake-window-ms, --port-file FILE,
// --log-level LEVEL, --max-ping-pong-turns 0..20 (default 5), --upstream-first-tick-ms (15 s),
// --upstream-interval-ms (60 s), --upstream-root DIR (repeatable; no root: no upstream link),
// --allow-origin ORIGIN and --allow-host HOST[:PORT] or *.SUFFIX[:PORT] (repeatable or
// comma-separated), --max-connections N (default: sized to the file limit), --max-streams N
// (256), --max-rows N (50,000), --retention-ms MS (30 days), --prune-interval-ms MS (1 hour),
// --config FILE (the JSON configuration file of config/config_file.h; every flag
// given beside it overrides it); plus the global --data, --durability and --token-file (the
// token, kept out of ps).
//
// Prints {"listening": "HOST:PORT", "port": N} on stdout once it listens; logs on stderr.
// Exit 0 after a graceful shutdown (SIGINT/SIGTERM), 1 when it cannot start, 2 on a usage
// error (a configuration file that does not read is one, named with the key's path).
// SIGHUP reads the file and the flags again and applies the new tool policy and access tokens
// without dropping a connection (server/config_reload.h).
//
// Not thread-safe: runs once per process.
#ifndef STATEWATCH_CLI_SERVE_COMMAND_H_
#define STATEWATCH_CLI_SERVE_COMMAND_H_

#include <string_view>
#include <vector>

#include "cli/command.h"
#include "cli/verb_table.h"

namespace statewatch::cli {

// The options of `serve` with their defaults and meaning (besides the global --data and
// --durability), for the verb table and `help serve`. The flags --manual-clock and
// --agent-to-agent may be written without a value (cli.cc rewrites a bare flag to
// `--flag=true`).
std::vector<OptionHelp> ServeOptionHelp();
// (Also `cluster follow --once`, the one flag of another verb.)
inline constexpr std::string_view kServeFlags[] = {"manual-clock", "agent-to-agent", "once"};

int RunServeCommand(Command& command);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_SERVE_COMMAND_H_

// `statewatch serve` (cli/cli.cc dispatches to it through server/serve_hook.h).
//
// Options: --listen HOST:PORT (default 127.0.0.1:7411), --threads N, --token T (required for
// a non-loopback address), --manual-clock [true|START_MS] (loopback only; --now MS implies
// it), --visibility self|tree|agent|all, --agent-to-agent [true|false],
// --agent-to-agent-allow ID[,ID...] (repeatable), --body-limit BYTES, --read-timeout-ms,
// --idle-timeout-ms, --shutdown-grace-ms, --wake-window-ms, --port-file FILE,
// --log-level LEVEL, --max-ping-pong-turns 0..20 (default 5), --upstream-first-tick-ms (15 s),
// --upstream-interval-ms (60 s); plus the
// global --data and --durability.
//
// Prints {"listening": "HOST:PORT", "port": N} on stdout once it listens; logs on stderr.
// Exit 0 after a graceful shutdown (SIGINT/SIGTERM), 1 when it cannot start, 2 on a usage
// error.
//
// Not thread-safe: runs once per process.
#ifndef STATEWATCH_SERVER_SERVE_COMMAND_H_
#define STATEWATCH_SERVER_SERVE_COMMAND_H_

#include "server/serve_hook.h"

namespace statewatch::server {

int RunServeCommand(cli::Command& command);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_SERVE_COMMAND_H_

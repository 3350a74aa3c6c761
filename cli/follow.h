// The verbs that follow a running daemon from a terminal, as `etcdctl watch` or `nats sub`
// do, printing one JSON document a line until SIGINT/SIGTERM (or --count):
//
//   statewatch --server URL watch [--watcher KEY] [--drain] [--count N]
//     Each wake of the daemon's WebSocket feed GET /v1/wakes (?watcher=KEY) as the daemon
//     sends it: {"watcher", "reason", "at"}. With --drain (needs --watcher), after each wake
//     the watcher's notices are drained (POST /v1/notices/drain) and each is printed as
//     {"targetSessionKey", "contextKey", "text"}, exactly as `statewatch drain` lists it.
//     `watch` WITH --target keeps registering a watch (cli/watch_verbs.cc); without it, it
//     follows.
//
//   statewatch --server URL tail --session KEY [--session KEY]... [--changes-since N]
//     Each event recorded in those sessions after the start (or after N), as
//     {"sessionKey", "agentId", <the change event of session_status>}. The daemon has no
//     event feed, so this polls GET /v1/sessions/{key}/state?changesSince= every
//     --interval-ms per session; a page that was truncated is followed at once.
//
// https:// --server URLs: both speak TLS, with --ca-file (or $STATEWATCH_CA_FILE) and the
// client certificate options: tail's requests through net/http_client.h, the wake feed as
// wss:// through net/websocket.h (the same net/connection.h underneath, so the same
// verification and messages).
//
// Connections: the first one must succeed (exit 1 naming the URL otherwise: a misspelled
// URL should not retry silently). After that a lost daemon is retried with a back-off of
// 100 ms doubling to 5 s, moving round the --server URLs, with one line on stderr per
// attempt. Wakes fired while disconnected are not replayed by the daemon, only notices are
// kept: so `watch --drain` drains once on every (re)connection, the first included. An
// answer that is not a connection problem (401 for a missing token, 400 for a bad key) ends
// the verb with exit 1.
//
// Not thread-safe: one command, one thread. Installs SIGINT/SIGTERM handlers while it runs
// and puts the previous ones back when it returns.
#ifndef STATEWATCH_CLI_FOLLOW_H_
#define STATEWATCH_CLI_FOLLOW_H_

#include "cli/command.h"

namespace statewatch::cli {

// `watch`: with --target, registers (RunWatch / RemoteWatch); without, follows the wakes
// (FollowWakes; locally a usage error naming --server). CheckWatchForm refuses the options
// of one form given to the other.
int RunWatchOrFollow(Command& c);
int RemoteWatchOrFollow(Command& c);
Status CheckWatchForm(const Command& c);
int FollowWakes(Command& c);

int RunTail(Command& c);      // `tail` (local: a usage error naming --server)
int RemoteTail(Command& c);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_FOLLOW_H_

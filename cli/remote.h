// `statewatch --server URL <verb>`: the verbs run against a running daemon over its HTTP API
// (docs/http-api.md) and print the same JSON as on a local database, so scripts do not
// care which one they talk to. The daemon holds the database's lock; a local verb beside it
// would fail with Busy.
//
// URL is http://HOST[:PORT] (port 80 by default; https is not spoken: put a TLS proxy on
// loopback beside the daemon). The bearer token comes from --token-file or
// STATEWATCH_TOKEN_FILE. Bodies are sent as application/json.
//
// Several URLs (--server URL,URL,…: a cluster's nodes, or a daemon and its standby): a
// request that did not land — the daemon could not be reached, or answered 503 standby /
// switching / partition_moved / unavailable / shutting_down — goes to the next URL, twice
// round the list. Every POST, PUT and DELETE carries an X-Request-Id generated for it and
// kept on every attempt, so one whose answer was lost (the connection broke after sending,
// or 502 answer_lost) is repeated as well: the daemon applies it at most once and answers a
// repeat with the first answer (docs/request-ids.md).
//
// Errors: the daemon's {"error": {"code", "message"}} becomes "statewatch: <message>" on
// stderr and exit 1 (the same text a local run prints for the same bad input); a daemon
// that cannot be reached is exit 1 with the URL and the reason.
//
// Not thread-safe: one command, one thread.
#ifndef STATEWATCH_CLI_REMOTE_H_
#define STATEWATCH_CLI_REMOTE_H_

#include <string>
#include <string_view>

#include "cli/command.h"
#include "net/http_client.h"

namespace statewatch::cli {

// The plain-socket client lives in net/ (the control plane speaks to etcd with it too).
using net::HttpAnswer;
using net::HttpRequest;

// The message of a daemon's error answer ({"error": {"message"}}), or "HTTP <status>:
// <body>" when the body is not that envelope.
std::string ErrorMessage(const HttpAnswer& a);

// The remote form of each verb (see verb_table.cc).
int RemoteRecord(Command& c);
int RemoteStatus(Command& c);
int RemoteVersions(Command& c);
int RemoteDeleteSession(Command& c);
int RemoteWatch(Command& c);
int RemoteUnwatch(Command& c);
int RemoteNotices(Command& c);
int RemoteDrain(Command& c);
int RemoteCursor(Command& c);
int RemoteResetWatcher(Command& c);
int RemoteSweep(Command& c);
int RemotePrune(Command& c);
int RemoteStats(Command& c);
int RemoteVerify(Command& c);
int RemoteRebuild(Command& c);
int RemoteBackup(Command& c);
int RemoteExport(Command& c);
int RemoteUpstreamList(Command& c);
int RemoteUpstreamAdd(Command& c);
int RemoteUpstreamRemove(Command& c);

}  // namespace statewatch::cli

#endif  // STATEWATCH_CLI_REMOTE_H_

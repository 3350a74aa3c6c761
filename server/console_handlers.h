// The operator console (docs/console.md): its files, compiled into the binary
// (server/console_assets.h), and the read-only routes it reads besides the API's own
// (GET /v1/sessions/{key}/state for the timeline, GET /healthz, GET /metrics, GET
// /v1/cluster/status, GET /v1/sessions/{key}/status?asOf= for the time slider):
//
//   GET /console, GET /console/{file}   public: the page and its script, style and icon, with
//                                       a strict Content-Security-Policy (no inline script,
//                                       script-src 'self') and X-Content-Type-Options: nosniff
//   GET /v1/console/pulse               {"lastSequence", "wakesSent", "noticesOpened",
//                                       "pendingNotices", "cluster", "writeError"?}: what the
//                                       page polls to notice any change (one cheap read)
//   GET /v1/console/sessions[?limit=N]  {"sessions": [...], "truncated"}: every registered
//                                       session with its parent, state version, last event,
//                                       run state and visibility
//   GET /v1/console/sessions/{key}/links  the session's watchers and targets with their
//                                       cursors (L/N/M), lag, pending notice text, last wake
//
// Thread-safe: handlers read the engine only.
#ifndef STATEWATCH_SERVER_CONSOLE_HANDLERS_H_
#define STATEWATCH_SERVER_CONSOLE_HANDLERS_H_

#include <string>
#include <string_view>

#include "server/handlers.h"

namespace statewatch::server {

// GET /console ("index.html") and GET /console/{file}: 404 for a file the console has not.
ApiResponse HandleConsoleFile(std::string_view file);
// GET /v1/console/access (public): {"tokenRequired": bool}, so that the page connects at
// once to a daemon without a token instead of asking for one. It says no more than a 401
// would.
ApiResponse HandleConsoleAccess(const HandlerContext& ctx);
ApiResponse HandleConsolePulse(const HandlerContext& ctx);
ApiResponse HandleConsoleSessions(const HandlerContext& ctx, std::string_view query);
ApiResponse HandleConsoleLinks(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_CONSOLE_HANDLERS_H_

// Api: the daemon's HTTP surface as plain functions of a request — routing, authentication,
// JSON bodies, engine calls, errors — with no Beast in sight, so that it compiles fast and is
// unit-tested without sockets. server/http_server.cc feeds it parsed requests and writes its
// responses; the WebSocket stream of GET /v1/wakes is the only thing it leaves to the
// transport (AcceptWakes decides whether to upgrade).
//
// Routes (JSON bodies, camelCase fields as in semantics.md):
//   POST /v1/tools/session_status | /v1/tools/sessions_list   caller in X-Session-Key
//                                                             (+ X-Agent-Id for a bare key)
//   POST /v1/events                      one event or an array -> {"events": [...]}
//   PUT /v1/sessions/{key}               registry upsert -> {"session": {...}}
//   DELETE /v1/sessions/{key}            -> {"deleted": true}
//   POST /v1/sessions/{key}/reset        removes the cursors it holds -> {"reset": true}
//   POST /v1/sessions/{key}/messages     appends transcript messages -> {"appended": n}
//   POST /v1/watches                     {"watcher","target","targetAgentId"?} -> {"watched"}
//   GET /v1/notices?watcher=W            peek -> {"notices": [...]}
//   POST /v1/notices/drain               {"watcher"} -> {"notices": [...]}
//   GET /v1/wakes[?watcher=W]            WebSocket upgrade (426 without one)
//   POST /v1/prune, GET /v1/verify, GET /healthz, GET /metrics
//   GET /v1/clock, POST /v1/clock {"now": MS}   (POST only with the manual clock)
// {key} is percent-decoded; the agent of a bare key comes from ?agentId=, X-Agent-Id, the
// body's agentId (PUT), else "main".
//
// Errors: {"error": {"code", "message"}} with 400 (bad input), 401 (token), 403
// (visibility), 404 (no route, unknown tool, unknown session), 405 (method; with Allow),
// 413 (body too large: the transport), 426 (wakes without upgrade), 500/503 (engine).
//
// Thread-safe: handlers run concurrently on the server's I/O threads.
#ifndef STATEWATCH_SERVER_API_H_
#define STATEWATCH_SERVER_API_H_

#include <functional>
#include <string>
#include <string_view>
#include <variant>

#include "server/metrics.h"
#include "server/server_options.h"
#include "statewatch/clock.h"
#include "statewatch/engine.h"

namespace statewatch::server {

struct ApiRequest {
  std::string_view method;  // "GET", "POST", ...
  std::string_view target;  // path and query, as received
  std::string_view body;
  std::string_view session_key;    // X-Session-Key
  std::string_view agent_id;       // X-Agent-Id
  std::string_view authorization;  // Authorization
};

struct ApiResponse {
  int status = 200;
  std::string body;
  const char* content_type = "application/json";
  const char* allow = nullptr;    // the Allow header of a 405
  bool www_authenticate = false;  // a 401 carries `WWW-Authenticate: Bearer`
};

class Api {
 public:
  // `manual_clock` is the engine's clock when the server runs with --manual-clock (else
  // null). None is owned; all must outlive the Api.
  Api(Engine* engine, const ServerOptions& options, ManualClock* manual_clock, Metrics* metrics);

  // Answers one request (everything but the WebSocket stream). Records its metrics.
  ApiResponse Handle(const ApiRequest& request);

  // For a WebSocket upgrade request: the watcher filter of GET /v1/wakes ("" = every
  // watcher), or the error response to send instead (auth, wrong path, bad watcher).
  std::variant<std::string, ApiResponse> AcceptWakes(const ApiRequest& request);

  // The error body {"error": {"code", "message"}}; for the transport's own errors too.
  static ApiResponse Error(int status, std::string_view code, std::string_view message);

  // One wake as the WebSocket text message {"watcher", "reason", "at"}.
  static std::string WakeMessage(const Wake& wake);

  // Called after a request that may have opened notices (records, drains): the server
  // re-arms its wake timer there. Set before serving.
  std::function<void()> after_write;

 private:
  ApiResponse Dispatch(const ApiRequest& request, Route* route);
  bool Authorized(const ApiRequest& request) const;
  static ApiResponse Unauthorized();

  Engine* engine_;
  const ServerOptions& options_;
  ManualClock* manual_clock_;
  Metrics* metrics_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_API_H_

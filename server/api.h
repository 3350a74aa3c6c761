// Api: the daemon's HTTP surface as plain functions of a request — routing, authentication,
// JSON bodies, engine calls, errors — with no Beast in sight, so that it compiles fast and is
// unit-tested without sockets. server/http_server.cc feeds it parsed requests and writes its
// responses; the WebSocket stream of GET /v1/wakes is the only thing it leaves to the
// transport (AcceptWakes decides whether to upgrade).
//
// Routes (JSON bodies, camelCase fields as in semantics.md):
//   POST /v1/tools/<tool>                the seven session tools, caller in X-Session-Key
//                                        (+ X-Agent-Id for a bare key), all through
//                                        SessionMessaging::CallTool (the caller's tool policy
//                                        first); a waiting sessions_send is *parked* (see
//                                        ApiResponse)
//   GET /v1/deliveries[?agentId=A]       WebSocket feed of deliveries (426 without upgrade)
//   POST /v1/deliveries/{id}/ack         -> {"acked": true} (404 when unknown)
//   POST /v1/runs/{runId}/reply {"text"}             -> RunUpdate::ToJson
//   POST /v1/runs/{runId}/finish {"status","result"?} -> RunUpdate::ToJson
//   GET /v1/upstream-links               -> {"links": [...]}
//   POST /v1/upstream-links              create or refresh -> {"link": {...}}
//   DELETE /v1/upstream-links/{key}      -> {"deleted": true} (404 when none)
//   POST /v1/events                      one event or an array -> {"events": [...]}
//   PUT /v1/sessions/{key}               registry upsert (null clears a field) ->
//                                        {"session": {...}}
//   DELETE /v1/sessions/{key}            -> {"deleted": true}
//   POST /v1/sessions/{key}/reset        removes the cursors it holds -> {"reset": true}
//   POST /v1/sessions/{key}/messages     appends transcript messages -> {"appended": n}
//   POST /v1/watches                     {"watcher","target","targetAgentId"?} -> {"watched"}
//   GET /v1/notices?watcher=W            peek -> {"notices": [...]}
//   POST /v1/notices/drain               {"watcher"} -> {"notices": [...]}
//   GET /v1/wakes[?watcher=W]            WebSocket upgrade (426 without one)
//   POST /v1/prune, GET /v1/verify, GET /healthz, GET /readyz, GET /metrics
//   GET /v1/clock, POST /v1/clock {"now": MS}   (POST only with the manual clock; it also
//                                        times out due sends and runs a due upstream tick)
//   POST, GET, DELETE /mcp               the MCP endpoint (server/mcp_server.h): JSON-RPC;
//                                        its tool calls come back here as POST /v1/tools/*;
//                                        GET answers a text/event-stream (ApiResponse::events)
//   GET /v1/cluster/status, GET /v1/cluster/digest, POST /v1/cluster/takeover
//                                        cluster mode only (a RequestGate answers them;
//                                        server/cluster_routes.h); a single node: 404
// {key} is percent-decoded; the agent of a bare key comes from ?agentId=, X-Agent-Id, the
// body's agentId (PUT), else "main".
//
// Every route needs the scope its row of the route table names (server/access_control.h):
// 401 without a known token, 403 insufficient_scope when the token lacks the scope. HEAD
// is answered on every GET route, as GET (the transport sends no body).
//
// Errors: {"error": {"code", "message"}} with 400 (bad input), 401 (token), 403
// (scope, visibility), 404 (no route, unknown tool, unknown session), 405 (method; with Allow),
// 413 (body too large: the transport), 426 (wakes without upgrade), 500/503 (engine), 507
// (the disk is full). The transport answers 400/403/415/421 before routing
// (server/request_guard.h) and 503 beyond its connection and stream caps.
//
// Thread-safe: handlers run concurrently on the server's I/O threads.
#ifndef STATEWATCH_SERVER_API_H_
#define STATEWATCH_SERVER_API_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "config/access_tokens.h"
#include "monitor/upstream_monitor.h"
#include "server/delivery_hub.h"
#include "server/metrics.h"
#include "server/monitor_driver.h"
#include "server/prune_scheduler.h"
#include "server/server_options.h"
#include "statewatch/clock.h"
#include "statewatch/engine.h"
#include "tools/session_messaging.h"
#include "webhooks/dispatcher.h"

namespace spdlog {
class logger;
}

namespace statewatch::server {

struct ApiResponse;
struct HandlerContext;
struct RouteLookup;
struct RouteSpec;
struct Refusal;
class AccessControl;
class RequestGate;
class RequestLedger;
class EventStream;
class McpServer;
class WakeLog;

struct ApiRequest {
  std::string_view method = {};  // "GET", "POST", ...
  std::string_view target = {};  // path and query, as received
  std::string_view body = {};
  std::string_view session_key = {};    // X-Session-Key
  std::string_view agent_id = {};       // X-Agent-Id
  std::string_view authorization = {};  // Authorization
  // Any header by name (case-insensitive), "" when absent; valid during Handle() only. May
  // be empty (no other header then): the MCP endpoint reads Mcp-Session-Id, Accept, ...
  std::function<std::string_view(std::string_view)> header = {};
  // Where a parked answer goes (see ApiResponse::parked). Called at most once, from any
  // thread, possibly before Handle() has returned. May be empty: nothing is parked then.
  std::function<void(ApiResponse)> respond = {};
};

struct ApiResponse {
  int status = 200;
  std::string body;
  std::string error_code;  // an error answer's error.code (Api::Error); empty otherwise
  const char* content_type = "application/json";
  const char* allow = nullptr;    // the Allow header of a 405
  bool www_authenticate = false;  // a 401 carries `WWW-Authenticate: Bearer`
  // The answer comes later through ApiRequest::respond (a sessions_send waiting for its
  // reply or timeout). The transport calls Api::Abandon(run_id) if its client goes away.
  bool parked = false;
  std::string run_id;
  // Headers beyond Content-Type, Allow and WWW-Authenticate (Mcp-Session-Id).
  std::vector<std::pair<std::string, std::string>> headers;
  // A text/event-stream answer (server/event_stream.h): the transport writes the header,
  // attaches the stream and keeps the connection open until either side ends it.
  std::shared_ptr<EventStream> events;
};

// What a WebSocket upgrade streams.
struct StreamTarget {
  enum class Kind { kWakes, kDeliveries };
  Kind kind = Kind::kWakes;
  std::string filter;  // the watcher (wakes) or agent id (deliveries); "" = all
};

// The daemon's services behind the routes. None is owned.
struct ApiServices {
  Engine* engine = nullptr;
  ManualClock* manual_clock = nullptr;  // null unless --manual-clock
  Metrics* metrics = nullptr;
  tools::SessionMessaging* messaging = nullptr;
  DeliveryHub* deliveries = nullptr;
  monitor::UpstreamMonitor* monitor = nullptr;
  MonitorDriver* monitor_driver = nullptr;
  PruneScheduler* prune_scheduler = nullptr;  // POST /v1/clock runs a due prune
  // Cluster mode: sees every authenticated request first (server/cluster_routes.h).
  RequestGate* gate = nullptr;
  // The MCP endpoint behind /mcp (server/mcp_server.h); null: /mcp answers 404.
  McpServer* mcp = nullptr;
  // The notice webhooks (webhooks/dispatcher.h); null: the /v1/webhooks routes answer 503.
  webhooks::Dispatcher* webhooks = nullptr;
  // The last wake of each watcher, for the console (server/wake_log.h); null: none shown.
  WakeLog* wake_log = nullptr;
};

// The cluster-only rows of the route table (server/route_table.h), by what they answer.
enum class ClusterRoute { kStatus, kDigest, kTakeover };

// A hook that sees every authenticated request before its route, and answers the route
// table's cluster-only rows (cluster mode's gate, server/cluster_routes.h, is the one there
// is). Installing one is what makes the router match those rows. Thread-safe: called on any
// I/O thread.
class RequestGate {
 public:
  virtual ~RequestGate() = default;
  // The answer in place of the route's, or nullopt to let the route answer. `found` is the
  // route lookup of `path` (no route: 404/405 follow unless the gate answers).
  virtual std::optional<ApiResponse> Intercept(const HandlerContext& ctx,
                                               const ApiRequest& request,
                                               std::string_view path,
                                               const RouteLookup& found) = 0;
  // The handler of the cluster-only row `route`, once Intercept has let the request through.
  virtual ApiResponse AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                         const ApiRequest& request) = 0;
};

class Api {
 public:
  // `services.manual_clock` is the engine's clock when the server runs with --manual-clock
  // (else null). None is owned; all must outlive the Api.
  Api(const ApiServices& services, const ServerOptions& options);

  // Answers one request (everything but the WebSocket stream). Records its metrics.
  ApiResponse Handle(const ApiRequest& request);

  // For a WebSocket upgrade request: what to stream (GET /v1/wakes?watcher=,
  // GET /v1/deliveries?agentId=), or the error response to send instead (auth, wrong path,
  // bad filter).
  std::variant<StreamTarget, ApiResponse> AcceptStream(const ApiRequest& request);

  // ---- the delivery feed (for the transport) ---------------------------------------------
  // Live deliveries for `agent_id` ("" = all) as (id, DeliveryToJson text).
  uint64_t SubscribeDeliveries(const std::string& agent_id,
                               std::function<void(uint64_t, std::string)> callback);
  void UnsubscribeDeliveries(uint64_t id);
  // The unacknowledged deliveries, oldest first, in the same form.
  Result<std::vector<std::pair<uint64_t, std::string>>> PendingDeliveries(
      const std::string& agent_id);

  // ---- pending sessions_send calls (for the transport's timer) ----------------------------
  // The parked call's client went away: its answer is dropped, the run goes on.
  void Abandon(const std::string& run_id);
  // The earliest deadline of a waiting send (engine clock), and the expiry of the due ones.
  std::optional<int64_t> NextRunDeadlineMs() const;
  void ExpireDueRuns();

  // The error body {"error": {"code", "message"}}; for the transport's own errors too.
  static ApiResponse Error(int status, std::string_view code, std::string_view message);

  // One wake as the WebSocket text message {"watcher", "reason", "at"}.
  static std::string WakeMessage(const Wake& wake);

  // Called after a request that may have opened notices (records, drains): the server
  // re-arms its wake timer there. Set before serving.
  std::function<void()> after_write;

  // Replaces the accepted tokens with those of `options` (token, tokens, open_metrics;
  // server/access_control.h): every later request is checked against them (SIGHUP).
  void ReloadTokens(const ServerOptions& options);

  ~Api();

 private:
  ApiResponse Dispatch(const ApiRequest& request, std::size_t* route);
  auth::Scope NeededScope(const RouteSpec& spec) const;
  // A call to /v1/internal/… that carries a valid X-Statewatch-Internal signature under the
  // cluster's secret (server/internal_call.h): it needs no token.
  bool IsSignedInternalCall(const ApiRequest& request, std::string_view path) const;
  static ApiResponse Refused(const Refusal& refusal);

  ApiServices services_;
  std::shared_ptr<spdlog::logger> access_log_;  // null without ServerOptions::access_log
  std::unique_ptr<AccessControl> access_;
  Engine* engine_;
  const ServerOptions& options_;
  ManualClock* manual_clock_;
  Metrics* metrics_;
  // X-Request-Id deduplication of the mutating routes (server/request_ledger.h).
  std::unique_ptr<RequestLedger> requests_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_API_H_

// Api: routing, authentication and the error envelope. The handlers are in handlers.cc.
#include "server/api.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <exception>

#include "server/handlers.h"
#include "server/url.h"
#include "statewatch/session_key.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

constexpr std::string_view kToolsPrefix = "/v1/tools/";
constexpr std::string_view kSessionsPrefix = "/v1/sessions/";
constexpr std::string_view kResetSuffix = "/reset";
constexpr std::string_view kMessagesSuffix = "/messages";
constexpr std::string_view kDeliveriesPrefix = "/v1/deliveries/";
constexpr std::string_view kRunsPrefix = "/v1/runs/";
constexpr std::string_view kLinksPath = "/v1/upstream-links";
constexpr std::string_view kLinksPrefix = "/v1/upstream-links/";

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Compares in time independent of where the first difference is, so that the token cannot
// be guessed byte by byte from response times.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

ApiResponse MethodNotAllowed(std::string_view method, std::string_view path, const char* allow) {
  ApiResponse r = Api::Error(405, "method_not_allowed",
                             std::string(method) + " is not allowed on " + std::string(path) +
                                 " (allowed: " + allow + ")");
  r.allow = allow;
  return r;
}

ApiResponse NoRoute(std::string_view method, std::string_view path) {
  return Api::Error(404, "not_found",
                    "no route for " + std::string(method) + " " + std::string(path));
}

bool Is(std::string_view method, const char* m) { return method == m; }

}  // namespace

Api::Api(const ApiServices& services, const ServerOptions& options)
    : services_(services),
      engine_(services.engine),
      options_(options),
      manual_clock_(services.manual_clock),
      metrics_(services.metrics) {}

ApiResponse Api::Error(int status, std::string_view code, std::string_view message) {
  json::object inner;
  inner["code"] = code;
  inner["message"] = message;
  json::object outer;
  outer["error"] = std::move(inner);
  ApiResponse r;
  r.status = status;
  r.body = json::serialize(outer);
  return r;
}

std::string Api::WakeMessage(const Wake& wake) {
  json::object o;
  o["watcher"] = wake.watcher_key;
  o["reason"] = wake.reason;
  o["at"] = wake.at_ms;
  return json::serialize(o);
}

ApiResponse Api::Handle(const ApiRequest& request) {
  auto start = std::chrono::steady_clock::now();
  Route route = Route::kNotFound;
  ApiResponse response;
  try {
    response = Dispatch(request, &route);
  } catch (const std::exception& e) {  // the edge: nothing below should throw
    response = Error(500, "internal", std::string("internal error: ") + e.what());
  }
  auto nanos =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  metrics_->ObserveRequest(route, response.status, nanos);
  if (response.status >= 500) {
    spdlog::warn("event=request_failed method={} route=\"{}\" status={} body={}", request.method,
                 RouteName(route), response.status, response.body);
  } else if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("event=request method={} target=\"{}\" route=\"{}\" status={} us={}",
                  request.method, request.target, RouteName(route), response.status, nanos / 1000);
  }
  return response;
}

namespace {

// POST /v1/tools/<name>.
ApiResponse RouteTool(const HandlerContext& ctx, const ApiRequest& req, std::string_view path,
                      Route* route) {
  static const std::pair<std::string_view, Route> kTools[] = {
      {"session_status", Route::kSessionStatus},
      {"sessions_list", Route::kSessionsList},
      {"sessions_history", Route::kSessionsHistory},
      {"sessions_send", Route::kSessionsSend},
      {"sessions_spawn", Route::kSessionsSpawn},
      {"sessions_yield", Route::kSessionsYield},
      {"subagents", Route::kSubagents},
  };
  std::string_view tool = path.substr(kToolsPrefix.size());
  *route = Route::kUnknownTool;
  for (const auto& [name, r] : kTools) {
    if (tool == name) *route = r;
  }
  if (*route == Route::kUnknownTool) {
    return Api::Error(404, "unknown_tool",
                      "Unknown tool: " + std::string(tool) +
                          " (this server answers session_status, sessions_list, "
                          "sessions_history, sessions_send, sessions_spawn, sessions_yield "
                          "and subagents)");
  }
  if (!Is(req.method, "POST")) return MethodNotAllowed(req.method, path, "POST");
  // session_status and sessions_list keep their direct path: CallTool would add the profile
  // check, which refuses every session tool to a leaf sub-agent — and these two answer
  // visibility refusals a sub-agent must be able to get.
  if (*route == Route::kSessionStatus || *route == Route::kSessionsList) {
    return HandleTool(ctx, tool, req);
  }
  return HandleMessagingTool(ctx, tool, req);
}

// /v1/sessions/{key}[/reset|/messages]; {key} is percent-decoded after the split, so an
// encoded '/' in a key never looks like a sub-route.
ApiResponse RouteSession(const HandlerContext& ctx, const ApiRequest& req, const Target& target,
                         Route* route) {
  std::string_view m = req.method, path = target.path;
  std::string_view rest = path.substr(kSessionsPrefix.size());
  bool reset = EndsWith(rest, kResetSuffix);
  bool messages = EndsWith(rest, kMessagesSuffix);
  if (reset) rest.remove_suffix(kResetSuffix.size());
  if (messages) rest.remove_suffix(kMessagesSuffix.size());
  auto key = PercentDecode(rest, /*plus_is_space=*/false);
  if (!key)
    return Api::Error(400, "invalid_argument", "malformed percent-encoding in the session key");
  if (key->empty() || rest.find('/') != std::string_view::npos) return NoRoute(m, path);
  if (messages || reset) {
    *route = messages ? Route::kSessionMessages : Route::kSessionReset;
    if (!Is(m, "POST")) return MethodNotAllowed(m, path, "POST");
    return messages ? HandleAppendMessages(ctx, req, *key, target.query)
                    : HandleResetSession(ctx, req, *key, target.query);
  }
  *route = Is(m, "PUT") ? Route::kSessionUpsert : Route::kSessionDelete;
  if (Is(m, "PUT")) return HandleUpsertSession(ctx, req, *key, target.query);
  if (Is(m, "DELETE")) return HandleDeleteSession(ctx, req, *key, target.query);
  return MethodNotAllowed(m, path, "PUT, DELETE");
}

// /v1/deliveries/{id}/ack and /v1/runs/{runId}/reply|finish.
ApiResponse RouteGateway(const HandlerContext& ctx, const ApiRequest& req, std::string_view path,
                         Route* route) {
  std::string_view m = req.method;
  bool delivery = StartsWith(path, kDeliveriesPrefix);
  std::string_view rest = path.substr(delivery ? kDeliveriesPrefix.size() : kRunsPrefix.size());
  std::size_t slash = rest.rfind('/');
  if (slash == std::string_view::npos || slash == 0) return NoRoute(m, path);
  std::string_view action = rest.substr(slash + 1);
  auto id = PercentDecode(rest.substr(0, slash), /*plus_is_space=*/false);
  if (!id) return Api::Error(400, "invalid_argument", "malformed percent-encoding in the id");
  if (delivery) {
    if (action != "ack" || id->find('/') != std::string::npos) return NoRoute(m, path);
    *route = Route::kDeliveryAck;
    if (!Is(m, "POST")) return MethodNotAllowed(m, path, "POST");
    return HandleDeliveryAck(ctx, *id);
  }
  if (action != "reply" && action != "finish") return NoRoute(m, path);
  *route = action == "reply" ? Route::kRunReply : Route::kRunFinish;
  if (!Is(m, "POST")) return MethodNotAllowed(m, path, "POST");
  return action == "reply" ? HandleRunReply(ctx, req, *id) : HandleRunFinish(ctx, req, *id);
}

// /v1/upstream-links and /v1/upstream-links/{key}.
ApiResponse RouteLinks(const HandlerContext& ctx, const ApiRequest& req, const Target& target,
                       Route* route) {
  std::string_view m = req.method, path = target.path;
  if (path == kLinksPath) {
    *route = Route::kUpstreamLinks;
    if (Is(m, "GET")) return HandleListLinks(ctx);
    if (Is(m, "POST")) return HandlePutLink(ctx, req);
    return MethodNotAllowed(m, path, "GET, POST");
  }
  std::string_view rest = path.substr(kLinksPrefix.size());
  auto key = PercentDecode(rest, /*plus_is_space=*/false);
  if (!key)
    return Api::Error(400, "invalid_argument", "malformed percent-encoding in the session key");
  if (key->empty() || rest.find('/') != std::string_view::npos) return NoRoute(m, path);
  *route = Route::kUpstreamLink;
  if (!Is(m, "DELETE")) return MethodNotAllowed(m, path, "DELETE");
  return HandleDeleteLink(ctx, req, *key, target.query);
}

// The routes with a fixed path.
ApiResponse RouteFixed(const HandlerContext& ctx, const ApiRequest& req, const Target& target,
                       Route* route) {
  struct Fixed {
    std::string_view path;
    const char* method;
    Route route;
  };
  static const Fixed kRoutes[] = {
      {"/v1/events", "POST", Route::kEvents},
      {"/v1/watches", "POST", Route::kWatches},
      {"/v1/notices", "GET", Route::kNoticesPeek},
      {"/v1/notices/drain", "POST", Route::kNoticesDrain},
      {"/v1/wakes", "GET", Route::kWakes},
      {"/v1/deliveries", "GET", Route::kDeliveries},
      {"/v1/prune", "POST", Route::kPrune},
      {"/v1/verify", "GET", Route::kVerify},
      {"/metrics", "GET", Route::kMetrics},
  };
  std::string_view m = req.method, path = target.path;
  if (path == "/v1/clock") {
    *route = Route::kClock;
    if (Is(m, "GET")) return HandleGetClock(ctx);
    if (Is(m, "POST")) return HandleSetClock(ctx, req);
    return MethodNotAllowed(m, path, "GET, POST");
  }
  for (const Fixed& f : kRoutes) {
    if (path != f.path) continue;
    *route = f.route;
    if (!Is(m, f.method)) return MethodNotAllowed(m, path, f.method);
    switch (f.route) {
      case Route::kEvents:
        return HandleRecordEvents(ctx, req);
      case Route::kWatches:
        return HandleWatch(ctx, req);
      case Route::kNoticesPeek:
        return HandlePeekNotices(ctx, target.query);
      case Route::kNoticesDrain:
        return HandleDrainNotices(ctx, req);
      case Route::kWakes:
        return Api::Error(426, "upgrade_required",
                          "GET /v1/wakes is a WebSocket stream: send Connection: Upgrade and "
                          "Upgrade: websocket");
      case Route::kDeliveries:
        return Api::Error(426, "upgrade_required",
                          "GET /v1/deliveries is a WebSocket stream: send Connection: Upgrade "
                          "and Upgrade: websocket");
      case Route::kPrune:
        return HandlePrune(ctx);
      case Route::kVerify:
        return HandleVerify(ctx);
      case Route::kMetrics:
        return HandleMetrics(ctx);
      default:
        break;
    }
  }
  return NoRoute(m, path);
}

}  // namespace

ApiResponse Api::Dispatch(const ApiRequest& req, Route* route) {
  Target target = SplitTarget(req.target);
  if (target.path == "/healthz") {  // no token: load balancers and supervisors probe it
    *route = Route::kHealthz;
    if (!Is(req.method, "GET")) return MethodNotAllowed(req.method, target.path, "GET");
    return JsonResponse(200, json::object{{"status", "ok"}});
  }
  if (!Authorized(req)) return Unauthorized();
  HandlerContext ctx{*engine_, options_, manual_clock_, *metrics_, after_write, services_};
  if (StartsWith(target.path, kToolsPrefix)) return RouteTool(ctx, req, target.path, route);
  if (StartsWith(target.path, kDeliveriesPrefix) || StartsWith(target.path, kRunsPrefix)) {
    return RouteGateway(ctx, req, target.path, route);
  }
  if (target.path == kLinksPath || StartsWith(target.path, kLinksPrefix)) {
    return RouteLinks(ctx, req, target, route);
  }
  if (target.path.substr(0, kSessionsPrefix.size()) == kSessionsPrefix) {
    return RouteSession(ctx, req, target, route);
  }
  return RouteFixed(ctx, req, target, route);
}

bool Api::Authorized(const ApiRequest& req) const {
  return options_.token.empty() ||
         ConstantTimeEquals(req.authorization, "Bearer " + options_.token);
}

ApiResponse Api::Unauthorized() {
  ApiResponse r =
      Error(401, "unauthorized", "this server needs the header Authorization: Bearer <token>");
  r.www_authenticate = true;
  return r;
}

std::variant<StreamTarget, ApiResponse> Api::AcceptStream(const ApiRequest& req) {
  Target target = SplitTarget(req.target);
  bool deliveries = target.path == "/v1/deliveries";
  if (target.path != "/v1/wakes" && !deliveries) {
    return Error(404, "not_found",
                 "no WebSocket stream at " + std::string(target.path) +
                     " (use /v1/wakes or /v1/deliveries)");
  }
  if (!Authorized(req)) return Unauthorized();
  bool malformed = false;
  const char* param = deliveries ? "agentId" : "watcher";
  auto filter = QueryParam(target.query, param, &malformed);
  if (malformed) {
    return Error(400, "invalid_argument", std::string("malformed percent-encoding in ") + param);
  }
  StreamTarget out;
  out.kind = deliveries ? StreamTarget::Kind::kDeliveries : StreamTarget::Kind::kWakes;
  if (!filter || filter->empty()) return out;
  if (deliveries) {
    out.filter = *filter;
    return out;
  }
  auto parsed = ParseSessionKey(*filter);
  if (!parsed.ok()) return Error(400, "invalid_argument", parsed.status().message());
  if (!parsed->agent_scoped) {
    return Error(400, "invalid_argument",
                 "watcher must be an agent-scoped key (agent:<id>:<rest>); a bare key never "
                 "gets wakes (got \"" +
                     *filter + "\")");
  }
  out.filter = parsed->canonical;
  return out;
}

uint64_t Api::SubscribeDeliveries(const std::string& agent_id,
                                  std::function<void(uint64_t, std::string)> callback) {
  if (services_.deliveries == nullptr) return 0;
  return services_.deliveries->Subscribe(agent_id, [cb = std::move(callback)](const Delivery& d) {
    cb(d.id, json::serialize(tools::DeliveryToJson(d)));
  });
}

void Api::UnsubscribeDeliveries(uint64_t id) {
  if (services_.deliveries != nullptr && id != 0) services_.deliveries->Unsubscribe(id);
}

Result<std::vector<std::pair<uint64_t, std::string>>> Api::PendingDeliveries(
    const std::string& agent_id) {
  auto pending = engine_->PendingDeliveries(agent_id);
  if (!pending.ok()) return pending.status();
  std::vector<std::pair<uint64_t, std::string>> out;
  out.reserve(pending->size());
  for (const Delivery& d : *pending) {
    out.emplace_back(d.id, json::serialize(tools::DeliveryToJson(d)));
  }
  return out;
}

void Api::Abandon(const std::string& run_id) {
  if (services_.messaging != nullptr) services_.messaging->Abandon(run_id);
}

std::optional<int64_t> Api::NextRunDeadlineMs() const {
  if (services_.messaging == nullptr) return std::nullopt;
  return services_.messaging->NextDeadlineMs();
}

void Api::ExpireDueRuns() {
  if (services_.messaging != nullptr) services_.messaging->ExpireDue();
}

}  // namespace statewatch::server

// Api: routing, authentication and the error envelope. The handlers are in handlers.cc.
#include "server/api.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "server/access_control.h"
#include "server/handlers.h"
#include "server/internal_call.h"
#include "server/request_ledger.h"
#include "server/request_guard.h"
#include "server/route_table.h"
#include "server/url.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

constexpr std::string_view kToolsPrefix = "/v1/tools/";

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

// A path under /v1/tools/ that names no tool: the answer lists the tools there are.
ApiResponse UnknownTool(std::string_view path) {
  std::string names;
  for (const RouteSpec& spec : Routes()) {
    if (spec.path.rfind(kToolsPrefix, 0) != 0) continue;
    if (!names.empty()) names += ", ";
    names += spec.path.substr(kToolsPrefix.size());
  }
  return Api::Error(404, "unknown_tool",
                    "Unknown tool: " + std::string(path.substr(kToolsPrefix.size())) +
                        " (this server answers " + names + ")");
}

}  // namespace

Api::Api(const ApiServices& services, const ServerOptions& options)
    : services_(services),
      access_(std::make_unique<AccessControl>(options)),
      engine_(services.engine),
      options_(options),
      manual_clock_(services.manual_clock),
      metrics_(services.metrics),
      requests_(std::make_unique<RequestLedger>(*services.engine)) {
  if (options.access_log.empty()) return;
  try {
    spdlog::sink_ptr sink;
    if (options.access_log == "-") {
      sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    } else {
      sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(options.access_log);
    }
    access_log_ = std::make_shared<spdlog::logger>("access", std::move(sink));
    access_log_->set_pattern("ts=%Y-%m-%dT%H:%M:%S.%eZ %v", spdlog::pattern_time_type::utc);
    access_log_->flush_on(spdlog::level::info);
  } catch (const spdlog::spdlog_ex& e) {  // the edge: an unwritable file is logged, not fatal
    spdlog::error("event=access_log_failed file=\"{}\" error=\"{}\"", options.access_log,
                  e.what());
  }
}

ApiResponse Api::Error(int status, std::string_view code, std::string_view message) {
  json::object inner;
  inner["code"] = code;
  inner["message"] = message;
  json::object outer;
  outer["error"] = std::move(inner);
  ApiResponse r;
  r.status = status;
  r.body = json::serialize(outer) + "\n";
  r.error_code = code;
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
  std::size_t route = Routes().size();  // "unmatched" until a row matches
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
  if (response.status >= 400 && request.method != "GET" && request.method != "HEAD") {
    metrics_->CountRefusedWrite(response.error_code, response.status);
  }
  if (access_log_) {
    access_log_->info("method={} target=\"{}\" route=\"{}\" status={} bytes={} us={}",
                      request.method, request.target, RouteLabel(route), response.status,
                      response.body.size(), nanos / 1000);
  }
  if (response.status >= 500) {
    spdlog::warn("event=request_failed method={} route=\"{}\" status={} body={}", request.method,
                 RouteLabel(route), response.status, response.body);
  } else if (spdlog::should_log(spdlog::level::debug)) {
    spdlog::debug("event=request method={} target=\"{}\" route=\"{}\" status={} us={}",
                  request.method, request.target, RouteLabel(route), response.status, nanos / 1000);
  }
  return response;
}

Api::~Api() = default;

void Api::ReloadTokens(const ServerOptions& options) { access_->Reload(options); }

ApiResponse Api::Dispatch(const ApiRequest& req, std::size_t* route) {
  Target target = SplitTarget(req.target);
  RouteScope scope = services_.gate != nullptr ? RouteScope::kCluster : RouteScope::kSingleNode;
  // HEAD is GET without the body (RFC 9110 §9.3.2); the transport leaves the body out.
  std::string_view method = req.method == "HEAD" ? std::string_view("GET") : req.method;
  RouteLookup found = MatchRoute(method, target.path, target.query, scope);
  if (!found.malformed_param.empty()) {
    *route = *found.path_route;
    return Error(400, "invalid_argument",
                 "malformed percent-encoding in the path parameter " + found.malformed_param);
  }
  const auto& routes = Routes();
  std::size_t row = found.route ? *found.route : found.path_route.value_or(routes.size());
  // The token is checked before telling a caller which routes exist; its scope once the
  // route is known.
  auth::Scope needed = row < routes.size() ? NeededScope(routes[row]) : auth::Scope::kRead;
  if (!found.route) needed = std::min(needed, auth::Scope::kRead);
  const char* shown = row < routes.size() ? routes[row].method : "";
  // A cluster-internal call is authenticated by its signature under the cluster's secret, not
  // by a token: the calls a node makes on its own (the watcher directory, a saga's steps, a
  // partition's mail) carry no client's token. The internal route's gate checks it again.
  const bool signed_internal = IsSignedInternalCall(req, target.path);
  if (auto refused = signed_internal ? std::nullopt
                                     : access_->Check(req.authorization, needed,
                                                      found.route ? shown : req.method,
                                                      row < routes.size() ? routes[row].path
                                                                          : target.path)) {
    return Refused(*refused);
  }
  HandlerContext ctx{*engine_, options_, manual_clock_, *metrics_, after_write, services_};
  if (services_.gate != nullptr) {
    *route = row;
    if (auto answer = services_.gate->Intercept(ctx, req, target.path, found)) return *answer;
  }
  if (!found.route) {
    if (found.path_route) {
      *route = *found.path_route;
      return MethodNotAllowed(req.method, target.path, found.allow);
    }
    if (target.path.substr(0, kToolsPrefix.size()) == kToolsPrefix) return UnknownTool(target.path);
    return NoRoute(req.method, target.path);
  }
  *route = *found.route;
  const RouteSpec& spec = routes[*found.route];
  auto handle = [&](const ApiRequest& r) { return spec.handle(ctx, r, found.match); };
  // A mutating route applies a request at most once per X-Request-Id (request_ledger.h).
  ApiResponse answer = std::string_view(spec.method) == "GET" ? handle(req)
                                                              : requests_->Run(req, handle);
  // The write that met a newer owner's fence fails here: answered as every later request.
  if (answer.status >= 500 && services_.gate != nullptr) {
    if (auto moved = services_.gate->Intercept(ctx, req, target.path, found)) return *moved;
  }
  return answer;
}

bool Api::IsSignedInternalCall(const ApiRequest& req, std::string_view path) const {
  if (!IsInternalPath(path) || options_.cluster_secret.empty() || !req.header) {
    return false;
  }
  const std::string_view header = req.header(kInternalHeaderLower);
  return !header.empty() &&
         CheckInternal(options_.cluster_secret, req.method, req.target, req.body, header).ok();
}

auth::Scope Api::NeededScope(const RouteSpec& spec) const {
  // GET /metrics is the one route whose scope a setting lowers (auth.openMetrics).
  if (spec.path == "/metrics" && access_->OpenMetrics()) return auth::Scope::kPublic;
  return spec.scope;
}

ApiResponse Api::Refused(const Refusal& refusal) {
  ApiResponse r = Error(refusal.status, refusal.code, refusal.message);
  r.www_authenticate = refusal.status == 401;
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
  const RouteSpec& spec = *std::find_if(Routes().begin(), Routes().end(), [&](const RouteSpec& r) {
    return r.websocket && r.path == target.path;
  });
  if (auto refused = access_->Check(req.authorization, spec.scope, "GET", spec.path)) {
    return Refused(*refused);
  }
  if (services_.gate != nullptr) {  // a standby or a moved partition streams nothing
    RouteLookup found = MatchRoute("GET", target.path, target.query, RouteScope::kCluster);
    HandlerContext ctx{*engine_, options_, manual_clock_, *metrics_, after_write, services_};
    if (auto answer = services_.gate->Intercept(ctx, req, target.path, found)) return *answer;
  }
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
  auto pending = SessionTablesView(*engine_).PendingDeliveries(agent_id);
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

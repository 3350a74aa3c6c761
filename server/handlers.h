// The endpoint handlers behind server/api.h, one function per route, plus the helpers that
// turn JSON bodies and Status values into responses. Internal to the server library.
//
// Thread-safe: handlers share nothing but the engine and the metrics.
#ifndef STATEWATCH_SERVER_HANDLERS_H_
#define STATEWATCH_SERVER_HANDLERS_H_

#include <boost/json.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server/api.h"

namespace statewatch::server {

struct HandlerContext {
  Engine& engine;
  const ServerOptions& options;
  ManualClock* manual_clock;  // null unless --manual-clock
  Metrics& metrics;
  const std::function<void()>& after_write;
  const ApiServices& services;
};

// ---- helpers ------------------------------------------------------------------------------

ApiResponse JsonResponse(int status, const boost::json::value& value);
// InvalidArgument 400, PermissionDenied 403, NotFound 404, FailedPrecondition/Busy 503,
// NoSpace 507 (insufficient_storage), ResourceExhausted 429 (loop_guard: a loop or cost
// guard refused a session tool call), others 500. `tool` picks the tool error codes
// (invalid_parameter, unknown_session).
ApiResponse StatusResponse(const Status& status, bool tool = false);
// The body as JSON; an empty body is `empty` when given, else an error. On failure returns
// nullopt and sets *error (400 invalid_json; invalid UTF-8 is named with its offset).
std::optional<boost::json::value> ParseBody(std::string_view body, ApiResponse* error,
                                            std::optional<boost::json::value> empty = {});
// ParseBody, and the body must be a JSON object (else 400 invalid_argument naming what it
// is).
std::optional<boost::json::value> ParseObjectBody(std::string_view body, ApiResponse* error,
                                                  std::optional<boost::json::value> empty = {});
// The query parameter `name` of `query`, percent-decoded, into *out (nullopt when absent).
// False, with a 400 invalid_argument naming the parameter in *error, for a malformed escape.
bool ReadQueryParam(std::string_view query, const char* name, std::optional<std::string>* out,
                    ApiResponse* error);
// A page's ?limit= as `statewatch status --limit` takes it: any integer, clamped to int (the
// engine clamps it to its page size); *limit is left as it is when `text` is absent. False,
// with a 400 invalid_argument quoting the text in *error, when it is not an integer.
bool ParsePageLimit(const std::optional<std::string>& text, int* limit, ApiResponse* error);
// 200 with `to_json(*result)`, or the error answer of `result`'s status.
template <typename T, typename ToJson>
ApiResponse JsonOrError(const Result<T>& result, ToJson to_json) {
  if (!result.ok()) return StatusResponse(result.status());
  return JsonResponse(200, to_json(*result));
}

// ---- routes -------------------------------------------------------------------------------

// Every session tool, through SessionMessaging::CallTool (the caller's tool policy first);
// a waiting sessions_send answers parked (gateway_handlers.cc).
ApiResponse HandleMessagingTool(const HandlerContext& ctx, std::string_view tool,
                                const ApiRequest& req);
ApiResponse HandleDeliveryAck(const HandlerContext& ctx, std::string_view id);
ApiResponse HandleRunReply(const HandlerContext& ctx, const ApiRequest& req,
                           const std::string& run_id);
ApiResponse HandleRunFinish(const HandlerContext& ctx, const ApiRequest& req,
                            const std::string& run_id);
ApiResponse HandleListLinks(const HandlerContext& ctx);
ApiResponse HandlePutLink(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleDeleteLink(const HandlerContext& ctx, const ApiRequest& req,
                             const std::string& key, std::string_view query);
ApiResponse HandleRecordEvents(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleUpsertSession(const HandlerContext& ctx, const ApiRequest& req,
                                const std::string& key, std::string_view query);
ApiResponse HandleDeleteSession(const HandlerContext& ctx, const ApiRequest& req,
                                const std::string& key, std::string_view query);
ApiResponse HandleResetSession(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query);
ApiResponse HandleAppendMessages(const HandlerContext& ctx, const ApiRequest& req,
                                 const std::string& key, std::string_view query);
// POST /v1/watches; its body's fields, which a cluster node checks too before it lists the
// watcher's partition (watcher_sagas.cc).
inline constexpr std::string_view kWatchFields[] = {"watcher", "target", "targetAgentId"};
// One watch of POST /v1/watches as the body names it (the target unresolved); InvalidArgument
// for a wrong shape: not an object, an unknown field, a missing or non-string watcher or target.
Result<WatchSpec> WatchSpecFromJson(const boost::json::value& item);
ApiResponse HandleWatch(const HandlerContext& ctx, const ApiRequest& req);
// POST /v1/watches/remove: one watch or an array of them, removed in one step (Engine::Unwatch).
ApiResponse HandleUnwatch(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandlePeekNotices(const HandlerContext& ctx, std::string_view query);
ApiResponse HandleDrainNotices(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandlePrune(const HandlerContext& ctx);
ApiResponse HandleVerify(const HandlerContext& ctx);
ApiResponse HandleMetrics(const HandlerContext& ctx);
ApiResponse HandleStats(const HandlerContext& ctx);
// GET /healthz: 200 {"status": "ok", "version"}, or 200 {"status": "degraded", "version",
// "writes": "refused", "writeError"} while the engine refuses writes (a full disk, a failed
// write): the daemon is alive and serves reads, so a supervisor must not restart it for that.
ApiResponse HandleHealthz(const HandlerContext& ctx);
// GET /readyz: 200 {"status": "ready", "version", "checks": {"storage": "ok"}} while the
// engine takes writes; else 503 with the same fields ("not_ready", the check's reason) and
// the error envelope {"error": {"code": "not_ready", "message"}}. A load balancer stops
// sending traffic; a supervisor keeps the process (GET /healthz still answers 200).
ApiResponse HandleReadyz(const HandlerContext& ctx);
// The OpenAPI document generated from the route table (server/openapi.h).
ApiResponse HandleOpenApi(const HandlerContext& ctx);
// {"to": DIR} -> a checkpoint in DIR (a new directory) -> {"path": absolute DIR, ...}.
ApiResponse HandleBackup(const HandlerContext& ctx, const ApiRequest& req);
ApiResponse HandleGetClock(const HandlerContext& ctx);

// ---- admin_handlers.cc: the routes `statewatch --server` needs ---------------------------
// GET /v1/sessions/{key}/state[?changesSince=N&limit=L] -> as `statewatch status`.
ApiResponse HandleSessionState(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query);
// POST /v1/versions {"sessions": [key...], "agentId"?} -> {"versions": [...]}.
ApiResponse HandleVersions(const HandlerContext& ctx, const ApiRequest& req);
// GET /v1/cursors?watcher=W&target=T[&targetAgentId=A] -> CursorToJson (404 when none).
ApiResponse HandleCursor(const HandlerContext& ctx, std::string_view query);
ApiResponse HandleSweep(const HandlerContext& ctx);    // -> {"pendingNotices": n}
ApiResponse HandleRebuild(const HandlerContext& ctx);  // -> VerifyReport
ApiResponse HandleExport(const HandlerContext& ctx);   // -> JSON lines of events
ApiResponse HandleSetClock(const HandlerContext& ctx, const ApiRequest& req);

// The request's W3C `traceparent` header as version 00, or "" when it is absent or invalid
// (W3C Trace Context: a receiver ignores a traceparent it cannot parse; the write goes on
// without one).
std::string RequestTraceparent(const ApiRequest& req);
// The calling session of a tool call (X-Session-Key, X-Agent-Id for a bare key).
Result<SessionName> ToolCaller(const ApiRequest& req);
// A tool call's caller and parameters (a JSON object body; empty means {}). On bad input
// returns false with the 400 answer in `*error`.
bool ReadToolCall(const ApiRequest& req, SessionName* caller, boost::json::object* params,
                  ApiResponse* error);
// The agent of a bare key in a {key} route: ?agentId=, else X-Agent-Id, else `body_agent`.
Result<SessionName> RouteSessionName(const ApiRequest& req, const std::string& key,
                                     std::string_view query, std::string_view body_agent = {});
void AfterWrite(const HandlerContext& ctx);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_HANDLERS_H_

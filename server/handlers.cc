// The endpoint handlers: JSON body in, engine call, JSON body out.
#include "server/handlers.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <vector>

#include "base/trace_context.h"
#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "codecs/registry_codec.h"
#include "server/openapi.h"
#include "server/request_ledger.h"
#include "server/url.h"
#include "server/webhook_handlers.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "statewatch/version.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"

namespace statewatch::server {
namespace json = boost::json;

// The agent of a bare key in a /v1/sessions/{key} route: ?agentId=, else X-Agent-Id, else
// `body_agent`, else "main" (ResolveSession's default).
Result<SessionName> RouteSessionName(const ApiRequest& req, const std::string& key,
                                     std::string_view query, std::string_view body_agent) {
  bool malformed = false;
  std::string agent = QueryParam(query, "agentId", &malformed).value_or("");
  if (malformed) return Status::InvalidArgument("malformed percent-encoding in agentId");
  if (agent.empty()) agent = std::string(req.agent_id);
  if (agent.empty()) agent = std::string(body_agent);
  return ResolveSession(key, agent);
}

namespace {

// A required string field of a JSON object body (the readers: codecs/json_fields.h).
Result<std::string> RequiredString(const json::value& body, std::string_view name) {
  if (!body.is_object()) return Status::InvalidArgument(std::string(name) + " is required");
  return tools::RequiredStringField(body.as_object(), name);
}

// An optional string field: absent or null leaves `*out` alone; another type is refused.
Status OptionalString(const json::value& body, std::string_view name, std::string* out) {
  if (!body.is_object()) return Status::OK();
  std::optional<std::string> v;
  SW_RETURN_IF_ERROR(tools::Assign(tools::StringField(body.as_object(), name), &v));
  if (v) *out = std::move(*v);
  return Status::OK();
}

Status RequireObject(const json::value& body) {
  if (body.is_object()) return Status::OK();
  return Status::InvalidArgument("the request body must be a JSON object (got " +
                                 tools::DescribeJson(body) + ")");
}

json::object NoticesJson(const std::vector<Notice>& notices) {
  json::array list;
  list.reserve(notices.size());
  for (const Notice& n : notices) list.emplace_back(tools::NoticeToJson(n));
  return json::object{{"notices", std::move(list)}};
}

}  // namespace

Result<SessionName> ToolCaller(const ApiRequest& req) {
  std::string_view key = req.session_key;
  if (key.find_first_not_of(" \t") == std::string_view::npos) {
    return Status::InvalidArgument(
        "the X-Session-Key header (the calling session's key) is required");
  }
  auto caller = ResolveSession(key, req.agent_id);
  if (!caller.ok()) {
    return Status::InvalidArgument("X-Session-Key / X-Agent-Id: " + caller.status().message());
  }
  return caller;
}

void AfterWrite(const HandlerContext& ctx) {
  if (ctx.after_write) ctx.after_write();
}

// ---- helpers ------------------------------------------------------------------------------

ApiResponse JsonResponse(int status, const json::value& value) {
  ApiResponse r;
  r.status = status;
  r.body = json::serialize(value) + "\n";  // a terminal shows one answer per line
  return r;
}

ApiResponse StatusResponse(const Status& status, bool tool) {
  switch (status.code()) {
    case Status::Code::kInvalidArgument:
      return Api::Error(400, tool ? "invalid_parameter" : "invalid_argument", status.message());
    case Status::Code::kPermissionDenied:
      return Api::Error(403, "forbidden", status.message());
    case Status::Code::kNotFound:
      return Api::Error(404, tool ? "unknown_session" : "not_found", status.message());
    case Status::Code::kFailedPrecondition:
    case Status::Code::kBusy:
      return Api::Error(503, "unavailable", status.ToString());
    case Status::Code::kNoSpace:  // the disk is full: nothing was written; retry later
      return Api::Error(507, "insufficient_storage", status.ToString());
    case Status::Code::kMisdirected:  // another partition's session: send it to its owner
      return Api::Error(421, "misdirected", status.message());
    case Status::Code::kResourceExhausted:  // a loop or cost guard (tools/loop_guards.h)
      return Api::Error(429, "loop_guard", status.message());
    default:
      return Api::Error(500, "internal", status.ToString());
  }
}

// The offset of the first byte that breaks UTF-8 in `s`, or npos when it is valid.
std::size_t FirstInvalidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t end = i + 1;
    while (end < s.size() && end - i < 4 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) {
      ++end;
    }
    if (!IsValidUtf8(s.substr(i, end - i))) return i;
    i = end;
  }
  return std::string_view::npos;
}

bool ReadQueryParam(std::string_view query, const char* name, std::optional<std::string>* out,
                    ApiResponse* error) {
  bool malformed = false;
  *out = QueryParam(query, name, &malformed);
  if (!malformed) return true;
  *error =
      Api::Error(400, "invalid_argument", std::string("malformed percent-encoding in ") + name);
  return false;
}

bool ParsePageLimit(const std::optional<std::string>& text, int* limit, ApiResponse* error) {
  if (!text) return true;
  int64_t parsed = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, parsed);
  if (text->empty() || ec != std::errc() || ptr != end) {
    *error =
        Api::Error(400, "invalid_argument", "limit must be an integer (got \"" + *text + "\")");
    return false;
  }
  *limit = static_cast<int>(std::clamp<int64_t>(parsed, INT32_MIN, INT32_MAX));
  return true;
}

std::optional<json::value> ParseBody(std::string_view body, ApiResponse* error,
                                     std::optional<json::value> empty) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    if (empty) return empty;
    *error = Api::Error(400, "invalid_json", "the request needs a JSON body");
    return std::nullopt;
  }
  // JSON text is UTF-8 (RFC 8259 §8.1). Boost.JSON would call a bad byte a "syntax error";
  // say what it is and where.
  if (std::size_t bad = FirstInvalidUtf8(body); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(body[bad]));
    *error = Api::Error(400, "invalid_json",
                        "the request body is not valid UTF-8 (byte " + std::string(hex) +
                            " at offset " + std::to_string(bad) + ")");
    return std::nullopt;
  }
  try {
    std::error_code ec;
    json::value v = json::parse(body, ec);
    if (!ec) return v;
    *error = Api::Error(400, "invalid_json", "malformed JSON body: " + ec.message());
  } catch (const std::exception& e) {
    *error = Api::Error(400, "invalid_json", std::string("malformed JSON body: ") + e.what());
  }
  return std::nullopt;
}

std::optional<json::value> ParseObjectBody(std::string_view body, ApiResponse* error,
                                           std::optional<json::value> empty) {
  auto parsed = ParseBody(body, error, std::move(empty));
  if (!parsed) return std::nullopt;
  if (Status s = RequireObject(*parsed); !s.ok()) {
    *error = StatusResponse(s);
    return std::nullopt;
  }
  return parsed;
}

namespace {

// The one member a body carries, `name`, a required string (the body must be a JSON object
// with no other member); nullopt with the error response in *error.
std::optional<std::string> RequiredBodyString(const ApiRequest& req, std::string_view name,
                                              ApiResponse* error) {
  auto body = ParseObjectBody(req.body, error);
  if (!body) return std::nullopt;
  if (Status s = tools::CheckKnownFields(body->as_object(), {name}); !s.ok()) {
    *error = StatusResponse(s);
    return std::nullopt;
  }
  auto value = RequiredString(*body, name);
  if (!value.ok()) {
    *error = StatusResponse(value.status());
    return std::nullopt;
  }
  return std::move(*value);
}

}  // namespace

// ---- routes -------------------------------------------------------------------------------

bool ReadToolCall(const ApiRequest& req, SessionName* caller, json::object* params,
                  ApiResponse* error) {
  auto who = ToolCaller(req);
  if (!who.ok()) {
    *error = Api::Error(400, "invalid_caller", who.status().message());
    return false;
  }
  auto body = ParseBody(req.body, error, json::value(json::object()));
  if (!body) return false;
  if (!body->is_object()) {
    *error = Api::Error(
        400, "invalid_parameter",
        "the tool parameters must be a JSON object (got " + tools::DescribeJson(*body) + ")");
    return false;
  }
  *caller = std::move(*who);
  *params = std::move(body->as_object());
  return true;
}

std::string RequestTraceparent(const ApiRequest& req) {
  if (!req.header) return "";
  return trace::NormalizeTraceparent(req.header("traceparent")).value_or("");
}

namespace {

// The answers of POST /v1/events, a drain and a watch: made from the engine call's result
// alone, so that an X-Request-Id record keeps them in the effect's own group (AnswerInGroup).
ApiResponse RecordedEventsAnswer(const std::vector<RecordResult>& results) {
  json::array events;
  events.reserve(results.size());
  for (const RecordResult& r : results) events.emplace_back(tools::RecordResultToJson(r));
  return JsonResponse(200, json::object{{"events", std::move(events)}});
}

ApiResponse DrainedAnswer(const std::vector<Notice>& notices) {
  return JsonResponse(200, NoticesJson(notices));
}

ApiResponse WatchedAnswer(const bool& watched) {
  return JsonResponse(200, json::object{{"watched", watched}});
}

}  // namespace

ApiResponse HandleRecordEvents(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  std::vector<EventInput> inputs;
  if (body->is_array()) {
    const json::array& items = body->as_array();
    inputs.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
      auto input = tools::EventInputFromJson(items[i]);
      if (!input.ok()) {
        return Api::Error(400, "invalid_argument",
                          "events[" + std::to_string(i) + "]: " + input.status().message());
      }
      inputs.push_back(std::move(*input));
    }
  } else {
    auto input = tools::EventInputFromJson(*body);
    if (!input.ok()) return StatusResponse(input.status());
    inputs.push_back(std::move(*input));
  }
  if (inputs.empty()) return JsonResponse(200, json::object{{"events", json::array()}});
  // The header is the write's trace context; an event's own traceparent field wins.
  if (std::string trace = RequestTraceparent(req); !trace.empty()) {
    for (EventInput& in : inputs) {
      if (in.traceparent.empty()) in.traceparent = trace;
    }
  }
  AnswerInGroup(&RecordedEventsAnswer);
  auto results = ctx.engine.RecordMany(inputs);
  if (!results.ok()) return StatusResponse(results.status());
  ctx.metrics.CountRecorded(*results);
  AfterWrite(ctx);
  return RecordedEventsAnswer(*results);
}

ApiResponse HandleUpsertSession(const HandlerContext& ctx, const ApiRequest& req,
                                const std::string& key, std::string_view query) {
  ApiResponse error;
  auto body = ParseObjectBody(req.body, &error, json::value(json::object()));
  if (!body) return error;
  std::string body_agent;
  if (Status s = OptionalString(*body, "agentId", &body_agent); !s.ok()) return StatusResponse(s);
  auto name = RouteSessionName(req, key, query, body_agent);
  if (!name.ok()) return StatusResponse(name.status());
  auto record = tools::SessionRecordFromJson(*body, *name);
  if (!record.ok()) return StatusResponse(record.status());
  // The answer is the entry as this write stored it (merged with what was there).
  auto answer = AnswerStoredInGroup<SessionRecord>(
      [&](SessionRecord* stored) {
        return SessionTables(ctx.engine).UpsertSession(*record, stored);
      },
      [](const SessionRecord& stored) {
        return JsonResponse(200, json::object{{"session", tools::SessionRecordToJson(stored)}});
      });
  return answer.ok() ? *answer : StatusResponse(answer.status());
}

ApiResponse HandleDeleteSession(const HandlerContext& ctx, const ApiRequest& req,
                                const std::string& key, std::string_view query) {
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  const ApiResponse deleted = JsonResponse(200, json::object{{"deleted", true}});
  AnswerInGroupOnSuccess(deleted);
  if (Status s = ctx.engine.DeleteSession(*name); !s.ok()) return StatusResponse(s);
  return deleted;
}

ApiResponse HandleResetSession(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query) {
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  const ApiResponse reset = JsonResponse(200, json::object{{"reset", true}});
  AnswerInGroupOnSuccess(reset);
  if (Status s = ctx.engine.ResetWatcher(name->session_key); !s.ok()) return StatusResponse(s);
  return reset;
}

ApiResponse HandleAppendMessages(const HandlerContext& ctx, const ApiRequest& req,
                                 const std::string& key, std::string_view query) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  auto messages = tools::TranscriptMessagesFromJson(*body);
  if (!messages.ok()) return StatusResponse(messages.status());
  const ApiResponse appended = JsonResponse(200, json::object{{"appended", messages->size()}});
  AnswerInGroupOnSuccess(appended);
  if (Status s = SessionTables(ctx.engine).AppendTranscript(*name, std::move(*messages)); !s.ok()) {
    return StatusResponse(s);
  }
  return appended;
}

Result<WatchSpec> WatchSpecFromJson(const json::value& item) {
  if (!item.is_object()) {
    return Status::InvalidArgument("a watch must be a JSON object (got " +
                                   tools::DescribeJson(item) + ")");
  }
  SW_RETURN_IF_ERROR(tools::CheckKnownFields(item.as_object(), kWatchFields));
  auto watcher = RequiredString(item, "watcher");
  if (!watcher.ok()) return watcher.status();
  auto target = RequiredString(item, "target");
  if (!target.ok()) return target.status();
  WatchSpec spec;
  spec.watcher_key = std::move(*watcher);
  spec.target.session_key = std::move(*target);
  SW_RETURN_IF_ERROR(OptionalString(item, "targetAgentId", &spec.target.agent_id));
  return spec;
}

namespace {

ApiResponse WatchedManyAnswer(const WatchManyResult& r) {
  return JsonResponse(200, json::object{{"watched", true},
                                        {"watches", r.watched},
                                        {"created", r.created}});
}

// The watches of a body of POST /v1/watches or /v1/watches/remove: one watch (an object) or
// an array of them, whose refused item is named by its index.
Result<std::vector<WatchSpec>> WatchSpecsFromJson(const json::value& body) {
  if (body.is_object()) {
    auto spec = WatchSpecFromJson(body);
    if (!spec.ok()) return spec.status();
    return std::vector<WatchSpec>{std::move(*spec)};
  }
  if (!body.is_array()) {
    return Status::InvalidArgument(
        "the request body must be a watch (a JSON object) or an array of watches (got " +
        tools::DescribeJson(body) + ")");
  }
  const json::array& items = body.as_array();
  std::vector<WatchSpec> watches;
  watches.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    auto spec = WatchSpecFromJson(items[i]);
    if (!spec.ok()) {
      return Status::InvalidArgument("watches[" + std::to_string(i) + "]: " +
                                     spec.status().message());
    }
    watches.push_back(std::move(*spec));
  }
  return watches;
}

ApiResponse UnwatchedAnswer(const UnwatchResult& r) {
  return JsonResponse(200, json::object{{"watches", r.watches}, {"removed", r.removed}});
}

}  // namespace

ApiResponse HandleWatch(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  auto watches = WatchSpecsFromJson(*body);
  if (!watches.ok()) return StatusResponse(watches.status());
  if (body->is_array()) {
    // One atomic registration (Engine::WatchMany): an item the single form would answer
    // watched: false refuses the whole array with 400, naming the item.
    AnswerInGroup(&WatchedManyAnswer);
    auto result = ctx.engine.WatchMany(*watches);
    if (!result.ok()) return StatusResponse(result.status());
    return WatchedManyAnswer(*result);
  }
  const WatchSpec& spec = watches->front();
  // docs/semantics.md, "How a watcher starts watching": a malformed key is a refused
  // registration (false), not an error.
  auto target_name = ResolveSession(spec.target.session_key, spec.target.agent_id);
  if (!target_name.ok()) return JsonResponse(200, json::object{{"watched", false}});
  AnswerInGroup(&WatchedAnswer);
  auto watched = ctx.engine.Watch(spec.watcher_key, *target_name);
  if (!watched.ok()) {
    if (watched.status().IsInvalidArgument()) return WatchedAnswer(false);
    return StatusResponse(watched.status());
  }
  return WatchedAnswer(*watched);
}

// Strict, unlike the single registration: every item must name a pair a registration would
// accept (a removal of a pair that can never be watched is a mistake the caller should hear
// of), and one that does not refuses the whole body.
ApiResponse HandleUnwatch(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  auto watches = WatchSpecsFromJson(*body);
  if (!watches.ok()) return StatusResponse(watches.status());
  AnswerInGroup(&UnwatchedAnswer);
  auto result = ctx.engine.Unwatch(*watches);
  if (!result.ok()) return StatusResponse(result.status());
  return UnwatchedAnswer(*result);
}

ApiResponse HandlePeekNotices(const HandlerContext& ctx, std::string_view query) {
  bool malformed = false;
  auto watcher = QueryParam(query, "watcher", &malformed);
  if (malformed)
    return Api::Error(400, "invalid_argument", "malformed percent-encoding in watcher");
  if (!watcher || watcher->empty()) {
    return Api::Error(400, "invalid_argument", "the query parameter watcher is required");
  }
  return JsonOrError(ctx.engine.PendingNotices(*watcher), NoticesJson);
}

ApiResponse HandleDrainNotices(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto watcher = RequiredBodyString(req, "watcher", &error);
  if (!watcher) return error;
  AnswerInGroup(&DrainedAnswer);  // the answer is the data: durable with the cursors' moves
  auto notices = ctx.engine.Drain(*watcher);
  if (!notices.ok()) return StatusResponse(notices.status());
  ctx.metrics.AddNoticesDrained(notices->size());
  AfterWrite(ctx);  // a drain may reopen a notice for intervening changes: a merged wake
  return DrainedAnswer(*notices);
}

ApiResponse HandlePrune(const HandlerContext& ctx) {
  auto stats = ctx.engine.Prune();
  if (!stats.ok()) return StatusResponse(stats.status());
  ctx.metrics.AddPruned(*stats);
  return JsonResponse(200, tools::PruneStatsToJson(*stats));
}

ApiResponse HandleVerify(const HandlerContext& ctx) {
  return JsonOrError(ctx.engine.Verify(), tools::VerifyReportToJson);
}

ApiResponse HandleMetrics(const HandlerContext& ctx) {
  auto stats = ctx.engine.Stats();
  // Read at scrape time: a scrape every few seconds costs two scans of small tables, and
  // the request path stays free of bookkeeping.
  ServiceGauges gauges;
  auto deliveries = SessionTablesView(ctx.engine).PendingDeliveries("");
  auto runs = SessionTablesView(ctx.engine).ListRuns();
  if (deliveries.ok()) gauges.unacked_deliveries = deliveries->size();
  if (runs.ok()) {
    for (const RunRecord& run : *runs) gauges.active_runs += run.status == "running" ? 1 : 0;
  }
  if (ctx.services.messaging != nullptr) {
    auto refusals = ctx.services.messaging->guards().Refusals();
    for (int g = 0; g < tools::kGuardCount; ++g) {
      gauges.guard_refusals.emplace_back(tools::GuardName(static_cast<tools::Guard>(g)),
                                         refusals[g]);
    }
  }
  ApiResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = ctx.metrics.Render(stats.ok() ? &*stats : nullptr, &gauges);
  if (ctx.services.monitor != nullptr) {
    r.body += RenderMonitorMetrics(ctx.services.monitor->Stats());
  }
  if (ctx.services.webhooks != nullptr) {
    r.body += RenderWebhookMetrics(ctx.services.webhooks->Stats());
  }
  return r;
}

ApiResponse HandleStats(const HandlerContext& ctx) {
  auto registered = SessionTablesView(ctx.engine).ListSessions();  // "sessions": the registry
  if (!registered.ok()) return StatusResponse(registered.status());
  return JsonOrError(ctx.engine.Stats(), [&](const EngineStats& stats) {
    return tools::StatsToJson(stats, registered->size());
  });
}

ApiResponse HandleHealthz(const HandlerContext& ctx) {
  // Always 200: a daemon that refuses writes is alive and serves reads, so a supervisor
  // must not restart it for that; the body says what is degraded.
  auto pulse = ctx.engine.Pulse();
  if (!pulse.ok()) {
    return JsonResponse(200, json::object{{"status", "degraded"},
                                          {"version", kVersion},
                                          {"writes", "unknown"},
                                          {"error", pulse.status().ToString()}});
  }
  if (!pulse->write_error.empty()) {
    return JsonResponse(200, json::object{{"status", "degraded"},
                                          {"version", kVersion},
                                          {"writes", "refused"},
                                          {"writeError", pulse->write_error}});
  }
  return JsonResponse(200, json::object{{"status", "ok"}, {"version", kVersion}});
}

ApiResponse HandleReadyz(const HandlerContext& ctx) {
  // One check today (storage); the answer names each, so that a probe's log says why.
  auto pulse = ctx.engine.Pulse();
  std::string storage = !pulse.ok()                   ? "unknown: " + pulse.status().ToString()
                        : !pulse->write_error.empty() ? "writes refused: " + pulse->write_error
                                                      : "ok";
  json::object body{{"status", storage == "ok" ? "ready" : "not_ready"},
                    {"version", kVersion},
                    {"checks", json::object{{"storage", storage}}}};
  if (storage == "ok") return JsonResponse(200, body);
  body["error"] = json::object{{"code", "not_ready"}, {"message", "not ready: storage " + storage}};
  return JsonResponse(503, body);
}

ApiResponse HandleOpenApi(const HandlerContext&) {
  ApiResponse r;
  r.body = OpenApiDocument();
  return r;
}

ApiResponse HandleBackup(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto to = RequiredBodyString(req, "to", &error);
  if (!to) return error;
  std::error_code ec;
  std::string dir = std::filesystem::absolute(*to, ec).lexically_normal().string();
  if (ec) return Api::Error(400, "invalid_argument", "to: " + ec.message() + " (" + *to + ")");
  if (Status s = ctx.engine.Backup(dir); !s.ok()) return StatusResponse(s);
  return JsonResponse(200, json::object{{"path", dir}});
}

ApiResponse HandleGetClock(const HandlerContext& ctx) {
  json::object o;
  o["now"] = ctx.engine.clock().NowMs();
  o["manual"] = ctx.manual_clock != nullptr;
  return JsonResponse(200, o);
}

ApiResponse HandleSetClock(const HandlerContext& ctx, const ApiRequest& req) {
  if (ctx.manual_clock == nullptr) {
    return Api::Error(404, "not_found",
                      "POST /v1/clock needs a server started with --manual-clock (this one "
                      "runs on the system clock)");
  }
  ApiResponse error;
  auto body = ParseObjectBody(req.body, &error);
  if (!body) return error;
  if (Status s = tools::CheckKnownFields(body->as_object(), {"now"}); !s.ok()) {
    return StatusResponse(s);
  }
  auto ms = tools::IntegerField(body->as_object(), "now", 0, tools::kMaxSafeInt,
                                "a non-negative integer (ms since the epoch)");
  if (!ms.ok()) return StatusResponse(ms.status());
  if (!*ms) return Api::Error(400, "invalid_argument", "now is required (ms since the epoch)");
  if (!ctx.manual_clock->Set(**ms)) {
    return Api::Error(400, "invalid_argument",
                      "the clock never goes backwards: it is at " +
                          std::to_string(ctx.manual_clock->NowMs()) + ", got " +
                          std::to_string(**ms));
  }
  // What falls due at the new time: waiting sends time out, the upstream tick runs (on the
  // monitor's thread; this answer waits for it so that tests see its events), and wakes
  // merged into a window that has now ended — last, so they include the tick's notices.
  if (ctx.services.messaging != nullptr) ctx.services.messaging->ExpireDue();
  if (ctx.services.monitor_driver != nullptr) ctx.services.monitor_driver->RunDueNow();
  if (ctx.services.prune_scheduler != nullptr) ctx.services.prune_scheduler->RunDueNow();
  ctx.engine.RunDueWakes();
  return JsonResponse(200, json::object{{"now", **ms}});
}

}  // namespace statewatch::server

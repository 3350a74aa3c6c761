// The handlers behind the operator routes that mirror `statewatch` verbs one to one
// (state, versions, cursors, sweep, rebuild, export), so that `statewatch --server URL
// <verb>` prints exactly what the verb prints on a local database: both call the same
// encoders in codecs/json_codec.h.

#include "codecs/json_codec.h"
#include "codecs/json_fields.h"
#include "server/handlers.h"
#include "server/url.h"
#include "statewatch/session_key.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {}  // namespace

ApiResponse HandleSessionState(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query) {
  ApiResponse error;
  std::optional<std::string> since_text, limit_text;
  if (!ReadQueryParam(query, "changesSince", &since_text, &error)) return error;
  if (!ReadQueryParam(query, "limit", &limit_text, &error)) return error;
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  json::value since_value = since_text ? json::value(*since_text) : json::value(nullptr);
  auto since = tools::ParseChangesSince(&since_value);
  if (!since.ok()) return StatusResponse(since.status());
  int limit = 200;
  if (!ParsePageLimit(limit_text, &limit, &error)) return error;
  auto version = ctx.engine.StateVersion(*name);
  if (!version.ok()) return StatusResponse(version.status());
  if (!since->has_value()) return JsonResponse(200, tools::SessionStateToJson(*name, *version));
  auto page = ctx.engine.ChangesSince(*name, **since, limit);
  if (!page.ok()) return StatusResponse(page.status());
  return JsonResponse(200, tools::SessionStateToJson(*name, *version, &*page));
}

ApiResponse HandleVersions(const HandlerContext& ctx, const ApiRequest& req) {
  ApiResponse error;
  auto body = ParseBody(req.body, &error);
  if (!body) return error;
  const json::object* o = body->if_object();
  const json::value* keys = o ? o->if_contains("sessions") : nullptr;
  if (keys == nullptr || !keys->is_array()) {
    return Api::Error(400, "invalid_argument",
                      "the body must be {\"sessions\": [key...], \"agentId\"?} (got " +
                          tools::DescribeJson(*body) + ")");
  }
  if (Status s = tools::CheckKnownFields(*o, {"sessions", "agentId"}); !s.ok()) {
    return StatusResponse(s);
  }
  std::string agent;
  if (const json::value* a = o->if_contains("agentId"); a && a->is_string()) {
    agent = std::string(a->as_string());
  }
  std::vector<SessionName> sessions;
  for (const json::value& k : keys->as_array()) {
    if (!k.is_string()) {
      return Api::Error(400, "invalid_argument",
                        "sessions must hold strings (got " + tools::DescribeJson(k) + ")");
    }
    // An agent-scoped key brings its own agent; agentId names the agent of the bare ones.
    auto parsed = ParseSessionKey(std::string(k.as_string()));
    if (!parsed.ok()) return StatusResponse(parsed.status());
    auto name = ResolveSession(std::string(k.as_string()), parsed->agent_scoped ? "" : agent);
    if (!name.ok()) return StatusResponse(name.status());
    sessions.push_back(std::move(*name));
  }
  auto versions = ctx.engine.StateVersions(sessions);
  if (!versions.ok()) return StatusResponse(versions.status());
  json::array rows;
  for (std::size_t i = 0; i < sessions.size() && i < versions->size(); ++i) {
    rows.emplace_back(tools::SessionStateToJson(sessions[i], (*versions)[i]));
  }
  return JsonResponse(200, json::object{{"versions", std::move(rows)}});
}

ApiResponse HandleCursor(const HandlerContext& ctx, std::string_view query) {
  ApiResponse error;
  std::optional<std::string> watcher, target, target_agent;
  if (!ReadQueryParam(query, "watcher", &watcher, &error) ||
      !ReadQueryParam(query, "target", &target, &error) ||
      !ReadQueryParam(query, "targetAgentId", &target_agent, &error)) {
    return error;
  }
  if (!watcher || watcher->empty() || !target || target->empty()) {
    return Api::Error(400, "invalid_argument",
                      "the query parameters watcher and target are required");
  }
  auto name = ResolveSession(*target, target_agent.value_or(""));
  if (!name.ok()) return StatusResponse(name.status());
  auto cursor = ctx.engine.Cursor(*watcher, *name);
  if (!cursor.ok()) return StatusResponse(cursor.status());
  if (!cursor->has_value()) {
    return Api::Error(404, "not_found",
                      "no cursor for watcher " + *watcher + " on target " + name->session_key);
  }
  return JsonResponse(200, tools::CursorToJson(**cursor));
}

ApiResponse HandleSweep(const HandlerContext& ctx) {
  auto pending = ctx.engine.Sweep();
  if (!pending.ok()) return StatusResponse(pending.status());
  AfterWrite(ctx);  // reopened notices wake their watchers
  return JsonResponse(200, json::object{{"pendingNotices", *pending}});
}

ApiResponse HandleRebuild(const HandlerContext& ctx) {
  return JsonOrError(ctx.engine.Rebuild(), tools::VerifyReportToJson);
}

ApiResponse HandleExport(const HandlerContext& ctx) {
  ApiResponse r;
  r.content_type = "application/x-ndjson";
  Status s = ctx.engine.ForEachEvent([&](const Event& e) {
    r.body += json::serialize(tools::EventToJson(e));
    r.body += '\n';
    return Status::OK();
  });
  if (!s.ok()) return StatusResponse(s);
  return r;
}

}  // namespace statewatch::server

#include "server/internal_handlers.h"

#include <boost/json.hpp>

#include "codecs/json_fields.h"
#include "server/handlers.h"
#include "server/internal_call.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"
#include "tools/sessions_list_window.h"
#include "tools/tool_profiles.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

// 403 unless the request carries this cluster's signature.
std::optional<ApiResponse> RefuseOutsider(const HandlerContext& ctx, const ApiRequest& req) {
  if (ctx.services.gate == nullptr) {  // a single node: as any unknown path
    return Api::Error(404, "not_found",
                      "no route for " + std::string(req.method) + " " +
                          std::string(req.target.substr(0, req.target.find('?'))));
  }
  const std::string_view header = req.header ? req.header(kInternalHeaderLower) : "";
  Status s = CheckInternal(ctx.options.cluster_secret, req.method, req.target, req.body, header);
  if (s.ok()) return std::nullopt;
  return Api::Error(403, "forbidden", s.message());
}

ApiResponse NoMessaging() {
  return Api::Error(503, "unavailable", "the session messaging is not running in this server");
}

std::string Field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

ApiResponse BadInternal(std::string_view what) {
  return Api::Error(400, "invalid_argument", "internal call: " + std::string(what));
}

// The SessionToolsOptions and caller an internal tool call carries.
bool ReadCarried(const json::object& body, SessionName* caller, tools::SessionToolsOptions* out,
                 ApiResponse* error) {
  const json::value* c = body.if_contains("caller");
  const json::value* context = body.if_contains("context");
  if (c == nullptr || !c->is_object() || context == nullptr || !context->is_object()) {
    *error = BadInternal("needs {\"caller\", \"context\"}");
    return false;
  }
  auto name = ResolveSession(Field(c->as_object(), "sessionKey"), Field(c->as_object(), "agentId"));
  auto visibility = tools::ParseVisibility(Field(context->as_object(), "visibility"));
  if (!name.ok() || !visibility) {
    *error = BadInternal("a bad caller or visibility: " + json::serialize(body).substr(0, 200));
    return false;
  }
  *caller = std::move(*name);
  out->caller_visibility = *visibility;
  out->visibility = *visibility;
  const json::value* a2a = context->as_object().if_contains("agentToAgent");
  if (a2a != nullptr && a2a->is_object()) {
    const json::value* enabled = a2a->as_object().if_contains("enabled");
    out->agent_to_agent.enabled = enabled != nullptr && enabled->is_bool() && enabled->as_bool();
    const json::value* allow = a2a->as_object().if_contains("allow");
    if (allow != nullptr && allow->is_array()) {
      for (const json::value& pattern : allow->as_array()) {
        if (pattern.is_string()) out->agent_to_agent.allow.emplace_back(pattern.as_string());
      }
    }
  }
  return true;
}

}  // namespace

ApiResponse AnswerInternal(const HandlerContext& ctx, const ApiRequest& req,
                           std::string_view path) {
  constexpr std::string_view kTools = "/v1/internal/tools/";
  const bool context = path == "/v1/internal/caller-context";
  const bool tool = path.substr(0, kTools.size()) == kTools &&
                    path.find('/', kTools.size()) == std::string_view::npos;
  if (!context && !tool) {
    return Api::Error(404, "not_found", "no route for " + std::string(req.method) + " " +
                                            std::string(path));
  }
  if (req.method != "POST") {
    ApiResponse r = Api::Error(405, "method_not_allowed",
                               std::string(req.method) + " " + std::string(path) +
                                   " is not allowed (POST)");
    r.allow = "POST";
    return r;
  }
  if (context) return HandleInternalCallerContext(ctx, req);
  return HandleInternalTool(ctx, req, std::string(path.substr(kTools.size())));
}

ApiResponse HandleInternalCallerContext(const HandlerContext& ctx, const ApiRequest& req) {
  if (auto refused = RefuseOutsider(ctx, req)) return *refused;
  if (ctx.services.messaging == nullptr) return NoMessaging();
  SessionName caller;
  json::object body;
  ApiResponse error;
  if (!ReadToolCall(req, &caller, &body, &error)) return error;
  const std::string tool = Field(body, "tool");
  Status owned = SessionTablesView(ctx.engine).CheckOwned(caller);
  if (!owned.ok()) return StatusResponse(owned, /*tool=*/true);
  const tools::MessagingOptions policy = ctx.services.messaging->options();
  auto depth = tools::SpawnDepth(ctx.engine, caller);
  if (!depth.ok()) return StatusResponse(depth.status(), true);
  Status allowed =
      tools::CheckToolAllowed(policy.tool_policy.ForAgent(caller.agent_id), tool, *depth);
  if (!allowed.ok()) return StatusResponse(allowed, true);
  auto visibility = tools::CallerVisibility(ctx.engine, policy.sessions, caller);
  if (!visibility.ok()) return StatusResponse(visibility.status(), true);
  json::array allow;
  for (const std::string& pattern : policy.sessions.agent_to_agent.allow) allow.emplace_back(pattern);
  return JsonResponse(
      200, json::object{{"caller", json::object{{"sessionKey", caller.session_key},
                                                {"agentId", caller.agent_id}}},
                        {"visibility", tools::VisibilityName(*visibility)},
                        {"agentToAgent", json::object{{"enabled", policy.sessions.agent_to_agent.enabled},
                                                      {"allow", std::move(allow)}}}});
}

ApiResponse HandleInternalTool(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& tool) {
  if (auto refused = RefuseOutsider(ctx, req)) return *refused;
  ApiResponse error;
  auto parsed = ParseBody(req.body, &error);
  if (!parsed) return error;
  if (!parsed->is_object()) return BadInternal("the body must be an object");
  const json::object& body = parsed->as_object();
  SessionName caller;
  tools::SessionToolsOptions options;
  if (!ReadCarried(body, &caller, &options, &error)) return error;
  json::object params;
  if (const json::value* p = body.if_contains("params"); p != nullptr) {
    if (!p->is_object()) {
      return Api::Error(400, "invalid_parameter",
                        "the tool parameters must be a JSON object (got " +
                            tools::DescribeJson(*p) + ")");
    }
    params = p->as_object();
  }
  if (tool == "session_status") {
    auto text = tools::SessionStatusJson(ctx.engine, options, caller, params);
    if (!text.ok()) return StatusResponse(text.status(), true);
    AfterWrite(ctx);  // a model override is a registry write
    ApiResponse r;
    r.body = std::move(*text);
    r.body.push_back('\n');
    return r;
  }
  if (tool == "sessions_history") {
    auto result = tools::SessionsHistory(ctx.engine, options, caller, params);
    if (!result.ok()) return StatusResponse(result.status(), true);
    return JsonResponse(200, *result);
  }
  if (tool == "sessions_list") {
    tools::ListWindow window;
    const json::value* w = body.if_contains("window");
    if (w == nullptr || !w->is_object()) return BadInternal("sessions_list needs a window");
    const json::value* take = w->as_object().if_contains("take");
    if (take == nullptr || !take->is_int64() || take->as_int64() < 0) {
      return BadInternal("the window's take must be a non-negative integer");
    }
    window.take = take->as_int64();
    const json::value* after = w->as_object().if_contains("after");
    if (after != nullptr && after->is_object()) window.after = tools::ListSortKeyOf(after->as_object());
    auto result = tools::SessionsListWindow(ctx.engine, options, caller, params, window);
    if (!result.ok()) return StatusResponse(result.status(), true);
    return JsonResponse(200, *result);
  }
  return Api::Error(404, "unknown_tool",
                    "no internal answer for tool \"" + tool +
                        "\" (session_status, sessions_history, sessions_list)");
}

}  // namespace statewatch::server

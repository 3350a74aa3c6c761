// McpServer's methods: tools and resources, each through the HTTP API's own dispatch.
#include <algorithm>

#include "base/ascii.h"
#include "server/api_schemas.h"
#include "server/mcp_server.h"
#include "server/mcp_session.h"
#include "server/route_table.h"
#include "server/url.h"
#include "statewatch/request_ids.h"
#include "statewatch/session_key.h"

namespace statewatch::server {
namespace json = boost::json;
namespace {

constexpr int kInvalidParams = -32602;
constexpr int kMethodNotFound = -32601;
constexpr int kInternalError = -32603;
constexpr int kResourceNotFound = -32002;  // MCP's "Resource not found"
constexpr std::string_view kUriPrefix = "statewatch://sessions/";
constexpr std::string_view kHistorySuffix = "/history";

// `value` with every {"$ref": "#/components/schemas/X", ...} replaced by X (itself inlined)
// and the $ref's sibling keywords laid over it, so a tool's inputSchema stands alone.
json::value Inline(const json::value& value, const json::object& components, int depth = 0) {
  if (depth > 32) return value;  // a cycle: the table has none
  if (const json::array* array = value.if_array()) {
    json::array out;
    for (const json::value& v : *array) out.push_back(Inline(v, components, depth + 1));
    return out;
  }
  const json::object* object = value.if_object();
  if (!object) return value;
  json::object out;
  if (const json::value* ref = object->if_contains("$ref"); ref && ref->is_string()) {
    std::string_view name = ref->as_string();
    constexpr std::string_view kPrefix = "#/components/schemas/";
    if (name.substr(0, kPrefix.size()) == kPrefix) {
      if (const json::value* target = components.if_contains(name.substr(kPrefix.size()))) {
        json::value base = Inline(*target, components, depth + 1);
        if (base.is_object()) out = std::move(base.as_object());
      }
    }
  }
  for (const auto& [key, v] : *object) {
    if (key == "$ref" && !out.empty()) continue;
    out[key] = Inline(v, components, depth + 1);
  }
  return out;
}

json::array BuildTools() {
  json::object components = json::parse(ComponentSchemasJson()).as_object();
  json::array tools;
  for (const RouteSpec& spec : Routes()) {
    if (std::string_view(spec.tag) != "tools" || spec.request_schema == nullptr) continue;
    json::value schema = Inline(components.at(spec.request_schema), components);
    tools.push_back(json::object{
        {"name", spec.operation_id},
        {"description", std::string(spec.summary) + " Runs as the MCP session's caller."},
        {"inputSchema", std::move(schema)},
        {"annotations", json::object{{"readOnlyHint", spec.scope == auth::Scope::kRead}}}});
  }
  return tools;
}

bool IsTool(std::string_view name) {
  const json::array& tools = McpServer::Tools();
  return std::any_of(tools.begin(), tools.end(), [&](const json::value& t) {
    return t.as_object().at("name").as_string() == name;
  });
}

std::string ToolNames() {
  std::string names;
  for (const json::value& t : McpServer::Tools()) {
    if (!names.empty()) names += ", ";
    names += t.as_object().at("name").as_string();
  }
  return names;
}

std::string TrimNewline(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// An HTTP answer as a tools/call result: the body as text (and as structuredContent when it
// is an object); an error answer is isError with the HTTP error envelope and its status.
json::object ToolResult(const ApiResponse& r) {
  boost::system::error_code ec;
  json::value parsed = json::parse(r.body, ec);
  json::object out{{"content", json::array{json::object{{"type", "text"},
                                                        {"text", TrimNewline(r.body)}}}}};
  bool error = r.status >= 400;
  if (!ec && parsed.is_object()) {
    json::object structured = std::move(parsed.as_object());
    if (error) structured["status"] = r.status;
    out["structuredContent"] = std::move(structured);
  }
  out["isError"] = error;
  return out;
}

// ToolResult's text for the common case, a 2xx answer that is one JSON object (the tools
// answer nothing else), without parsing it into a DOM and serializing it again: the answer
// is spliced in as structuredContent. "" for anything else (ToolResult then).
std::string ToolResultText(const ApiResponse& r) {
  if (r.status >= 400) return "";
  std::string body = TrimNewline(r.body);
  if (body.size() < 2 || body.front() != '{' || body.back() != '}') return "";
  return R"({"content":[{"type":"text","text":)" + json::serialize(json::string(body)) +
         R"(}],"structuredContent":)" + body + R"(,"isError":false})";
}

// The session key of a statewatch:// URI, or nullopt when it is not one.
std::optional<std::string> KeyOfUri(std::string_view uri, bool* history) {
  if (uri.substr(0, kUriPrefix.size()) != kUriPrefix) return std::nullopt;
  std::string_view rest = uri.substr(kUriPrefix.size());
  *history = rest.size() > kHistorySuffix.size() &&
             rest.substr(rest.size() - kHistorySuffix.size()) == kHistorySuffix;
  if (*history) rest.remove_suffix(kHistorySuffix.size());
  if (rest.empty() || rest.find('/') != std::string_view::npos) return std::nullopt;
  auto key = PercentDecode(rest, /*plus_is_space=*/false);
  if (!key || key->empty()) return std::nullopt;
  return key;
}

// The session key of a statewatch:// URI given as the JSON value `uri` (params.uri), or
// nullopt when it is absent, not a string or not such a URI.
std::optional<std::string> KeyOfUriValue(const json::value* uri, bool* history) {
  if (uri == nullptr || !uri->is_string()) return std::nullopt;
  return KeyOfUri(uri->as_string(), history);
}

std::string BodyOf(std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  json::object o;
  for (const auto& [k, v] : fields) o[k] = v;
  return json::serialize(o);
}

}  // namespace

std::string McpResourceUri(std::string_view session_key, bool history) {
  return std::string(kUriPrefix) + PercentEncode(session_key) +
         (history ? std::string(kHistorySuffix) : "");
}

const json::array& McpServer::Tools() {
  static const json::array* tools = new json::array(BuildTools());
  return *tools;
}

ApiResponse McpServer::Dispatch(const Caller& caller, std::string_view method, std::string target,
                                std::string body, std::function<void(ApiResponse)> respond) const {
  ApiRequest inner;
  inner.method = method;
  inner.target = target;
  inner.body = body;
  inner.session_key = caller.session_key;
  inner.agent_id = caller.agent_id;
  inner.authorization = caller.authorization;
  inner.respond = std::move(respond);
  // A tool call through MCP keeps the caller's trace context as POST /v1/tools/<name> would.
  const std::string traceparent = caller.traceparent;
  inner.header = [&traceparent](std::string_view name) -> std::string_view {
    return ascii::EqualsIgnoreCase(name, "traceparent") ? std::string_view(traceparent)
                                                          : std::string_view();
  };
  // The inner route's answer is not this request's: under an X-Request-Id its writes carry
  // this request's seal, but it renders nothing into it (the ledger writes the MCP answer).
  RequestSeal* seal = ArmedRequestSeal();
  if (seal != nullptr) seal->HoldAnswers(true);
  ApiResponse answer = services_.dispatch(inner);
  if (seal != nullptr) seal->HoldAnswers(false);
  return answer;
}

namespace {

// An HTTP error answer as a JSON-RPC error: 404 resource not found, 400 invalid params,
// anything else internal; data carries the HTTP status and error envelope.
struct HttpError {
  int code;
  std::string message;
  json::value data;
};
HttpError FromHttp(const ApiResponse& r) {
  boost::system::error_code ec;
  json::value body = json::parse(r.body, ec);
  std::string message = "HTTP " + std::to_string(r.status);
  json::object data{{"status", r.status}};
  if (!ec && body.is_object()) {
    if (const json::value* e = body.as_object().if_contains("error"); e && e->is_object()) {
      if (const json::value* m = e->as_object().if_contains("message"); m && m->is_string()) {
        message = m->as_string();
      }
      data["error"] = *e;
    }
  }
  int code = r.status == 404 ? kResourceNotFound : r.status == 400 ? kInvalidParams : kInternalError;
  return {code, std::move(message), std::move(data)};
}

}  // namespace

McpServer::Reply McpServer::HttpErrorReply(const ApiResponse& r) {
  HttpError e = FromHttp(r);
  Reply reply;
  reply.code = e.code;
  reply.message = std::move(e.message);
  reply.data = std::move(e.data);
  return reply;
}

McpServer::Reply McpServer::Call(const Caller& caller, std::string_view method,
                                 const json::value& params, const ApiRequest& request,
                                 const json::value& id) {
  const json::object& p = params.as_object();
  Reply reply;
  if (method == "ping") {
    reply.result = json::object();
  } else if (method == "tools/list") {
    reply.result = json::object{{"tools", Tools()}};
  } else if (method == "tools/call") {
    return CallTool(caller, p, request, id);
  } else if (method == "resources/list") {
    return ListResources(caller);
  } else if (method == "resources/templates/list") {
    auto templ = [](const char* uri, const char* name, const char* description) {
      return json::object{{"uriTemplate", uri},
                          {"name", name},
                          {"description", description},
                          {"mimeType", "application/json"}};
    };
    reply.result = json::object{
        {"resourceTemplates",
         json::array{templ("statewatch://sessions/{key}", "session-status",
                           "A session's status card (session_status); subscribe to hear when "
                           "it changes."),
                     templ("statewatch://sessions/{key}/history", "session-history",
                           "A session's cleaned transcript (sessions_history).")}}};
  } else if (method == "resources/read") {
    return ReadResource(caller, p);
  } else if (method == "resources/subscribe") {
    return Subscribe(caller, p);
  } else if (method == "resources/unsubscribe") {
    return Unsubscribe(caller, p);
  } else {
    reply.code = kMethodNotFound;
    reply.message = "Method not found: " + std::string(method);
  }
  return reply;
}

McpServer::Reply McpServer::CallTool(const Caller& caller, const json::object& params,
                                     const ApiRequest& request, const json::value& id) {
  Reply reply;
  const json::value* name = params.if_contains("name");
  const json::value* arguments = params.if_contains("arguments");
  if (!name || !name->is_string()) {
    reply.code = kInvalidParams;
    reply.message = "Invalid params: tools/call needs params.name, a string";
    return reply;
  }
  std::string tool(name->as_string());
  if (!IsTool(tool)) {
    reply.code = kInvalidParams;
    reply.message = "Unknown tool: " + tool + " (this server answers " + ToolNames() + ")";
    reply.data = json::object{{"code", "unknown_tool"}};
    return reply;
  }
  if (arguments && !arguments->is_object() && !arguments->is_null()) {
    reply.code = kInvalidParams;
    reply.message = "Invalid params: the arguments of " + tool + " must be an object";
    return reply;
  }
  std::string body = arguments && arguments->is_object() ? json::serialize(*arguments) : "{}";
  std::function<void(ApiResponse)> respond;
  if (request.respond) {  // a sessions_send that waits answers later, as over HTTP
    respond = [outer = request.respond, id](ApiResponse r) {
      if (r.parked) return;
      ApiResponse answer;
      answer.body = McpResultMessage(id, ToolResult(r));
      outer(std::move(answer));
    };
  }
  ApiResponse r = Dispatch(caller, "POST", "/v1/tools/" + tool, std::move(body), respond);
  if (r.parked) {
    reply.parked = true;
    reply.run_id = r.run_id;
    return reply;
  }
  if (std::string text = ToolResultText(r); !text.empty()) {
    reply.result_text = std::move(text);
  } else {
    reply.result = ToolResult(r);
  }
  return reply;
}

McpServer::Reply McpServer::ListResources(const Caller& caller) {
  Reply reply;
  ApiResponse r = Dispatch(caller, "POST", "/v1/tools/sessions_list", "{}");
  if (r.status >= 400) {
    return HttpErrorReply(r);
  }
  json::array resources;
  json::value body = json::parse(r.body);
  for (const json::value& row : body.as_object().at("sessions").as_array()) {
    const json::object& o = row.as_object();
    std::string key(o.at("key").as_string());
    json::object resource{{"uri", McpResourceUri(key, false)},
                          {"name", key},
                          {"mimeType", "application/json"}};
    if (const json::value* title = o.if_contains("displayName"); title && title->is_string()) {
      resource["title"] = *title;
    }
    resources.push_back(std::move(resource));
  }
  reply.result = json::object{{"resources", std::move(resources)}};
  return reply;
}

McpServer::Reply McpServer::ReadResource(const Caller& caller, const json::object& params) {
  Reply reply;
  const json::value* uri = params.if_contains("uri");
  bool history = false;
  const std::optional<std::string> key = KeyOfUriValue(uri, &history);
  if (!key) {
    reply.code = kInvalidParams;
    reply.message = "Invalid params: uri must be statewatch://sessions/{key} or "
                    "statewatch://sessions/{key}/history (got " +
                    (uri ? json::serialize(*uri) : std::string("nothing")) + ")";
    return reply;
  }
  ApiResponse r = Dispatch(caller, "POST",
                           history ? "/v1/tools/sessions_history" : "/v1/tools/session_status",
                           BodyOf({{"sessionKey", *key}}));
  if (r.status >= 400) {
    return HttpErrorReply(r);
  }
  AcknowledgeRead(caller, *key);
  reply.result = json::object{
      {"contents", json::array{json::object{{"uri", uri->as_string()},
                                            {"mimeType", "application/json"},
                                            {"text", TrimNewline(r.body)}}}}};
  return reply;
}

void McpServer::AcknowledgeRead(const Caller& caller, const std::string& key) {
  if (!services_.acknowledge) return;
  std::vector<std::pair<std::string, SessionName>> seen;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const Session::Subscription& s : caller.session->subscriptions) {
      bool history = false;
      auto subscribed = KeyOfUri(s.uri, &history);
      if (subscribed && *subscribed == key) seen.emplace_back(s.watcher, s.target);
    }
  }
  for (const auto& [watcher, target] : seen) services_.acknowledge(watcher, target);
}

McpServer::Reply McpServer::Subscribe(const Caller& caller, const json::object& params) {
  Reply reply;
  const json::value* uri = params.if_contains("uri");
  bool history = false;
  const std::optional<std::string> key = KeyOfUriValue(uri, &history);
  auto invalid = [&](std::string message) {
    reply.code = kInvalidParams;
    reply.message = "Invalid params: " + std::move(message);
    return reply;
  };
  if (!key) return invalid("uri must be statewatch://sessions/{key}[/history]");
  auto watcher = ParseSessionKey(caller.session_key);
  if (!watcher.ok() || !watcher->agent_scoped) {
    return invalid("resources/subscribe watches as the MCP session's caller, which must be an "
                   "agent-scoped key (agent:<id>:<rest>) in X-Session-Key (got \"" +
                   caller.session_key + "\")");
  }
  // Visibility first, as the caller: the status card answers only what it may see.
  ApiResponse status = Dispatch(caller, "POST", "/v1/tools/session_status",
                                BodyOf({{"sessionKey", *key}}));
  if (status.status >= 400) {
    return HttpErrorReply(status);
  }
  json::object card = json::parse(status.body).as_object();
  SessionName target{std::string(card.at("agentId").as_string()),
                     std::string(card.at("sessionKey").as_string())};
  ApiResponse watch = Dispatch(caller, "POST", "/v1/watches",
                               BodyOf({{"watcher", watcher->canonical},
                                       {"target", target.session_key},
                                       {"targetAgentId", target.agent_id}}));
  if (watch.status >= 400) {
    return HttpErrorReply(watch);
  }
  if (!json::parse(watch.body).as_object().at("watched").as_bool()) {
    return invalid("the engine refused the watch of " + target.session_key + " by " +
                   watcher->canonical + " (a session does not watch itself)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& subs = caller.session->subscriptions;
  std::string text(uri->as_string());
  auto same = [&](const Session::Subscription& s) {
    return s.uri == text && s.watcher == watcher->canonical;
  };
  if (std::none_of(subs.begin(), subs.end(), same)) {
    if (static_cast<int>(subs.size()) >= options_.max_subscriptions) {
      return invalid("this MCP session holds its maximum of " +
                     std::to_string(options_.max_subscriptions) + " subscriptions");
    }
    subs.push_back({text, watcher->canonical, std::move(target)});
  }
  reply.result = json::object();
  return reply;
}

McpServer::Reply McpServer::Unsubscribe(const Caller& caller, const json::object& params) {
  Reply reply;
  const json::value* uri = params.if_contains("uri");
  if (!uri || !uri->is_string()) {
    reply.code = kInvalidParams;
    reply.message = "Invalid params: resources/unsubscribe needs params.uri, a string";
    return reply;
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto& subs = caller.session->subscriptions;
  subs.erase(std::remove_if(subs.begin(), subs.end(),
                            [&](const Session::Subscription& s) { return s.uri == uri->as_string(); }),
             subs.end());
  reply.result = json::object();
  return reply;
}

}  // namespace statewatch::server

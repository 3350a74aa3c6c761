// McpServer: the HTTP side of the MCP endpoint (sessions, the JSON-RPC envelope, the GET
// stream, notifications). The methods themselves are in mcp_methods.cc.
#include "server/mcp_server.h"

#include <algorithm>
#include <deque>
#include <random>

#include "base/ascii.h"
#include "base/hex.h"
#include "server/mcp_session.h"
#include "statewatch/version.h"

namespace statewatch::server {
namespace json = boost::json;

// JSON-RPC 2.0 error codes (and MCP's resource-not-found).
// The GET stream of one session. Guarded by the server's mutex, like the session.
class McpServer::Session::Stream : public EventStream,
                                   public std::enable_shared_from_this<Session::Stream> {
 public:
  Stream(McpServer* server, std::shared_ptr<Session> session)
      : server_(server), session_(std::move(session)) {}

  void Attach(Sink sink) override {
    std::shared_ptr<Stream> replaced;
    {
      std::lock_guard<std::mutex> lock(server_->mu_);
      sink_ = std::move(sink);
      if (session_->deleted) {
        sink_.end();
        return;
      }
      replaced = std::exchange(session_->stream, shared_from_this());
      // A priming event (an id, no data): the client may resume from here.
      sink_.write("id: " + std::to_string(session_->next_event_id++) + "\ndata:\n\n");
      for (std::string& message : session_->held) WriteLocked(std::move(message));
      session_->held.clear();
    }
    if (replaced) replaced->End();
  }

  void Detach() override {
    std::lock_guard<std::mutex> lock(server_->mu_);
    sink_ = {};
    if (session_->stream.get() == this) {
      session_->stream.reset();
      session_->last_used_ms = server_->services_.clock->NowMs();
    }
  }

  // REQUIRES: the server's mutex is held.
  void WriteLocked(std::string message) {
    if (!sink_.write) return;
    sink_.write("id: " + std::to_string(session_->next_event_id++) +
                "\nevent: message\ndata: " + message + "\n\n");
  }

  // Ends the client's stream (session deleted or replaced by a newer GET).
  void End() {
    std::function<void()> end;
    {
      std::lock_guard<std::mutex> lock(server_->mu_);
      end = sink_.end;
    }
    if (end) end();
  }

 private:
  McpServer* server_;
  std::shared_ptr<Session> session_;
  Sink sink_;  // guarded by server_->mu_
};

namespace {

std::string NewSessionId() {
  static thread_local std::random_device device;
  std::string bytes(16, '\0');
  for (std::size_t i = 0; i < bytes.size(); i += 4) {
    uint32_t r = device();
    for (std::size_t j = 0; j < 4; ++j) bytes[i + j] = static_cast<char>(r >> (8 * j));
  }
  return hex::Encode(bytes);
}

bool SupportedVersion(std::string_view version) {
  return std::any_of(std::begin(kMcpProtocolVersions), std::end(kMcpProtocolVersions),
                     [&](const char* v) { return version == v; });
}

std::string_view Header(const ApiRequest& request, std::string_view name) {
  return request.header ? request.header(name) : std::string_view();
}

// A JSON answer (ended by a newline, as every answer of the API); none for 202.
ApiResponse Answer(int status, std::string body) {
  ApiResponse r;
  r.status = status;
  r.body = std::move(body);
  if (!r.body.empty()) r.body += '\n';
  return r;
}

// A refusal before any JSON-RPC method runs: the HTTP API's error envelope (Streamable HTTP
// asks for an HTTP error status; the body is the API's, so every /mcp error is documented as
// every other route's). The message names the JSON-RPC error it stands for, if any.
ApiResponse Refuse(int status, std::string_view code, std::string message) {
  return Api::Error(status, code, message);
}

// A JSON-RPC id is a string or an integer (MCP: never null).
bool ValidId(const json::value& id) { return id.is_string() || id.is_int64() || id.is_uint64(); }

json::object InitializeResult(const std::string& version) {
  return json::object{
      {"protocolVersion", version},
      {"capabilities",
       json::object{{"tools", json::object{{"listChanged", false}}},
                    {"resources", json::object{{"subscribe", true}, {"listChanged", false}}}}},
      {"serverInfo", json::object{{"name", "statewatch"}, {"version", kVersion}}},
      {"instructions",
       "Session state awareness for the agent sessions of this gateway. The tools are the "
       "session tools of the HTTP API (POST /v1/tools/<name>), called as the MCP session's "
       "caller (X-Session-Key). Subscribe to statewatch://sessions/{key} to hear when a "
       "session you watch changes."}};
}

}  // namespace

std::string McpResultMessage(const json::value& id, json::value result) {
  return json::serialize(
      json::object{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}});
}

std::string McpErrorMessage(const json::value& id, int code, std::string_view message,
                            json::value data) {
  json::object error{{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = std::move(data);
  json::object out{{"jsonrpc", "2.0"}};
  if (!id.is_null()) out["id"] = id;  // an error about no particular request has no id
  out["error"] = std::move(error);
  return json::serialize(out);
}

McpServer::McpServer(Services services, McpOptions options)
    : services_(std::move(services)), options_(options) {}

McpServer::~McpServer() {
  // A stream the transport never detached (a forced shutdown) and its session hold each
  // other: break the cycle. The transport is gone by now (the daemon destroys it first).
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, session] : sessions_) session->stream.reset();
}

std::size_t McpServer::SessionCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sessions_.size();
}

ApiResponse McpServer::Handle(const ApiRequest& request) {
  if (request.method == "POST") return Post(request);
  if (request.method == "GET" || request.method == "HEAD") return Get(request);
  if (request.method == "DELETE") return Delete(request);
  ApiResponse r = Api::Error(405, "method_not_allowed",
                             std::string(request.method) + " is not allowed on /mcp");
  r.allow = "GET, POST, DELETE";
  return r;
}

std::shared_ptr<McpServer::Session> McpServer::FindSession(const ApiRequest& request,
                                                           ApiResponse* error) {
  std::string_view id = Header(request, "Mcp-Session-Id");
  if (id.empty()) {
    *error = Refuse(400, "mcp_session_required",
                    "Mcp-Session-Id header required: send initialize first and repeat the "
                    "Mcp-Session-Id it answers on every later request");
    return nullptr;
  }
  std::string_view version = Header(request, "MCP-Protocol-Version");
  if (!version.empty() && !SupportedVersion(version)) {
    *error = Refuse(400, "unsupported_protocol_version",
                    "unsupported MCP-Protocol-Version \"" + std::string(version) +
                        "\" (this server speaks 2025-11-25, 2025-06-18, 2025-03-26)");
    return nullptr;
  }
  int64_t now = services_.clock->NowMs();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(std::string(id));
  bool found = it != sessions_.end() && it->second->authorization == request.authorization;
  if (found && !it->second->stream && now - it->second->last_used_ms >= options_.idle_timeout_ms) {
    it->second->deleted = true;
    sessions_.erase(it);
    found = false;
  }
  if (!found) {
    *error = Refuse(404, "unknown_mcp_session",
                    "unknown MCP session \"" + std::string(id) +
                        "\" (expired, deleted, or created with another token): initialize again");
    return nullptr;
  }
  it->second->last_used_ms = now;
  return it->second;
}

void McpServer::ExpireIdleLocked(int64_t now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = *it->second;
    if (!s.stream && now - s.last_used_ms >= options_.idle_timeout_ms) {
      s.deleted = true;
      it = sessions_.erase(it);
    } else {
      ++it;
    }
  }
}

ApiResponse McpServer::Post(const ApiRequest& request) {
  boost::system::error_code ec;
  json::value message = json::parse(request.body, ec);
  if (ec) {
    return Refuse(400, "invalid_json",
                  "Parse error (JSON-RPC -32700): the body is not JSON (" + ec.message() + ")");
  }
  if (message.is_array()) {
    return Refuse(400, "invalid_request",
                  "Invalid Request (JSON-RPC -32600): batches are not part of MCP since 2025-06-18; send "
                  "one message per POST");
  }
  const json::object* object = message.if_object();
  const json::value* jsonrpc = object ? object->if_contains("jsonrpc") : nullptr;
  if (!jsonrpc || !jsonrpc->is_string() || jsonrpc->as_string() != "2.0") {
    return Refuse(400, "invalid_request",
                  "Invalid Request (JSON-RPC -32600): a JSON-RPC 2.0 message is an object with \"jsonrpc\": \"2.0\"");
  }
  const json::value* method = object->if_contains("method");
  const json::value* id = object->if_contains("id");
  if (!method) {  // a response or an error from the client: this server asks nothing
    if (id && (object->contains("result") || object->contains("error"))) return Answer(202, "");
    return Refuse(400, "invalid_request", "Invalid Request (JSON-RPC -32600): no \"method\"");
  }
  if (!method->is_string() || (id && !ValidId(*id))) {
    return Refuse(400, "invalid_request",
                  "Invalid Request (JSON-RPC -32600): \"method\" must be a string and \"id\" a string or an "
                  "integer");
  }
  std::string_view name = method->as_string();
  const json::value* params = object->if_contains("params");
  if (params && !params->is_object()) {
    if (!id) return Answer(202, "");
    return Answer(200, McpErrorMessage(*id, -32602,
                                       "Invalid params: \"params\" of " + std::string(name) +
                                           " must be an object"));
  }
  static const json::object kNoParams;
  const json::object& p = params ? params->as_object() : kNoParams;
  if (name == "initialize" && id) return Initialize(request, *id, p);
  ApiResponse error;
  std::shared_ptr<Session> session = FindSession(request, &error);
  if (!session) return error;
  if (!id) return Answer(202, "");  // notifications/initialized, cancelled, ...: noted
  Caller caller{std::string(request.session_key), std::string(request.agent_id),
                std::string(request.authorization), session->protocol_version, session,
                request.header ? std::string(request.header("traceparent")) : std::string()};
  if (caller.session_key.empty()) {
    caller.session_key = session->session_key;
    caller.agent_id = session->agent_id;
  }
  Reply reply = Call(caller, name, params ? *params : json::value(json::object()), request, *id);
  if (reply.parked) {
    ApiResponse r;
    r.parked = true;
    r.run_id = std::move(reply.run_id);
    return r;
  }
  if (reply.code != 0) {
    return Answer(200, McpErrorMessage(*id, reply.code, reply.message, std::move(reply.data)));
  }
  if (!reply.result_text.empty()) {
    return Answer(200, R"({"jsonrpc":"2.0","id":)" + json::serialize(*id) + R"(,"result":)" +
                           reply.result_text + "}");
  }
  return Answer(200, McpResultMessage(*id, std::move(reply.result)));
}

ApiResponse McpServer::Initialize(const ApiRequest& request, const json::value& id,
                                  const json::object& params) {
  const json::value* asked = params.if_contains("protocolVersion");
  if (!asked || !asked->is_string()) {
    return Answer(200, McpErrorMessage(id, -32602,
                                       "Invalid params: initialize needs params.protocolVersion, "
                                       "a string"));
  }
  // The client's version when this server speaks it, else the newest it speaks.
  std::string version(asked->as_string());
  if (!SupportedVersion(version)) version = kMcpProtocolVersions[0];
  auto session = std::make_shared<Session>();
  session->id = NewSessionId();
  session->session_key = std::string(request.session_key);
  session->agent_id = std::string(request.agent_id);
  session->authorization = std::string(request.authorization);
  session->protocol_version = version;
  int64_t now = services_.clock->NowMs();
  session->last_used_ms = now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (static_cast<int>(sessions_.size()) >= options_.max_sessions) ExpireIdleLocked(now);
    if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
      return Refuse(503, "too_many_mcp_sessions",
                    "this server holds its maximum of " + std::to_string(options_.max_sessions) +
                        " MCP sessions; DELETE unused ones or retry later");
    }
    sessions_[session->id] = session;
  }
  ApiResponse r = Answer(200, McpResultMessage(id, InitializeResult(version)));
  r.headers.emplace_back("Mcp-Session-Id", session->id);
  return r;
}

ApiResponse McpServer::Get(const ApiRequest& request) {
  ApiResponse error;
  std::shared_ptr<Session> session = FindSession(request, &error);
  if (!session) return error;
  std::string accept = ascii::AsciiToLower(Header(request, "Accept"));
  if (!accept.empty() && accept.find("text/event-stream") == std::string::npos &&
      accept.find("*/*") == std::string::npos) {
    return Refuse(406, "not_acceptable",
                  "GET /mcp answers text/event-stream only (Accept: " + accept + ")");
  }
  ApiResponse r = Answer(200, "");
  r.content_type = "text/event-stream";
  r.headers.emplace_back("Mcp-Session-Id", session->id);
  if (request.method == "GET") r.events = std::make_shared<Session::Stream>(this, session);
  return r;
}

ApiResponse McpServer::Delete(const ApiRequest& request) {
  ApiResponse error;
  std::shared_ptr<Session> session = FindSession(request, &error);
  if (!session) return error;
  std::shared_ptr<Session::Stream> stream;
  {
    std::lock_guard<std::mutex> lock(mu_);
    session->deleted = true;
    sessions_.erase(session->id);
    stream = std::move(session->stream);
  }
  if (stream) stream->End();
  return Answer(200, "{\"deleted\":true}");
}

void McpServer::Notify(const std::shared_ptr<Session>& session, std::string message) {
  // REQUIRES: mu_ held (OnWake).
  if (session->stream) return session->stream->WriteLocked(std::move(message));
  auto& held = session->held;
  if (std::find(held.begin(), held.end(), message) != held.end()) return;  // once is enough
  if (static_cast<int>(held.size()) >= options_.max_queued_notifications) held.pop_front();
  held.push_back(std::move(message));
}

void McpServer::OnWake(const Wake& wake) {
  constexpr std::string_view kPrefix = "session-state:";
  std::string_view reason = wake.reason;
  std::string_view woken = reason.substr(0, kPrefix.size()) == kPrefix
                               ? reason.substr(kPrefix.size())
                               : std::string_view();
  auto watched = [&](const Session::Subscription& s) { return s.watcher == wake.watcher_key; };
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool any = std::any_of(sessions_.begin(), sessions_.end(), [&](const auto& entry) {
      const auto& subs = entry.second->subscriptions;
      return std::any_of(subs.begin(), subs.end(), watched);
    });
    if (!any) return;
  }
  // A wake merged within the 20 s window names only its latest target: the watcher's pending
  // notices name the others (read outside the lock: the engine takes its own).
  std::vector<SessionName> pending;
  if (services_.pending_targets) pending = services_.pending_targets(wake.watcher_key);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [id, session] : sessions_) {
    for (const Session::Subscription& s : session->subscriptions) {
      if (!watched(s)) continue;
      bool changed = s.target.session_key == woken ||
                     std::find(pending.begin(), pending.end(), s.target) != pending.end();
      if (!changed) continue;
      Notify(session, json::serialize(json::object{
                          {"jsonrpc", "2.0"},
                          {"method", "notifications/resources/updated"},
                          {"params", json::object{{"uri", s.uri}}}}));
    }
  }
}

}  // namespace statewatch::server

// McpServer: the Model Context Protocol endpoint of `statewatch serve` at /mcp (MCP
// 2025-11-25, Streamable HTTP transport; 2025-06-18 and 2025-03-26 clients are answered in
// their version). It is a front door over the HTTP API, never a second implementation:
//   - tools/list   the route table's "tools" rows (server/route_table.cc), each with its
//                  request schema from server/api_schemas.cc, $refs inlined;
//   - tools/call   POST /v1/tools/<name> through the daemon's own dispatch (Api::Handle), as
//                  the MCP session's caller, with the request's Authorization: scopes,
//                  profiles and visibility apply as over HTTP, and an HTTP error comes back
//                  as a tool result with isError and the error envelope;
//   - resources    statewatch://sessions/{key} (session_status) and …/{key}/history
//                  (sessions_history), read through the same dispatch; resources/subscribe
//                  checks visibility (session_status) then registers a watch
//                  (POST /v1/watches, so Engine::Watch(caller, target)); a wake for the
//                  caller (the engine's 20 s window applies) becomes
//                  notifications/resources/updated on the MCP session's GET stream;
//                  reading a subscribed resource acknowledges that target's notice, so
//                  the next change notifies again (as a drain would).
// The caller is X-Session-Key (+ X-Agent-Id) of the initialize request, kept by the MCP
// session; a later request may name another with the same headers (as over HTTP).
//
// HTTP (the route table's /mcp rows; the token and the request guard apply before this):
//   POST   one JSON-RPC message -> application/json answer (202 for a notification or a
//          response); initialize creates a session and answers its Mcp-Session-Id.
//          Malformed JSON (invalid_json), a batch (not in MCP since 2025-06-18) or an
//          invalid message (invalid_request): 400 with the API's error envelope, naming
//          the JSON-RPC error. Without Mcp-Session-Id (but initialize): 400
//          mcp_session_required; an unknown, expired or deleted session, or one created
//          with another token: 404 unknown_mcp_session. A method's own errors (-32601,
//          -32602, ...) are JSON-RPC error answers (200).
//   GET    the session's server-to-client stream (text/event-stream; 406 when Accept rules
//          it out). One per session: a new GET replaces the old one.
//   DELETE ends the session (204).
//
// Bounds: at most max_sessions sessions (the idle ones beyond expire first, else a new
// initialize is refused 503), at most max_subscriptions per session, at most
// max_queued_notifications held while no stream is attached (the oldest dropped; a
// notification already held is not held twice). A session neither used nor streaming for
// idle_timeout_ms expires (the injected clock).
//
// Thread-safe: requests run on any I/O thread; OnWake on the engine's wake thread.
#ifndef STATEWATCH_SERVER_MCP_SERVER_H_
#define STATEWATCH_SERVER_MCP_SERVER_H_

#include <boost/json.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/api.h"
#include "server/event_stream.h"
#include "statewatch/clock.h"
#include "statewatch/types.h"

namespace statewatch::server {

struct McpOptions {
  int max_sessions = 256;
  int max_subscriptions = 256;            // per session
  int max_queued_notifications = 64;      // per session, while no stream is attached
  int64_t idle_timeout_ms = 30 * 60'000;  // 30 minutes
};

// The MCP protocol versions answered, newest first.
inline constexpr const char* kMcpProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};

class McpServer {
 public:
  struct Services {
    // The daemon's dispatch (Api::Handle): every tool call and resource read goes through it.
    std::function<ApiResponse(const ApiRequest&)> dispatch;
    // The targets of the watcher's pending notices (Engine::PendingNotices); may be empty.
    std::function<std::vector<SessionName>(const std::string& watcher)> pending_targets;
    // Acknowledges the watcher's notice of one target (Engine::Acknowledge): a
    // resources/read of a subscribed resource has shown the change, so the next one opens
    // a new notice (and a new notification). May be empty.
    std::function<void(const std::string& watcher, const SessionName& target)> acknowledge;
    const Clock* clock = nullptr;  // idle expiry; not owned
  };
  McpServer(Services services, McpOptions options);
  ~McpServer();
  McpServer(const McpServer&) = delete;
  McpServer& operator=(const McpServer&) = delete;

  // Sets Services::dispatch (the Api is made after the McpServer it routes to). Before
  // serving: not thread-safe.
  void SetDispatch(std::function<ApiResponse(const ApiRequest&)> dispatch) {
    services_.dispatch = std::move(dispatch);
  }

  // Answers one request to /mcp (POST, GET, DELETE; see above).
  ApiResponse Handle(const ApiRequest& request);

  // A wake of the engine (subscribe it to Engine::SubscribeWakes): every MCP session
  // subscribed, as that watcher, to the wake's target or to a target with a pending notice
  // gets notifications/resources/updated for the subscribed URIs.
  void OnWake(const Wake& wake);

  // How many MCP sessions are open (for tests and metrics).
  std::size_t SessionCount() const;

  // The tools/list answer's tools, derived from the route table (for tests and the docs).
  static const boost::json::array& Tools();

  struct Session;  // internal (mcp_server.cc)

 private:
  // The answer of one JSON-RPC request: a result or an error object.
  struct Reply {
    boost::json::value result;  // when ok
    std::string result_text;    // when ok and not empty: the result, serialized already
    int code = 0;               // a JSON-RPC error code otherwise
    std::string message;
    boost::json::value data;
    bool parked = false;  // tools/call waits for a sessions_send reply
    std::string run_id;
  };
  // Who a request acts as.
  struct Caller {
    std::string session_key;
    std::string agent_id;
    std::string authorization;
    std::string protocol_version;
    std::shared_ptr<Session> session;
    std::string traceparent;  // the MCP request's traceparent header, passed to the tool
  };

  ApiResponse Post(const ApiRequest& request);
  ApiResponse Get(const ApiRequest& request);
  ApiResponse Delete(const ApiRequest& request);
  ApiResponse Initialize(const ApiRequest& request, const boost::json::value& id,
                         const boost::json::object& params);
  // The session of the request's Mcp-Session-Id, or the error answer.
  std::shared_ptr<Session> FindSession(const ApiRequest& request, ApiResponse* error);
  void ExpireIdleLocked(int64_t now);

  // The methods (mcp_methods.cc).
  Reply Call(const Caller& caller, std::string_view method, const boost::json::value& params,
             const ApiRequest& request, const boost::json::value& id);
  Reply CallTool(const Caller& caller, const boost::json::object& params,
                 const ApiRequest& request, const boost::json::value& id);
  Reply ListResources(const Caller& caller);
  Reply ReadResource(const Caller& caller, const boost::json::object& params);
  void AcknowledgeRead(const Caller& caller, const std::string& key);
  Reply Subscribe(const Caller& caller, const boost::json::object& params);
  Reply Unsubscribe(const Caller& caller, const boost::json::object& params);
  // An HTTP error answer as a JSON-RPC error (404: resource not found; 400: invalid params;
  // else internal), its status and error envelope as data.
  static Reply HttpErrorReply(const ApiResponse& r);
  // One call of the HTTP API as the caller.
  ApiResponse Dispatch(const Caller& caller, std::string_view method, std::string target,
                       std::string body, std::function<void(ApiResponse)> respond = {}) const;

  void Notify(const std::shared_ptr<Session>& session, std::string message);

  Services services_;
  McpOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;  // by id; guarded by mu_
};

// The JSON-RPC message texts (exposed for tests).
std::string McpResultMessage(const boost::json::value& id, boost::json::value result);
std::string McpErrorMessage(const boost::json::value& id, int code, std::string_view message,
                            boost::json::value data = nullptr);

// statewatch://sessions/<percent-encoded key>[/history]
std::string McpResourceUri(std::string_view session_key, bool history);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_MCP_SERVER_H_

// McpServer's JSON-RPC handling without sockets: a fake dispatch stands in for the Api (it
// records what the MCP endpoint asks of the HTTP API and answers canned bodies) and a
// manual clock drives idle expiry. The real daemon end to end: tests/mcp (make test-mcp).
#include "server/mcp_server.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <string>
#include <vector>

#include "server/route_table.h"
#include "statewatch/request_ids.h"

namespace statewatch::server {
namespace {
namespace json = boost::json;

constexpr int64_t kStart = 1764460800000;

ApiResponse Ok(std::string body) {
  ApiResponse r;
  r.body = std::move(body);
  return r;
}

struct Seen {
  std::string method, target, body, session_key, agent_id, authorization, traceparent;
};

class McpServerTest : public ::testing::Test {
 protected:
  explicit McpServerTest(McpOptions options = Small()) { Make(options); }

  static McpOptions Small() {
    McpOptions o;
    o.max_sessions = 2;
    o.max_subscriptions = 2;
    o.max_queued_notifications = 2;
    o.idle_timeout_ms = 60'000;
    return o;
  }

  void Make(McpOptions options) {
    McpServer::Services services;
    services.dispatch = [this](const ApiRequest& r) {
      seen_.push_back({std::string(r.method), std::string(r.target), std::string(r.body),
                       std::string(r.session_key), std::string(r.agent_id),
                       std::string(r.authorization),
                       r.header ? std::string(r.header("traceparent")) : std::string()});
      auto it = answers_.find(std::string(r.target));
      if (it != answers_.end()) return it->second;
      return Api::Error(404, "not_found", "no route for " + std::string(r.target));
    };
    services.pending_targets = [this](const std::string&) { return pending_; };
    services.clock = &clock_;
    mcp_ = std::make_unique<McpServer>(std::move(services), options);
  }

  // A POST /mcp with `headers` (Mcp-Session-Id, ...).
  ApiResponse Post(const std::string& body, std::map<std::string, std::string> headers = {},
                   std::string key = "", std::string token = "Bearer t") {
    headers_ = std::move(headers);
    body_ = body;
    key_ = std::move(key);
    token_ = std::move(token);
    ApiRequest r;
    r.method = "POST";
    r.target = "/mcp";
    r.body = body_;
    r.session_key = key_;
    r.authorization = token_;
    r.header = [this](std::string_view name) -> std::string_view {
      for (const auto& [k, v] : headers_) {
        if (k.size() == name.size() &&
            std::equal(k.begin(), k.end(), name.begin(),
                       [](char a, char b) { return std::tolower(a) == std::tolower(b); })) {
          return v;
        }
      }
      return {};
    };
    return mcp_->Handle(r);
  }

  // initialize as `key`; returns the session id.
  std::string Initialize(const std::string& key = "agent:main:main") {
    ApiResponse r = Post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
        "protocolVersion":"2025-11-25","capabilities":{},
        "clientInfo":{"name":"t","version":"1"}}})",
                         {}, key);
    EXPECT_EQ(r.status, 200) << r.body;
    for (const auto& [name, value] : r.headers) {
      if (name == "Mcp-Session-Id") return value;
    }
    ADD_FAILURE() << "no Mcp-Session-Id";
    return "";
  }

  // One request in session `id`; the parsed JSON-RPC answer.
  json::object Call(const std::string& id, const std::string& method, const std::string& params,
                    int* status = nullptr) {
    ApiResponse r = Post(R"({"jsonrpc":"2.0","id":7,"method":")" + method +
                             R"(","params":)" + params + "}",
                         {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "2025-11-25"}});
    if (status) *status = r.status;
    return json::parse(r.body).as_object();
  }

  // The HTTP API's error code of a refusal before any method ran.
  static std::string HttpCode(const ApiResponse& r) {
    return std::string(json::parse(r.body).at("error").at("code").as_string());
  }

  static int64_t ErrorCode(const json::object& answer) {
    return answer.at("error").as_object().at("code").as_int64();
  }

  ManualClock clock_{kStart};
  std::unique_ptr<McpServer> mcp_;
  std::vector<Seen> seen_;
  std::map<std::string, ApiResponse> answers_;
  std::vector<SessionName> pending_;
  std::map<std::string, std::string> headers_;
  std::string body_, key_, token_;
};

TEST_F(McpServerTest, MalformedJsonIsRefusedNamingTheParseError) {
  ApiResponse r = Post("{\"jsonrpc\":");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(HttpCode(r), "invalid_json");
  EXPECT_NE(r.body.find("-32700"), std::string::npos) << r.body;
  EXPECT_EQ(mcp_->SessionCount(), 0u);
}

TEST_F(McpServerTest, BatchIsRefusedAsInvalidRequest) {
  // MCP 2025-06-18 removed JSON-RPC batching: the server speaks 2025-11-25.
  ApiResponse r = Post(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(HttpCode(r), "invalid_request");
}

TEST_F(McpServerTest, NotJsonRpcIsInvalidRequest) {
  for (const char* body : {R"({"id":1,"method":"ping"})", R"({"jsonrpc":"1.0","method":"x"})",
                           R"({"jsonrpc":"2.0","id":null,"method":"ping"})", R"("ping")",
                           R"({"jsonrpc":"2.0","id":1,"method":3})"}) {
    ApiResponse r = Post(body);
    EXPECT_EQ(r.status, 400) << body;
    EXPECT_EQ(HttpCode(r), "invalid_request") << body;
    EXPECT_NE(r.body.find("-32600"), std::string::npos) << r.body;
  }
}

TEST_F(McpServerTest, InitializeAnswersSessionIdAndNegotiatesVersion) {
  ApiResponse r = Post(R"({"jsonrpc":"2.0","id":"a","method":"initialize","params":{
      "protocolVersion":"2025-06-18","capabilities":{}}})");
  ASSERT_EQ(r.status, 200) << r.body;
  json::object answer = json::parse(r.body).as_object();
  EXPECT_EQ(answer.at("id"), "a");
  const json::object& result = answer.at("result").as_object();
  EXPECT_EQ(result.at("protocolVersion"), "2025-06-18");
  EXPECT_TRUE(result.at("capabilities").as_object().at("resources").as_object().at("subscribe")
                  .as_bool());
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].first, "Mcp-Session-Id");
  EXPECT_EQ(r.headers[0].second.size(), 32u);
  // A version this server does not speak: it answers its newest.
  ApiResponse newer = Post(R"({"jsonrpc":"2.0","id":2,"method":"initialize","params":{
      "protocolVersion":"2099-01-01"}})");
  EXPECT_EQ(json::parse(newer.body).at("result").at("protocolVersion"), kMcpProtocolVersions[0]);
}

TEST_F(McpServerTest, InitializeWithoutProtocolVersionIsInvalidParams) {
  ApiResponse r = Post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})");
  EXPECT_EQ(ErrorCode(json::parse(r.body).as_object()), -32602);
  EXPECT_EQ(mcp_->SessionCount(), 0u);
}

TEST_F(McpServerTest, UnknownMethodIsMethodNotFound) {
  std::string id = Initialize();
  json::object answer = Call(id, "tools/frobnicate", "{}");
  EXPECT_EQ(ErrorCode(answer), -32601);
  EXPECT_EQ(answer.at("id"), 7);
  EXPECT_NE(std::string(answer.at("error").at("message").as_string()).find("tools/frobnicate"),
            std::string::npos);
}

TEST_F(McpServerTest, BadParamsAreInvalidParams) {
  std::string id = Initialize();
  EXPECT_EQ(ErrorCode(Call(id, "tools/call", "[1]")), -32602);                      // not an object
  EXPECT_EQ(ErrorCode(Call(id, "tools/call", R"({"arguments":{}})")), -32602);      // no name
  EXPECT_EQ(ErrorCode(Call(id, "tools/call", R"({"name":"nope"})")), -32602);      // unknown
  EXPECT_EQ(ErrorCode(Call(id, "tools/call", R"({"name":"session_status","arguments":3})")),
            -32602);
  EXPECT_EQ(ErrorCode(Call(id, "resources/read", R"({"uri":"http://x/y"})")), -32602);
  EXPECT_EQ(ErrorCode(Call(id, "resources/subscribe", R"({})")), -32602);
  EXPECT_TRUE(seen_.empty()) << "bad params reached the HTTP API: " << seen_[0].target;
}

TEST_F(McpServerTest, RequestsNeedTheSessionIdTheSameTokenAndAKnownVersion) {
  std::string id = Initialize();
  EXPECT_EQ(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})").status, 400);
  EXPECT_EQ(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", {{"Mcp-Session-Id", "beef"}})
                .status,
            404);
  EXPECT_EQ(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", {{"Mcp-Session-Id", id}}, "",
                 "Bearer other")
                .status,
            404);
  EXPECT_EQ(Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})",
                 {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "1999-01-01"}})
                .status,
            400);
  ApiResponse ok = Post(R"({"jsonrpc":"2.0","id":1,"method":"ping"})", {{"Mcp-Session-Id", id}});
  EXPECT_EQ(ok.status, 200);
  EXPECT_TRUE(json::parse(ok.body).at("result").as_object().empty());
}

TEST_F(McpServerTest, NotificationsAndResponsesAreAccepted) {
  std::string id = Initialize();
  ApiResponse r = Post(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                       {{"Mcp-Session-Id", id}});
  EXPECT_EQ(r.status, 202);
  EXPECT_TRUE(r.body.empty());
  EXPECT_EQ(Post(R"({"jsonrpc":"2.0","id":5,"result":{}})", {{"Mcp-Session-Id", id}}).status, 202);
}

TEST_F(McpServerTest, ToolsListIsTheRouteTablesToolRowsWithSelfContainedSchemas) {
  std::string id = Initialize();
  json::object answer = Call(id, "tools/list", "{}");
  std::vector<std::string> listed;
  for (const json::value& t : answer.at("result").at("tools").as_array()) {
    listed.emplace_back(t.at("name").as_string());
    EXPECT_EQ(json::serialize(t.at("inputSchema")).find("$ref"), std::string::npos)
        << t.at("name");
    EXPECT_EQ(t.at("inputSchema").at("type"), "object");
  }
  std::vector<std::string> rows;
  for (const RouteSpec& spec : Routes()) {
    if (std::string_view(spec.tag) == "tools") rows.emplace_back(spec.operation_id);
  }
  EXPECT_EQ(listed, rows);
  EXPECT_FALSE(rows.empty());
}

TEST_F(McpServerTest, ToolsCallRunsTheHttpToolAsTheInitializedCaller) {
  std::string id = Initialize("agent:main:main");
  answers_["/v1/tools/session_status"] = Ok(R"({"sessionKey":"agent:main:main"})");
  json::object answer =
      Call(id, "tools/call", R"({"name":"session_status","arguments":{"changesSince":0}})");
  ASSERT_EQ(seen_.size(), 1u);
  EXPECT_EQ(seen_[0].method, "POST");
  EXPECT_EQ(seen_[0].target, "/v1/tools/session_status");
  EXPECT_EQ(seen_[0].body, R"({"changesSince":0})");
  EXPECT_EQ(seen_[0].session_key, "agent:main:main");
  EXPECT_EQ(seen_[0].authorization, "Bearer t");
  const json::object& result = answer.at("result").as_object();
  EXPECT_FALSE(result.at("isError").as_bool());
  EXPECT_EQ(result.at("structuredContent").at("sessionKey"), "agent:main:main");
  EXPECT_EQ(result.at("content").at(0).at("text"), R"({"sessionKey":"agent:main:main"})");
}

// Under an X-Request-Id, the tool's route runs with the request's seal armed (its writes
// carry the record) and its answers held: the tool's HTTP answer is not the MCP answer.
TEST_F(McpServerTest, AToolsRouteCarriesTheSealButNotItsAnswer) {
  const RequestSeal* armed_inside = nullptr;
  bool held_inside = false;
  McpServer::Services services;
  services.dispatch = [&](const ApiRequest&) {
    armed_inside = ArmedRequestSeal();
    held_inside = armed_inside != nullptr && armed_inside->answers_held();
    return Ok(R"({"sessions":[]})");
  };
  services.pending_targets = [this](const std::string&) { return pending_; };
  services.clock = &clock_;
  mcp_ = std::make_unique<McpServer>(std::move(services), Small());
  std::string id = Initialize("agent:main:main");
  auto seal = std::make_shared<RequestSeal>("m-1", "digest");
  {
    ArmRequestSeal armed(seal);
    Call(id, "tools/call", R"({"name":"sessions_list","arguments":{}})");
  }
  EXPECT_EQ(armed_inside, seal.get());
  EXPECT_TRUE(held_inside);
  EXPECT_FALSE(seal->answers_held()) << "released when the tool answered";
}

TEST_F(McpServerTest, ToolsCallPassesTheRequestsTraceparentToTheTool) {
  std::string id = Initialize("agent:main:main");
  answers_["/v1/tools/session_status"] = Ok(R"({"sessionKey":"agent:main:main"})");
  const std::string trace = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  Post(R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"session_status","arguments":{}}})",
       {{"Mcp-Session-Id", id}, {"MCP-Protocol-Version", "2025-11-25"}, {"traceparent", trace}});
  Call(id, "tools/call", R"({"name":"session_status","arguments":{}})");
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[0].traceparent, trace);
  EXPECT_EQ(seen_[1].traceparent, "");  // a request without one passes none
}

TEST_F(McpServerTest, AnHttpErrorIsAToolResultWithItsCodeAndMessage) {
  std::string id = Initialize();
  answers_["/v1/tools/sessions_send"] =
      Api::Error(403, "insufficient_scope", "the token lacks the \"write\" scope");
  json::object result =
      Call(id, "tools/call", R"({"name":"sessions_send","arguments":{"message":"hi"}})")
          .at("result")
          .as_object();
  EXPECT_TRUE(result.at("isError").as_bool());
  EXPECT_EQ(result.at("structuredContent").at("status"), 403);
  EXPECT_EQ(result.at("structuredContent").at("error").at("code"), "insufficient_scope");
  EXPECT_EQ(result.at("structuredContent").at("error").at("message"),
            "the token lacks the \"write\" scope");
}

TEST_F(McpServerTest, ResourcesReadAndTheirErrors) {
  std::string id = Initialize();
  answers_["/v1/tools/session_status"] = Ok("{\"sessionKey\":\"agent:main:x\"}\n");
  json::object read = Call(id, "resources/read", R"({"uri":"statewatch://sessions/agent:main:x"})");
  EXPECT_EQ(read.at("result").at("contents").at(0).at("text"), R"({"sessionKey":"agent:main:x"})");
  EXPECT_EQ(seen_.back().body, R"({"sessionKey":"agent:main:x"})");
  // The history URI reads sessions_history; its 404 is MCP's resource-not-found.
  answers_["/v1/tools/sessions_history"] = Api::Error(404, "unknown_session", "no such session");
  json::object missing =
      Call(id, "resources/read", R"({"uri":"statewatch://sessions/agent%3Amain%3Ay/history"})");
  EXPECT_EQ(seen_.back().target, "/v1/tools/sessions_history");
  EXPECT_EQ(seen_.back().body, R"({"sessionKey":"agent:main:y"})");
  EXPECT_EQ(ErrorCode(missing), -32002);
  EXPECT_EQ(missing.at("error").at("data").at("error").at("code"), "unknown_session");
}

class McpSubscriptionTest : public McpServerTest {
 protected:
  void SetUp() override {
    answers_["/v1/tools/session_status"] =
        Ok(R"({"sessionKey":"agent:main:worker","agentId":"main"})");
    answers_["/v1/watches"] = Ok(R"({"watched":true})");
  }

  // Attaches a GET stream to `id`; frames land in `frames`.
  std::shared_ptr<EventStream> Attach(const std::string& id, std::vector<std::string>* frames) {
    ApiRequest r;
    r.method = "GET";
    r.target = "/mcp";
    r.authorization = "Bearer t";
    std::map<std::string, std::string> h{{"Mcp-Session-Id", id}};
    r.header = [&h](std::string_view name) -> std::string_view {
      return name == "Mcp-Session-Id" ? std::string_view(h.begin()->second) : std::string_view();
    };
    ApiResponse answer = mcp_->Handle(r);
    EXPECT_EQ(answer.content_type, std::string_view("text/event-stream"));
    EXPECT_TRUE(answer.events);
    answer.events->Attach({[frames](std::string f) { frames->push_back(std::move(f)); },
                           [frames] { frames->push_back("<end>"); }});
    return answer.events;
  }

  static Wake WakeOf(const std::string& target) {
    return Wake{"agent:main:main", "session-state:" + target, kStart};
  }
};

TEST_F(McpSubscriptionTest, SubscribeWatchesAsTheCallerAndAWakeNotifies) {
  std::string id = Initialize("agent:main:main");
  json::object ok = Call(id, "resources/subscribe", R"({"uri":"statewatch://sessions/worker"})");
  ASSERT_TRUE(ok.contains("result")) << json::serialize(ok);
  ASSERT_EQ(seen_.size(), 2u);
  EXPECT_EQ(seen_[0].target, "/v1/tools/session_status");  // visibility, as the caller
  EXPECT_EQ(seen_[1].target, "/v1/watches");
  EXPECT_EQ(json::parse(seen_[1].body),
            json::parse(R"({"watcher":"agent:main:main","target":"agent:main:worker",
                            "targetAgentId":"main"})"));
  std::vector<std::string> frames;
  auto stream = Attach(id, &frames);
  mcp_->OnWake(WakeOf("agent:main:other"));  // not subscribed: nothing
  ASSERT_EQ(frames.size(), 1u);              // the priming event only
  mcp_->OnWake(WakeOf("agent:main:worker"));
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[1].find(R"("method":"notifications/resources/updated")"), std::string::npos);
  EXPECT_NE(frames[1].find(R"("uri":"statewatch://sessions/worker")"), std::string::npos);
  // A merged wake names another target: the pending notices name this one.
  pending_ = {SessionName{"main", "agent:main:worker"}};
  mcp_->OnWake(WakeOf("agent:main:other"));
  EXPECT_EQ(frames.size(), 3u);
  // Unsubscribed: no more.
  Call(id, "resources/unsubscribe", R"({"uri":"statewatch://sessions/worker"})");
  mcp_->OnWake(WakeOf("agent:main:worker"));
  EXPECT_EQ(frames.size(), 3u);
  stream->Detach();
}

TEST_F(McpSubscriptionTest, NotificationsWithoutAStreamAreHeldBoundedAndOnce) {
  std::string id = Initialize("agent:main:main");
  Call(id, "resources/subscribe", R"({"uri":"statewatch://sessions/worker"})");
  Call(id, "resources/subscribe", R"({"uri":"statewatch://sessions/worker/history"})");
  EXPECT_EQ(ErrorCode(Call(id, "resources/subscribe", R"({"uri":"statewatch://sessions/a"})")),
            -32602);  // max_subscriptions = 2
  for (int i = 0; i < 5; ++i) mcp_->OnWake(WakeOf("agent:main:worker"));
  std::vector<std::string> frames;
  auto stream = Attach(id, &frames);
  ASSERT_EQ(frames.size(), 3u);  // priming + one per subscribed URI, held once each
  EXPECT_NE(frames[1].find("sessions/worker\""), std::string::npos);
  EXPECT_NE(frames[2].find("sessions/worker/history"), std::string::npos);
  stream->Detach();
}

TEST_F(McpSubscriptionTest, ABareCallerCannotSubscribe) {
  std::string id = Initialize("main");
  EXPECT_EQ(ErrorCode(Call(id, "resources/subscribe", R"({"uri":"statewatch://sessions/worker"})")),
            -32602);
  EXPECT_TRUE(seen_.empty());
}

TEST_F(McpSubscriptionTest, DeleteEndsTheSessionAndItsStream) {
  std::string id = Initialize();
  std::vector<std::string> frames;
  auto stream = Attach(id, &frames);
  ApiRequest r;
  r.method = "DELETE";
  r.target = "/mcp";
  r.authorization = "Bearer t";
  r.header = [&id](std::string_view name) -> std::string_view {
    return name == "Mcp-Session-Id" ? std::string_view(id) : std::string_view();
  };
  EXPECT_EQ(mcp_->Handle(r).status, 200);
  EXPECT_EQ(frames.back(), "<end>");
  stream->Detach();
  EXPECT_EQ(mcp_->SessionCount(), 0u);
  EXPECT_EQ(mcp_->Handle(r).status, 404);
}

TEST_F(McpServerTest, IdleSessionsExpireAndTheCapRefusesBeyondIt) {
  std::string a = Initialize();
  std::string b = Initialize();
  ApiResponse third = Post(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
      "protocolVersion":"2025-11-25"}})");
  EXPECT_EQ(third.status, 503);  // max_sessions = 2, none idle
  clock_.Advance(30'000);
  Call(a, "ping", "{}");  // a is used: only b goes idle
  clock_.Advance(30'000);
  std::string c = Initialize();  // b expired to make room
  EXPECT_FALSE(c.empty());
  int status = 0;
  Call(b, "ping", "{}", &status);
  EXPECT_EQ(status, 404);
  Call(a, "ping", "{}", &status);
  EXPECT_EQ(status, 200);
  clock_.Advance(60'000);
  Call(a, "ping", "{}", &status);
  EXPECT_EQ(status, 404);  // idle for the whole timeout
}

}  // namespace
}  // namespace statewatch::server

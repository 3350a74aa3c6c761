// The MCP endpoint of the real daemon over HTTP: a tool call through /mcp meets the same
// token scopes and visibility as the same call over POST /v1/tools/<name> (a read token's
// sessions_send, a session outside the caller's tree), and the answers are the API's.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "config/access_tokens.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {
namespace json = boost::json;
using auth::Scope;

const std::string kReadToken = "mcp-read-token-1a2b3c";
const std::string kWriteToken = "mcp-write-token-4d5e6f";

server::ServerOptions ScopedOptions() {
  server::ServerOptions o = TestOptions();
  o.tokens = {{"reader", auth::Sha256(kReadToken), Scope::kRead},
              {"gateway", auth::Sha256(kWriteToken), Scope::kWrite}};
  return o;
}

class McpHttpTest : public ::testing::Test {
 protected:
  Headers As(const std::string& token, const std::string& session = "") {
    Headers h{{"Authorization", "Bearer " + token},
              {"Accept", "application/json, text/event-stream"},
              {"X-Session-Key", kMain}};
    if (!session.empty()) h.emplace_back("Mcp-Session-Id", session);
    return h;
  }

  std::string Initialize(const std::string& token) {
    HttpResult r = http_.Post("/mcp",
                              std::string(R"({"jsonrpc":"2.0","id":1,"method":"initialize",)"
                                          R"("params":{"protocolVersion":"2025-11-25"}})"),
                              As(token));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.headers["mcp-session-id"];
  }

  // tools/call `tool` with `arguments` in `session`: the result object.
  json::object CallTool(const std::string& token, const std::string& session,
                        const std::string& tool, const std::string& arguments) {
    HttpResult r = http_.Post("/mcp",
                              R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":")" +
                                  tool + R"(","arguments":)" + arguments + "}}",
                              As(token, session));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().at("result").as_object();
  }

  TestServer server_{ScopedOptions()};
  HttpClient http_{server_.port()};
};

TEST_F(McpHttpTest, AReadTokenCallsReadToolsButNotSessionsSend) {
  std::string session = Initialize(kReadToken);
  ASSERT_EQ(session.size(), 32u);
  json::object status = CallTool(kReadToken, session, "session_status", "{}");
  EXPECT_FALSE(status.at("isError").as_bool()) << json::serialize(status);
  EXPECT_EQ(status.at("structuredContent").at("sessionKey").as_string(), kMain);
  json::object send =
      CallTool(kReadToken, session, "sessions_send",
               R"({"sessionKey":"agent:main:other","message":"hi","timeoutSeconds":0})");
  EXPECT_TRUE(send.at("isError").as_bool());
  EXPECT_EQ(send.at("structuredContent").at("status"), 403);
  EXPECT_EQ(send.at("structuredContent").at("error").at("code"), "insufficient_scope");
  // The same call over plain HTTP: the same refusal.
  HttpResult plain = http_.Post("/v1/tools/sessions_send",
                                std::string(R"({"sessionKey":"agent:main:other","message":"hi"})"),
                                As(kReadToken));
  EXPECT_EQ(plain.status, 403);
  EXPECT_EQ(plain.error_message(),
            std::string(send.at("structuredContent").at("error").at("message").as_string()));
}

TEST_F(McpHttpTest, VisibilityAppliesAsOverHttp) {
  std::string session = Initialize(kWriteToken);
  ASSERT_EQ(http_.Request("PUT", "/v1/sessions/agent:main:stranger", "{}",
                          {{"Authorization", "Bearer " + kWriteToken}})
                .status,
            200);
  json::object seen = CallTool(kWriteToken, session, "session_status",
                               R"({"sessionKey":"agent:main:stranger"})");
  EXPECT_TRUE(seen.at("isError").as_bool());
  EXPECT_EQ(seen.at("structuredContent").at("status"), 403);
  HttpResult plain = http_.Post("/v1/tools/session_status",
                                std::string(R"({"sessionKey":"agent:main:stranger"})"),
                                As(kWriteToken));
  EXPECT_EQ(plain.status, 403);
  EXPECT_EQ(plain.error_message(),
            std::string(seen.at("structuredContent").at("error").at("message").as_string()));
  // Reading and subscribing to it are refused too.
  HttpResult sub = http_.Post(
      "/mcp",
      std::string(R"({"jsonrpc":"2.0","id":3,"method":"resources/subscribe",)"
                  R"("params":{"uri":"statewatch://sessions/agent:main:stranger"}})"),
      As(kWriteToken, session));
  EXPECT_EQ(sub.json().at("error").at("data").at("status"), 403) << sub.body;
}

TEST_F(McpHttpTest, ASessionBelongsToItsTokenAndEndsWithDelete) {
  std::string session = Initialize(kWriteToken);
  HttpResult other = http_.Post("/mcp", std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"),
                                As(kReadToken, session));
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.error_code(), "unknown_mcp_session");
  HttpResult none = http_.Post("/mcp", std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"),
                               {{"Accept", "application/json"}});
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(http_.Request("DELETE", "/mcp", "", As(kWriteToken, session)).status, 200);
  EXPECT_EQ(http_.Post("/mcp", std::string(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"),
                       As(kWriteToken, session))
                .status,
            404);
}

}  // namespace
}  // namespace statewatch::testing

// No web page can reach the daemon: a foreign Origin is refused (403, also
// on WebSocket upgrades), a body that is not application/json is refused (415) before it is
// read, a Host that does not name this server is refused (421, DNS rebinding), the Bearer
// scheme is matched in any case. Each refusal changes nothing.
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

class BrowserGuardTest : public ServerTest {
 protected:
  void StartServer(server::ServerOptions o = TestOptions()) {
    ServerTest::StartServer(std::move(o));
    // The child in the parent's tree, so that the parent may read its status.
    Headers auth;
    if (!server_->options().token.empty()) {
      auth = {{"Authorization", "Bearer " + server_->options().token}};
    }
    PutSession(*http_, kChild, {{"parentSessionKey", kMain}}, auth);
  }

  // A watcher with one pending notice on kChild.
  void OpenOneNotice() {
    Record(*http_, Event(kChild, "child_spawned", "agent",
                         {{"actorId", kMain}, {"watchers", json::array{kMain}}}));
    Record(*http_, HumanMessage(kChild));
    ASSERT_EQ(Notices(*http_, kMain).size(), 1u);
  }

  // The session's state version, asked by its parent (a leaf sub-agent may not call tools).
  int64_t StateVersion(const std::string& key) {
    HttpResult r = Tool(*http_, "session_status", kMain, json::object{{"sessionKey", key}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json().at("stateVersion").to_number<int64_t>() : -1;
  }

  void ExpectRefused(const HttpResult& r, int status, const std::string& code,
                     const std::string& message_part) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.error_code(), code) << r.body;
    EXPECT_NE(r.error_message().find(message_part), std::string::npos) << r.body;
  }
};

// Regression: a WebSocket to /v1/deliveries with Origin: http://evil.example was accepted
// and received task and message texts. Any Origin not in --allow-origin is refused.
TEST_F(BrowserGuardTest, AForeignOriginIsRefusedOnRequestsAndUpgrades) {
  StartServer();
  const Headers evil{{"Origin", "http://evil.example"}};
  std::string error;
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/deliveries", evil, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "403") << error;
  EXPECT_NE(error.find("forbidden_origin"), std::string::npos) << error;
  EXPECT_EQ(WsClient::Connect(server_->port(), "/v1/wakes", evil, &error), nullptr);
  EXPECT_EQ(error.substr(0, 3), "403") << error;
  ExpectRefused(http_->Get("/v1/notices?watcher=" + kMain, evil), 403, "forbidden_origin",
                "\"http://evil.example\"");
  ExpectRefused(http_->Post("/v1/events", json::value(HumanMessage(kChild)), evil), 403,
                "forbidden_origin", "--allow-origin");
  EXPECT_EQ(StateVersion(kChild), 0);
  // Without an Origin (curl, gateways) all is served.
  auto ws = WsClient::Connect(server_->port(), "/v1/deliveries", {}, &error);
  EXPECT_NE(ws, nullptr) << error;
}

TEST_F(BrowserGuardTest, AnAllowedOriginIsServedInAnyCase) {
  server::ServerOptions o = TestOptions();
  o.allow_origins = {"http://localhost:3000"};
  StartServer(o);
  const Headers ok{{"Origin", "HTTP://LocalHost:3000"}};
  EXPECT_EQ(http_->Get("/v1/notices?watcher=" + kMain, ok).status, 200);
  std::string error;
  EXPECT_NE(WsClient::Connect(server_->port(), "/v1/wakes", ok, &error), nullptr) << error;
  ExpectRefused(http_->Get("/v1/notices?watcher=" + kMain, {{"Origin", "http://localhost:3001"}}),
                403, "forbidden_origin", "localhost:3001");
  ExpectRefused(http_->Get("/healthz", {{"Origin", "null"}}), 403, "forbidden_origin", "null");
}

// Regression: a text/plain POST to /v1/events forged a human_direct_message, and a form
// POST drained notices — both need no CORS preflight. Bodies must be application/json.
TEST_F(BrowserGuardTest, ABodyThatIsNotJsonIsRefusedWith415AndChangesNothing) {
  StartServer();
  OpenOneNotice();
  int64_t version = StateVersion(kChild);
  std::string forged = json::serialize(HumanMessage(kChild));
  ExpectRefused(http_->Post("/v1/events", forged, {{"Content-Type", "text/plain"}}), 415,
                "unsupported_media_type", "Content-Type: application/json (got \"text/plain\")");
  ExpectRefused(http_->Post("/v1/notices/drain", std::string("watcher=agent%3Amain%3Amain"),
                            {{"Content-Type", "application/x-www-form-urlencoded"}}),
                415, "unsupported_media_type", "application/x-www-form-urlencoded");
  ExpectRefused(http_->Post("/v1/notices/drain", json::serialize(json::object{{"watcher", kMain}}),
                            {{"Content-Type", "multipart/form-data; boundary=x"}}),
                415, "unsupported_media_type", "multipart/form-data");
  // No Content-Type at all (a raw request).
  RawConnection raw(server_->port());
  ASSERT_TRUE(raw.Send("POST /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " +
                       std::to_string(forged.size()) + "\r\n\r\n" + forged));
  HttpResult none = ParseRawResponse(raw.ReadUntil("}}\n"));
  ExpectRefused(none, 415, "unsupported_media_type", "(got none)");
  EXPECT_EQ(StateVersion(kChild), version);
  EXPECT_EQ(Notices(*http_, kMain).size(), 1u);
  // application/json with parameters, in any case, is a JSON body.
  HttpResult charset =
      http_->Post("/v1/notices/drain", json::serialize(json::object{{"watcher", kMain}}),
                  {{"Content-Type", "Application/JSON; charset=utf-8"}});
  EXPECT_EQ(charset.status, 200) << charset.body;
  EXPECT_TRUE(Notices(*http_, kMain).empty());
  // A request without a body needs no Content-Type.
  EXPECT_EQ(http_->Request("POST", "/v1/prune").status, 200);
}

// Regression: `Host: rebind.evil.example` was answered, so a page whose name was rebound to
// 127.0.0.1 could read the daemon's answers. Only names of this server are answered.
TEST_F(BrowserGuardTest, AHostNotNamingThisServerIsRefusedWith421) {
  server::ServerOptions o = TestOptions();
  o.allow_hosts = {"statewatch.internal", "gw.example:8080"};
  StartServer(o);
  std::string port = std::to_string(server_->port());
  ExpectRefused(http_->Get("/v1/clock", {{"Host", "rebind.evil.example:" + port}}), 421,
                "misdirected_request", "rebind.evil.example");
  ExpectRefused(http_->Post("/v1/events", json::value(HumanMessage(kChild)),
                            {{"Host", "rebind.evil.example"}}),
                421, "misdirected_request", "--allow-host");
  std::string error;
  EXPECT_EQ(
      WsClient::Connect(server_->port(), "/v1/wakes", {{"Host", "rebind.evil.example"}}, &error),
      nullptr);
  EXPECT_EQ(error.substr(0, 3), "421") << error;
  ExpectRefused(http_->Get("/v1/clock", {{"Host", "localhost:1"}}), 421, "misdirected_request",
                "localhost:1");
  ExpectRefused(http_->Get("/v1/clock", {{"Host", "gw.example:8081"}}), 421, "misdirected_request",
                "gw.example:8081");
  EXPECT_EQ(StateVersion(kChild), 0);
  for (const std::string& host : std::vector<std::string>{
           "127.0.0.1", "127.0.0.1:" + port, "localhost:" + port, "LOCALHOST", "[::1]:" + port,
           "statewatch.internal", "statewatch.internal:9999", "gw.example:8080"}) {
    EXPECT_EQ(http_->Get("/v1/clock", {{"Host", host}}).status, 200) << host;
  }
  // A health probe passes whatever its Host (Kubernetes names the pod IP).
  EXPECT_EQ(http_->Get("/healthz", {{"Host", "10.244.1.7:" + port}}).status, 200);
  EXPECT_EQ(http_->Get("/readyz", {{"Host", "10.244.1.7"}}).status, 200);
  // HTTP/1.1 requires a Host.
  RawConnection raw(server_->port());
  ASSERT_TRUE(raw.Send("GET /healthz HTTP/1.1\r\n\r\n"));
  ExpectRefused(ParseRawResponse(raw.ReadUntil("}}\n")), 400, "bad_request", "Host header");
}

TEST_F(BrowserGuardTest, TheBearerSchemeIsMatchedInAnyCase) {
  server::ServerOptions o = TestOptions();
  o.token = "s3cret-token";
  StartServer(o);
  for (const std::string auth : {"Bearer s3cret-token", "bearer s3cret-token",
                                 "BEARER s3cret-token", "Bearer   s3cret-token"}) {
    EXPECT_EQ(http_->Get("/v1/notices?watcher=" + kMain, {{"Authorization", auth}}).status, 200)
        << auth;
  }
  for (const std::string auth : {"Bearer s3cret-tokeN", "Basic s3cret-token", "s3cret-token",
                                 "Bearers3cret-token", "Bearer"}) {
    EXPECT_EQ(http_->Get("/v1/notices?watcher=" + kMain, {{"Authorization", auth}}).status, 401)
        << auth;
  }
}

}  // namespace
}  // namespace statewatch::testing

// The /v1/webhooks routes over HTTP: scopes (registration needs write), the URL policy at
// registration, the secret never shown, dead-letter routes, the metrics lines, and one
// notice delivered by the daemon's own HTTP sender to a receiver socket in the test.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

#include "http_helpers.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_server.h"
#include "webhooks/signature.h"

namespace statewatch::testing {
namespace {

const std::string kReadToken = "read-token-7f3a9c";
const std::string kWriteToken = "write-token-51be02";

server::ServerOptions Scoped() {
  server::ServerOptions o = TestOptions();
  o.tokens = {{"grafana", auth::Sha256(kReadToken), auth::Scope::kRead},
              {"gateway", auth::Sha256(kWriteToken), auth::Scope::kWrite}};
  return o;
}
Headers Bearer(const std::string& token) { return {{"Authorization", "Bearer " + token}}; }

std::string Hook(const std::string& watcher, const std::string& url,
                 const std::string& secret = "s3cret") {
  return json::serialize(json::object{{"watcher", watcher}, {"url", url}, {"secret", secret}});
}

TEST(WebhooksHttpTest, RegisteringNeedsWriteAndListingNeverShowsTheSecret) {
  TestServer server(Scoped());
  HttpClient http(server.port());
  const std::string body = Hook("agent:main:main", "https://hooks.example.com/in", "top-s3cret");
  HttpResult r = http.Post("/v1/webhooks", body, Bearer(kReadToken));
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.error_code(), "insufficient_scope");
  r = http.Post("/v1/webhooks", body, Bearer(kWriteToken));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("webhook").at("watcher"), json::value("agent:main:main"));
  EXPECT_EQ(r.body.find("top-s3cret"), std::string::npos);
  r = http.Get("/v1/webhooks", Bearer(kReadToken));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("webhooks").as_array().size(), 1u);
  EXPECT_EQ(r.body.find("top-s3cret"), std::string::npos);
  EXPECT_EQ(r.body.find("secret"), std::string::npos);
  EXPECT_EQ(http.Request("DELETE", "/v1/webhooks/agent:main:main", "", Bearer(kReadToken)).status,
            403);
  EXPECT_EQ(http.Request("DELETE", "/v1/webhooks/agent:main:main", "", Bearer(kWriteToken)).status,
            200);
  EXPECT_EQ(http.Request("DELETE", "/v1/webhooks/agent:main:main", "", Bearer(kWriteToken)).status,
            404);
}

TEST(WebhooksHttpTest, TheUrlPolicyAndBadInputAreRefusedWithNothingStored) {
  TestServer server;
  HttpClient http(server.port());
  struct Case {
    std::string body;
    std::string message;
  };
  for (const Case& c : {
           Case{Hook("agent:main:main", "https://169.254.169.254/latest"),
                "webhooks.allowPrivateNetworks"},
           Case{Hook("agent:main:main", "https://[fd12::1]/"), "webhooks.allowPrivateNetworks"},
           Case{Hook("agent:main:main", "http://hooks.example.com/"), "webhooks.allowHttp"},
           Case{Hook("agent:main:main", "ftp://hooks.example.com/"), "must start with https://"},
           Case{Hook("agent:main:main", "https://u:p@hooks.example.com/"), "user information"},
           Case{Hook("main", "https://hooks.example.com/"), "agent-scoped"},
           Case{Hook("agent:main:main", "https://hooks.example.com/", ""), "secret"},
           Case{R"({"watcher":"agent:main:main","url":"https://h.example/","secret":"s","x":1})",
                "unknown field x"},
       }) {
    HttpResult r = http.Post("/v1/webhooks", c.body, Headers{});
    EXPECT_EQ(r.status, 400) << c.body << " " << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos) << r.body;
  }
  EXPECT_EQ(http.Get("/v1/webhooks").json().at("webhooks").as_array().size(), 0u);
}

TEST(WebhooksHttpTest, DeadLetterRoutesAnswer404ForAnUnknownKeyAnd400WithoutOne) {
  TestServer server;
  HttpClient http(server.port());
  HttpResult r = http.Get("/v1/webhooks/dead");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().at("deadLetters").as_array().size(), 0u);
  EXPECT_EQ(http.Post("/v1/webhooks/dead/retry", std::string(R"({"idempotencyKey":"a:b:1"})")).status, 404);
  EXPECT_EQ(http.Post("/v1/webhooks/dead/drop", std::string(R"({"idempotencyKey":"a:b:1"})")).status, 404);
  EXPECT_EQ(http.Post("/v1/webhooks/dead/retry", std::string("{}")).status, 400);
  std::string metrics = http.Get("/metrics").body;
  EXPECT_NE(metrics.find("statewatch_webhook_attempts_total{outcome=\"delivered\"} 0"),
            std::string::npos);
  EXPECT_NE(metrics.find("statewatch_webhook_outbox_depth 0"), std::string::npos);
}

// One HTTP request on a loopback socket: its head and body, answered 200.
struct Received {
  std::string head;
  std::string body;
};
bool ReceiveOne(int listener, Received* out) {
  pollfd p{listener, POLLIN, 0};
  if (::poll(&p, 1, 20000) != 1) return false;  // bounded: 20 s
  int fd = ::accept(listener, nullptr, nullptr);
  if (fd < 0) return false;
  timeval tv{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string in;
  char buf[4096];
  for (;;) {
    std::size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      std::size_t cl = in.find("Content-Length: ");
      std::size_t len = cl == std::string::npos ? 0 : std::stoul(in.substr(cl + 16));
      if (in.size() >= end + 4 + len) {
        out->head = in.substr(0, end);
        out->body = in.substr(end + 4, len);
        break;
      }
    }
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    in.append(buf, static_cast<std::size_t>(n));
  }
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  (void)::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  ::close(fd);
  return true;
}

std::string HeaderValue(const std::string& head, const std::string& name) {
  std::size_t at = head.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  at += name.size() + 4;
  return head.substr(at, head.find("\r\n", at) - at);
}

TEST(WebhooksHttpTest, TheDaemonPostsANoticeToAReceiver) {
  int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(ntohs(a.sin_port)) + "/hook";

  TestServer server;
  HttpClient http(server.port());
  ASSERT_EQ(http.Post("/v1/webhooks", Hook("agent:main:main", url)).status, 200);
  ASSERT_EQ(http.Post("/v1/watches", std::string(R"({"watcher":"agent:main:main","target":"agent:main:child"})"))
                .status,
            200);
  ASSERT_EQ(http.Post("/v1/events", json::serialize(HumanMessage("agent:main:child")),
                      {{"traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
                .status,
            200);
  Received got;
  ASSERT_TRUE(ReceiveOne(listener, &got)) << "no call within 20 s";
  ::close(listener);
  EXPECT_EQ(got.head.rfind("POST /hook HTTP/1.1\r\n", 0), 0u) << got.head;
  auto notices = http.Get("/v1/notices?watcher=agent:main:main").json().at("notices").as_array();
  ASSERT_EQ(notices.size(), 1u);
  auto body = json::parse(got.body).as_object();
  EXPECT_EQ(body.at("text"), notices[0].at("text"));
  EXPECT_EQ(body.at("target"), json::value("agent:main:child"));
  const std::string key = HeaderValue(got.head, "Idempotency-Key");
  EXPECT_EQ(key, "agent:main:main:agent:main:child:" +
                     std::to_string(body.at("sequence").as_int64()));
  const std::string signature = HeaderValue(got.head, "Statewatch-Signature");
  const int64_t t = std::stoll(signature.substr(2));
  EXPECT_TRUE(webhooks::VerifySignature("s3cret", signature, got.body, t, 0)) << signature;
  EXPECT_EQ(HeaderValue(got.head, "traceparent"),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
}

}  // namespace
}  // namespace statewatch::testing

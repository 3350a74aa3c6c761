// The pure pieces of the webhooks: back-off with seeded jitter, the HMAC signature and its
// header, the URL policy (SSRF) and the address check at connect.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>

#include "net/connection.h"
#include "status_matchers.h"
#include "webhooks/backoff.h"
#include "webhooks/signature.h"
#include "webhooks/url_policy.h"

namespace statewatch::webhooks {
namespace {

// ---- back-off -------------------------------------------------------------------------------

TEST(BackoffTest, CapsDoubleFromTheInitialDelayUpToTheMaximum) {
  Backoff b(1000, 30000, 7);
  EXPECT_EQ(b.Cap(0), 1000);
  EXPECT_EQ(b.Cap(1), 1000);
  EXPECT_EQ(b.Cap(2), 2000);
  EXPECT_EQ(b.Cap(3), 4000);
  EXPECT_EQ(b.Cap(5), 16000);
  EXPECT_EQ(b.Cap(6), 30000);
  EXPECT_EQ(b.Cap(60), 30000);  // no overflow past the cap
}

TEST(BackoffTest, JitterTakesOffAtMostHalfTheCap) {
  Backoff b(1000, 60000, 42);
  for (uint32_t n = 1; n <= 12; ++n) {
    int64_t d = b.Delay(n);
    EXPECT_GE(d, b.Cap(n) - b.Cap(n) / 2) << "attempt " << n;
    EXPECT_LE(d, b.Cap(n)) << "attempt " << n;
  }
}

TEST(BackoffTest, TheSameSeedGivesTheSameDelaysAndAnotherSeedOthers) {
  Backoff a(500, 100000, 1234), b(500, 100000, 1234), c(500, 100000, 999);
  bool differs = false;
  for (uint32_t n = 1; n <= 10; ++n) {
    int64_t da = a.Delay(n), db = b.Delay(n), dc = c.Delay(n);
    EXPECT_EQ(da, db) << "attempt " << n;
    differs = differs || da != dc;
  }
  EXPECT_TRUE(differs);
}

// ---- signature ------------------------------------------------------------------------------

TEST(SignatureTest, HmacSha256MatchesRfc4231TestCase2) {
  EXPECT_EQ(HmacSha256Hex("Jefe", "what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(SignatureTest, TheHeaderSignsTimestampDotBody) {
  const std::string body = R"({"watcher":"agent:main:main","sequence":3})";
  std::string h = SignatureHeader("s3cret", 1764460800, body);
  EXPECT_EQ(h, "t=1764460800,v1=" + HmacSha256Hex("s3cret", "1764460800." + body));
  EXPECT_TRUE(VerifySignature("s3cret", h, body, 1764460800 + 10, 300));
}

TEST(SignatureTest, VerificationRefusesAnotherBodySecretOrAStaleTimestamp) {
  const std::string body = R"({"a":1})";
  std::string h = SignatureHeader("s3cret", 1000, body);
  EXPECT_FALSE(VerifySignature("s3cret", h, R"({"a":2})", 1000, 300));
  EXPECT_FALSE(VerifySignature("other", h, body, 1000, 300));
  EXPECT_FALSE(VerifySignature("s3cret", h, body, 1000 + 301, 300));  // a replay, later
  EXPECT_FALSE(VerifySignature("s3cret", "v1=abc", body, 1000, 300));
  EXPECT_FALSE(VerifySignature("s3cret", "t=x,v1=" + std::string(64, '0'), body, 1000, 300));
}

// ---- URL policy -----------------------------------------------------------------------------

Status Check(const std::string& url, bool allow_http = false, bool allow_private = false) {
  return CheckUrlText(url, UrlPolicy{allow_http, allow_private});
}

TEST(UrlPolicyTest, HttpsAndLoopbackHttpAreAllowed) {
  EXPECT_OK(Check("https://hooks.example.com/statewatch?x=1"));
  EXPECT_OK(Check("https://93.184.216.34:8443/"));
  EXPECT_OK(Check("http://127.0.0.1:9000/hook"));
  EXPECT_OK(Check("http://localhost:9000/hook"));
  EXPECT_OK(Check("http://[::1]:9000/hook"));
}

TEST(UrlPolicyTest, HttpToAnotherHostNeedsAllowHttp) {
  Status s = Check("http://hooks.example.com/");
  EXPECT_EQ(s.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(s.message().find("webhooks.allowHttp"), std::string::npos) << s.message();
  EXPECT_OK(Check("http://hooks.example.com/", /*allow_http=*/true));
}

TEST(UrlPolicyTest, PrivateNetworkLiteralsAreRefusedUnlessAllowed) {
  for (const char* url :
       {"https://10.1.2.3/", "https://172.16.0.1/", "https://192.168.1.1/",
        "https://169.254.169.254/latest/meta-data/", "https://100.64.0.1/", "https://0.0.0.0/",
        "https://[fd00::1]/", "https://[fe80::1]/", "https://[::ffff:10.0.0.1]/",
        "https://[::ffff:169.254.169.254]/", "https://224.0.0.1/"}) {
    Status s = Check(url);
    EXPECT_EQ(s.code(), Status::Code::kPermissionDenied) << url;
    EXPECT_NE(s.message().find("webhooks.allowPrivateNetworks"), std::string::npos) << url;
    EXPECT_OK(Check(url, false, /*allow_private=*/true)) << url;
  }
}

TEST(UrlPolicyTest, MalformedUrlsAreInvalidArguments) {
  for (const char* url : {"ftp://example.com/", "example.com", "https://", "https://user:pw@h/",
                          "https://h/#frag", "https://h:0/", "https://h:99999/", "https://h x/",
                          "https://[::1/", "javascript:alert(1)"}) {
    EXPECT_EQ(Check(url).code(), Status::Code::kInvalidArgument) << url;
  }
}

TEST(UrlPolicyTest, ParseKeepsThePathAndQueryAndDefaultsThePort) {
  auto u = ParseWebhookUrl("https://Hooks.Example.com/a/b?c=d");
  ASSERT_OK(u);
  EXPECT_TRUE(u->https);
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->target, "/a/b?c=d");
  auto v = ParseWebhookUrl("http://127.0.0.1:81?q");
  ASSERT_OK(v);
  EXPECT_EQ(v->port, "81");
  EXPECT_EQ(v->target, "/?q");
}

sockaddr_in V4(const char* text) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, text, &a.sin_addr);
  return a;
}

TEST(UrlPolicyTest, TheResolvedAddressIsCheckedNotOnlyTheName) {
  auto url = ParseWebhookUrl("https://innocent.example.com/");
  ASSERT_OK(url);
  sockaddr_in meta = V4("169.254.169.254"), lan = V4("192.168.0.10"), pub = V4("93.184.216.34"),
              loop = V4("127.0.0.1");
  EXPECT_EQ(CheckAddress(*url, reinterpret_cast<sockaddr*>(&meta), {}).code(),
            Status::Code::kPermissionDenied);
  EXPECT_EQ(CheckAddress(*url, reinterpret_cast<sockaddr*>(&lan), {}).code(),
            Status::Code::kPermissionDenied);
  EXPECT_OK(CheckAddress(*url, reinterpret_cast<sockaddr*>(&pub), {}));
  EXPECT_OK(CheckAddress(*url, reinterpret_cast<sockaddr*>(&loop), {}));
  // http:// to a name: only when it connects to loopback.
  auto plain = ParseWebhookUrl("http://localhost:1/");
  ASSERT_OK(plain);
  EXPECT_OK(CheckAddress(*plain, reinterpret_cast<sockaddr*>(&loop), {}));
  EXPECT_EQ(CheckAddress(*plain, reinterpret_cast<sockaddr*>(&pub), {}).code(),
            Status::Code::kPermissionDenied);
}

// The address check runs before the connect: a refused address is never connected to.
TEST(UrlPolicyTest, ConnectionOpenSkipsAnAddressTheCheckRefuses) {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in a = V4("127.0.0.1");
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len), 0);
  net::Endpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = std::to_string(ntohs(a.sin_port));
  int asked = 0;
  net::Connection::AddressCheck refuse = [&](const sockaddr*, socklen_t) {
    ++asked;
    return Status::PermissionDenied("address refused by the test");
  };
  auto conn = net::Connection::Open(endpoint, {}, net::Connection::Clock::now() +
                                                      std::chrono::seconds(5), &refuse);
  ASSERT_FALSE(conn.ok());
  EXPECT_NE(conn.status().message().find("address refused by the test"), std::string::npos);
  EXPECT_EQ(asked, 1);
  // Nothing reached the listener.
  sockaddr_in peer{};
  socklen_t plen = sizeof peer;
  int flags = SOCK_NONBLOCK;
  int accepted = ::accept4(listener, reinterpret_cast<sockaddr*>(&peer), &plen, flags);
  EXPECT_LT(accepted, 0);
  if (accepted >= 0) ::close(accepted);
  // Allowed, the same endpoint connects.
  net::Connection::AddressCheck allow = [](const sockaddr*, socklen_t) { return Status::OK(); };
  auto ok = net::Connection::Open(endpoint, {}, net::Connection::Clock::now() +
                                                    std::chrono::seconds(5), &allow);
  EXPECT_OK(ok);
  ::close(listener);
}

}  // namespace
}  // namespace statewatch::webhooks

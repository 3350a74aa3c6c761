// RequestGuard as a pure function of a request's header: Host, Origin, Content-Type and the
// Bearer scheme (the end-to-end refusals are in browser_guard_test.cc).
#include "server/request_guard.h"

#include <gtest/gtest.h>

namespace statewatch::server {
namespace {

RequestHead Head(std::optional<std::string_view> host,
                 std::optional<std::string_view> origin = std::nullopt) {
  RequestHead h;
  h.host = host;
  h.origin = origin;
  return h;
}

int StatusOf(const std::optional<Refusal>& r) { return r ? r->status : 0; }

TEST(RequestGuardTest, HostsNamingThisServerAreAnswered) {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.allow_hosts = {"Statewatch.Internal", "gw.example:8080", "[fd00::1]"};
  RequestGuard guard(o, 7411);
  for (const char* host : {"127.0.0.1", "127.0.0.1:7411", "localhost", "LocalHost:7411", "[::1]",
                           "[::1]:7411", " localhost:7411 ", "statewatch.internal",
                           "statewatch.internal:1", "gw.example:8080", "[FD00::1]:9"}) {
    EXPECT_TRUE(guard.HostAllowed(host)) << host;
  }
  for (const char* host : {"evil.example", "evil.example:7411", "localhost:7412", "127.0.0.2",
                           "127.0.0.1:", "[::1]:", "::1", "[::1", "[::1]x", "localhost:0",
                           "localhost:99999", "localhost:74a1", "gw.example", "gw.example:8081", "",
                           "127.0.0.1.evil.example", "localhost.", "::1:7411"}) {
    EXPECT_FALSE(guard.HostAllowed(host)) << host;
  }
}

TEST(RequestGuardTest, TheListenAddressIsAName) {
  ServerOptions o;
  o.host = "::1";
  EXPECT_TRUE(RequestGuard(o, 9000).HostAllowed("[::1]:9000"));
  o.host = "10.1.2.3";
  o.token = "t";
  // A listener that requires a token answers any Host unless --allow-host narrows it; then
  // the listen address is one of the names it answers (access_test.cc has the rest).
  EXPECT_TRUE(RequestGuard(o, 9000).HostAllowed("10.1.2.3:9001"));
  o.allow_hosts = {"statewatch.internal"};
  RequestGuard guard(o, 9000);
  EXPECT_TRUE(guard.HostAllowed("10.1.2.3:9000"));
  EXPECT_FALSE(guard.HostAllowed("10.1.2.3:9001"));
}

// Kubernetes probes name the pod IP as Host; --allow-host cannot list it.
TEST(RequestGuardTest, HealthProbesPassWhateverTheirHost) {
  ServerOptions o;
  o.host = "0.0.0.0";
  o.token = "t";
  o.allow_hosts = {"statewatch.internal"};
  RequestGuard guard(o, 7411);
  auto probe = [](std::string_view method, std::string_view target) {
    RequestHead h;
    h.host = "10.244.1.7:7411";
    h.method = method;
    h.target = target;
    return h;
  };
  for (auto [method, target] :
       {std::pair{"GET", "/healthz"}, std::pair{"HEAD", "/healthz"}, std::pair{"GET", "/readyz"},
        std::pair{"GET", "/readyz?verbose=1"}}) {
    EXPECT_EQ(StatusOf(guard.Check(probe(method, target))), 0) << method << " " << target;
  }
  for (auto [method, target] :
       {std::pair{"POST", "/healthz"}, std::pair{"GET", "/healthz/x"},
        std::pair{"GET", "/v1/notices"}, std::pair{"GET", "/readyzz"}}) {
    EXPECT_EQ(StatusOf(guard.Check(probe(method, target))), 421) << method << " " << target;
  }
}

TEST(RequestGuardTest, ChecksInOrderHostOriginContentType) {
  ServerOptions o;
  o.allow_origins = {"http://localhost:3000"};
  RequestGuard guard(o, 7411);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost:7411"))), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head(std::nullopt))), 400);  // HTTP/1.1 without Host
  RequestHead http10 = Head(std::nullopt);
  http10.version = 10;
  EXPECT_EQ(StatusOf(guard.Check(http10)), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head("evil.example", "http://evil.example"))), 421);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://evil.example"))), 403);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://localhost:3000"))), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://localhost:3000/"))), 403);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", ""))), 403);
  // The daemon's own origin (Python's websocket-client sends it by default).
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://127.0.0.1:7411"))), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://LOCALHOST:7411"))), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://[::1]:7411"))), 0);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://localhost:7412"))), 403);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "http://localhost"))), 403);
  EXPECT_EQ(StatusOf(guard.Check(Head("localhost", "https://evil.example:7411"))), 403);
  RequestHead body = Head("localhost");
  body.has_body = true;
  auto refused = guard.Check(body);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 415);
  EXPECT_EQ(refused->code, "unsupported_media_type");
  EXPECT_NE(refused->message.find("(got none)"), std::string::npos) << refused->message;
  body.content_type = "application/json";
  EXPECT_EQ(StatusOf(guard.Check(body)), 0);
  body.content_type = "text/plain";
  EXPECT_EQ(StatusOf(guard.Check(body)), 415);
  body.has_body = false;  // no body: any Content-Type
  EXPECT_EQ(StatusOf(guard.Check(body)), 0);
}

TEST(RequestGuardTest, JsonContentTypes) {
  for (const char* t : {"application/json", "Application/JSON", "application/json; charset=utf-8",
                        " application/json ;charset=UTF-8", "application/json;"}) {
    EXPECT_TRUE(IsJsonContentType(t)) << t;
  }
  for (const char* t :
       {"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
        "application/jsonx", "application/json-patch+json", "text/json", "application/ json"}) {
    EXPECT_FALSE(IsJsonContentType(t)) << t;
  }
}

TEST(RequestGuardTest, BearerSchemeInAnyCaseAndTheExactToken) {
  for (const char* header : {"Bearer abc", "bearer abc", "BEARER abc", "  Bearer    abc  "}) {
    EXPECT_EQ(BearerToken(header), "abc") << header;
  }
  for (const char* header :
       {"Bearer abcd", "Bearer ab", "Bearer ABC", "Basic abc", "abc", "Bearerabc", "", "Bearer "}) {
    EXPECT_NE(BearerToken(header), "abc") << header;
  }
}

}  // namespace
}  // namespace statewatch::server

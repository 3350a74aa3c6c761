// Unit tests of the daemon's URL helpers (server/url.h) and server options (listen parsing,
// loopback detection, unsafe combinations).
#include "server/url.h"

#include <gtest/gtest.h>

#include "server/server_options.h"
#include "status_matchers.h"

namespace statewatch::server {
namespace {

TEST(UrlTest, SplitsPathAndQuery) {
  EXPECT_EQ(SplitTarget("/v1/notices?watcher=a").path, "/v1/notices");
  EXPECT_EQ(SplitTarget("/v1/notices?watcher=a").query, "watcher=a");
  EXPECT_EQ(SplitTarget("/healthz").query, "");
}

TEST(UrlTest, PercentDecoding) {
  EXPECT_EQ(PercentDecode("agent%3Amain%3Amain", false), "agent:main:main");
  EXPECT_EQ(PercentDecode("a+b", false), "a+b");
  EXPECT_EQ(PercentDecode("a+b", true), "a b");
  EXPECT_EQ(PercentDecode("%e2%9c%93", false), "\xe2\x9c\x93");
  EXPECT_FALSE(PercentDecode("%4", false).has_value());
  EXPECT_FALSE(PercentDecode("%zz", false).has_value());
  EXPECT_FALSE(PercentDecode("%00", false).has_value());
}

TEST(UrlTest, QueryParameters) {
  EXPECT_EQ(QueryParam("watcher=agent%3Amain%3Amain&x=1", "watcher"), "agent:main:main");
  EXPECT_EQ(QueryParam("x=1&watcher=w", "watcher"), "w");
  EXPECT_EQ(QueryParam("watcher", "watcher"), "");
  EXPECT_FALSE(QueryParam("x=1", "watcher").has_value());
  bool malformed = false;
  EXPECT_FALSE(QueryParam("watcher=%G1", "watcher", &malformed).has_value());
  EXPECT_TRUE(malformed);
}

TEST(ServerOptionsTest, ListenAndLoopback) {
  ServerOptions o;
  ASSERT_OK(ParseListen("0.0.0.0:8080", &o));
  EXPECT_EQ(o.host, "0.0.0.0");
  EXPECT_EQ(o.port, 8080);
  ASSERT_OK(ParseListen("[::1]:0", &o));
  EXPECT_EQ(o.host, "::1");
  ASSERT_OK(ParseListen("localhost:7411", &o));
  EXPECT_EQ(o.host, "127.0.0.1");
  ASSERT_OK(ParseListen(":9000", &o));
  EXPECT_EQ(o.port, 9000);
  EXPECT_FALSE(ParseListen("host:99999", &o).ok());
  EXPECT_FALSE(ParseListen("host:", &o).ok());
  EXPECT_TRUE(IsLoopbackHost("127.0.0.1"));
  EXPECT_TRUE(IsLoopbackHost("127.1.2.3"));
  EXPECT_TRUE(IsLoopbackHost("::1"));
  EXPECT_FALSE(IsLoopbackHost("0.0.0.0"));
  EXPECT_FALSE(IsLoopbackHost("10.0.0.1"));
}

TEST(ServerOptionsTest, RefusesUnsafeCombinations) {
  ServerOptions o;
  EXPECT_OK(ValidateServerOptions(o));
  o.host = "0.0.0.0";
  EXPECT_FALSE(ValidateServerOptions(o).ok());  // no token
  o.token = "t";
  EXPECT_OK(ValidateServerOptions(o));
  o.manual_clock = true;
  EXPECT_FALSE(ValidateServerOptions(o).ok());
}

}  // namespace
}  // namespace statewatch::server

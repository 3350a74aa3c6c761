// ServerOptions: the connection cap derived from the file limit, and the validation of the
// access options (allow lists, upstream roots, limits).
#include "server/server_options.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::server {
namespace {

TEST(ServerOptionsTest, TheDefaultConnectionCapLeavesAReserveForTheDatabase) {
  EXPECT_EQ(DefaultMaxConnections(128), 64);    // reserve 64
  EXPECT_EQ(DefaultMaxConnections(1024), 768);  // reserve a quarter
  EXPECT_EQ(DefaultMaxConnections(20000), 15000);
  EXPECT_EQ(DefaultMaxConnections(10), 16);                    // at least 16
  EXPECT_EQ(DefaultMaxConnections(uint64_t{1} << 30), 65536);  // at most 65,536
  ServerOptions o;
  o.max_connections = 7;
  EXPECT_EQ(EffectiveMaxConnections(o), 7);
  o.max_connections = 0;
  EXPECT_GE(EffectiveMaxConnections(o), 16);
}

TEST(ServerOptionsTest, AccessOptionsAreValidated) {
  ServerOptions o;
  EXPECT_OK(ValidateServerOptions(o));
  o.allow_origins = {"http://localhost:3000", "https://app.example", "tauri://localhost"};
  o.allow_hosts = {"statewatch.internal", "gw:8080"};
  EXPECT_OK(ValidateServerOptions(o));
  for (const char* origin : {"localhost:3000", "http://", "http://x/path", "://x", "http://a b"}) {
    o.allow_origins = {origin};
    Status s = ValidateServerOptions(o);
    EXPECT_TRUE(s.IsInvalidArgument()) << origin;
    EXPECT_NE(s.message().find(origin), std::string::npos) << s.message();
  }
  o.allow_origins.clear();
  for (const char* host : {"", "http://x", "a b", "x/y"}) {
    o.allow_hosts = {host};
    EXPECT_TRUE(ValidateServerOptions(o).IsInvalidArgument()) << host;
  }
  o.allow_hosts.clear();
  o.upstream.roots = {"/no/such/directory"};
  EXPECT_TRUE(ValidateServerOptions(o).IsInvalidArgument());
  o.upstream.roots = {"/proc/version"};  // not a directory
  EXPECT_TRUE(ValidateServerOptions(o).IsInvalidArgument());
  o.upstream.roots = {"/tmp"};
  EXPECT_OK(ValidateServerOptions(o));
  o.max_streams = 0;
  EXPECT_TRUE(ValidateServerOptions(o).IsInvalidArgument());
  o.max_streams = 1;
  o.ws_queue_bytes = 0;
  EXPECT_TRUE(ValidateServerOptions(o).IsInvalidArgument());
}

}  // namespace
}  // namespace statewatch::server

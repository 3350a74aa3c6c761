// /metrics beyond request counts: the build info, unacknowledged deliveries and active runs
// read at scrape time, labels from the route table; and the access log option.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "http_helpers.h"
#include "statewatch/version.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(MetricsTest, BuildInfoDeliveriesAndRuns) {
  TestServer server;
  HttpClient http(server.port());
  PutSession(http, "agent:main:main", {{"kind", "main"}});
  PutSession(http, "agent:main:worker", {{"parentSessionKey", "agent:main:main"}});
  std::string m = http.Get("/metrics").body;
  EXPECT_TRUE(Has(m, std::string("statewatch_build_info{version=\"") + kVersion + "\"} 1")) << m;
  EXPECT_TRUE(Has(m, "statewatch_deliveries_unacked 0")) << m;
  EXPECT_TRUE(Has(m, "statewatch_runs_active 0")) << m;
  EXPECT_TRUE(Has(m, "statewatch_pending_notices 0")) << m;

  HttpResult sent = Tool(http, "sessions_send", "agent:main:main",
                         json::object{{"sessionKey", "agent:main:worker"},
                                      {"message", "hi"},
                                      {"timeoutSeconds", 0}});
  ASSERT_EQ(sent.status, 200) << sent.body;
  m = http.Get("/metrics").body;
  EXPECT_TRUE(Has(m, "statewatch_deliveries_unacked 1")) << m;
  EXPECT_TRUE(Has(m, "statewatch_runs_active 1")) << m;
  EXPECT_TRUE(Has(m, "statewatch_http_requests_total{method=\"PUT\",route=\"/v1/sessions/{key}\","
                     "code=\"200\"} 2"))
      << m;
}

TEST(MetricsTest, AccessLogHasOneLinePerRequest) {
  server::ServerOptions options = TestOptions();
  std::string log = MakeTempDir("statewatch-access") + "/access.log";
  options.access_log = log;
  {
    TestServer server(options);
    HttpClient http(server.port());
    EXPECT_EQ(http.Get("/healthz").status, 200);
    EXPECT_EQ(http.Get("/v1/nowhere").status, 404);
  }
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(Has(text.str(), "method=GET target=\"/healthz\" route=\"/healthz\" status=200"))
      << text.str();
  EXPECT_TRUE(Has(text.str(), "route=\"unmatched\" status=404")) << text.str();
}

}  // namespace
}  // namespace statewatch::testing

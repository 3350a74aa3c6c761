// /metrics beyond request counts: the build info, unacknowledged deliveries and active runs
// read at scrape time, labels from the route table; the commit, fsync, group-size and wake
// histograms, RocksDB's figures, refused writes by reason and process_*; and the access log
// option.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <utility>

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

  HttpResult sent = Tool(
      http, "sessions_send", "agent:main:main",
      json::object{{"sessionKey", "agent:main:worker"}, {"message", "hi"}, {"timeoutSeconds", 0}});
  ASSERT_EQ(sent.status, 200) << sent.body;
  m = http.Get("/metrics").body;
  EXPECT_TRUE(Has(m, "statewatch_deliveries_unacked 1")) << m;
  EXPECT_TRUE(Has(m, "statewatch_runs_active 1")) << m;
  EXPECT_TRUE(Has(m,
                  "statewatch_http_requests_total{method=\"PUT\",route=\"/v1/sessions/{key}\","
                  "code=\"200\"} 2"))
      << m;
}

// The value of the sample `series` (name and labels, as rendered); -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  std::size_t at = 0;
  while ((at = text.find(series + " ", at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n')
      return std::strtod(text.c_str() + at + series.size(), nullptr);
    at += series.size();
  }
  return -1;
}

// Expects each sample of `want` (series, value) in the scrape `text`, exactly.
void ExpectSamples(const std::string& text,
                   std::initializer_list<std::pair<std::string, double>> want) {
  for (const auto& [series, value] : want) {
    EXPECT_EQ(Sample(text, series), value) << series << " in\n" << text;
  }
}

TEST(MetricsTest, WritesShowInTheCommitFsyncGroupAndWakeHistograms) {
  server::ServerOptions options = TestOptions();
  options.durability = Durability::kSync;  // every group fsyncs the WAL
  TestServer server(options);
  HttpClient http(server.port());
  const std::string watcher = "agent:main:main", child = "agent:main:subagent:a1";
  PutSession(http, child, {{"parentSessionKey", watcher}});
  Record(http, Event(child, "child_spawned", "agent",
                     {{"actorId", watcher}, {"watchers", json::array{watcher}}}));
  Record(http, HumanMessage(child));  // opens a notice for the watcher: a wake fires
  Record(http, json::array{HumanMessage(child), HumanMessage(child)});

  std::string m = http.Get("/metrics").body;
  EXPECT_GE(Sample(m, "statewatch_commit_duration_seconds_count"), 4) << m;
  EXPECT_EQ(Sample(m, "statewatch_commit_duration_seconds_bucket{le=\"+Inf\"}"),
            Sample(m, "statewatch_commit_duration_seconds_count"));
  EXPECT_GT(Sample(m, "statewatch_commit_duration_seconds_sum"), 0) << m;
  EXPECT_GE(Sample(m, "statewatch_commit_group_events_sum"), 4) << "four events recorded\n" << m;
  EXPECT_GE(Sample(m, "statewatch_commit_group_writes_count"), 4) << m;
  EXPECT_GE(Sample(m, "statewatch_commit_group_writes_bucket{le=\"1\"}"), 1) << m;
  EXPECT_GE(Sample(m, "statewatch_wal_sync_duration_seconds_count"), 4) << m;
  EXPECT_GE(Sample(m, "statewatch_wake_latency_seconds_count"), 1) << m;
  EXPECT_EQ(Sample(m, "statewatch_rocksdb_write_stopped"), 0) << m;
  EXPECT_GE(Sample(m, "statewatch_rocksdb_running_compactions"), 0) << m;
  EXPECT_GE(Sample(m, "statewatch_rocksdb_pending_compaction_bytes"), 0) << m;
  EXPECT_EQ(Sample(m, "statewatch_rocksdb_write_stalls_total{condition=\"stopped\"}"), 0) << m;
}

TEST(MetricsTest, RefusedWritesAreCountedByReason) {
  server::ServerOptions options = TestOptions();
  options.body_limit_bytes = 1024;
  TestServer server(options);
  HttpClient http(server.port());
  std::string m = http.Get("/metrics").body;
  EXPECT_EQ(Sample(m, "statewatch_writes_refused_total{reason=\"bad_request\"}"), 0) << m;

  EXPECT_EQ(http.Post("/v1/events", std::string("{not json")).status, 400);
  EXPECT_EQ(http.Post("/v1/events", std::string(4096, 'x')).status, 413);  // before dispatch
  EXPECT_EQ(http.Get("/v1/nowhere").status, 404);                          // a read: not counted
  m = http.Get("/metrics").body;
  ExpectSamples(m, {{"statewatch_writes_refused_total{reason=\"bad_request\"}", 1},
                    {"statewatch_writes_refused_total{reason=\"too_large\"}", 1},
                    {"statewatch_writes_refused_total{reason=\"not_found\"}", 0}});
}

TEST(MetricsTest, RefusalReasonsFollowTheErrorCode) {
  EXPECT_STREQ(server::RefusalReason("insufficient_storage", 507), "disk_full");
  EXPECT_STREQ(server::RefusalReason("unavailable", 503), "degraded");
  EXPECT_STREQ(server::RefusalReason("invalid_json", 400), "bad_request");
  EXPECT_STREQ(server::RefusalReason("body_too_large", 413), "too_large");
  EXPECT_STREQ(server::RefusalReason("unsupported_media_type", 415), "bad_request");
  EXPECT_STREQ(server::RefusalReason("already_owner", 409), "conflict");
  EXPECT_STREQ(server::RefusalReason("", 409), "conflict") << "unknown code: by status";
  EXPECT_STREQ(server::RefusalReason("", 418), "other");

  server::Metrics metrics;
  metrics.CountRefusedWrite("insufficient_storage", 507);
  std::string m = metrics.Render(nullptr);
  EXPECT_EQ(Sample(m, "statewatch_writes_refused_total{reason=\"disk_full\"}"), 1) << m;
}

TEST(MetricsTest, HistogramBucketsAreCumulative) {
  EngineStats stats;
  stats.commit_seconds.bounds = {0.001, 0.01};
  stats.commit_seconds.counts = {2, 0, 1};
  stats.commit_seconds.count = 3;
  stats.commit_seconds.sum = 0.5;
  std::string m = server::Metrics().Render(&stats);
  ExpectSamples(m, {{"statewatch_commit_duration_seconds_bucket{le=\"0.001\"}", 2},
                    {"statewatch_commit_duration_seconds_bucket{le=\"0.01\"}", 2},
                    {"statewatch_commit_duration_seconds_bucket{le=\"+Inf\"}", 3},
                    {"statewatch_commit_duration_seconds_count", 3},
                    {"statewatch_commit_duration_seconds_sum", 0.5}});
}

TEST(MetricsTest, ProcessFiguresArePlausible) {
  std::string m = server::Metrics().Render(nullptr);
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GE(Sample(m, "process_cpu_seconds_total"), 0) << m;
  EXPECT_GT(Sample(m, "process_resident_memory_bytes"), 1 << 20) << m;
  EXPECT_GE(Sample(m, "process_virtual_memory_bytes"), Sample(m, "process_resident_memory_bytes"));
  const double start = Sample(m, "process_start_time_seconds");
  EXPECT_GT(start, now - 86400) << "this test process started within a day\n" << m;
  EXPECT_LE(start, now + 1) << m;
  EXPECT_GE(Sample(m, "process_open_fds"), 3) << m;  // stdin, stdout, stderr at least
  EXPECT_GE(Sample(m, "process_max_fds"), Sample(m, "process_open_fds")) << m;
  EXPECT_TRUE(Has(m, "# TYPE process_cpu_seconds_total counter\n")) << m;
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

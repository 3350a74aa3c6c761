// The HTTP side of a failing disk: a write that fails with NoSpace answers
// 507 with the JSON error envelope; once the engine refuses writes, /healthz still answers
// 200 and reports the degraded state, and reads keep being served. The daemon's transport
// runs over an engine opened with the storage fault injector.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <thread>

#include "engine/engine_impl.h"
#include "http_helpers.h"
#include "server/api.h"
#include "server/handlers.h"
#include "server/http_server.h"
#include "status_matchers.h"
#include "storage/store.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

TEST(WriteFailureStatusTest, NoSpaceIsAnswered507WithTheErrorEnvelope) {
  server::ApiResponse r =
      server::StatusResponse(Status::NoSpace("no space left on device (wal 000012.log)"));
  EXPECT_EQ(r.status, 507);
  EXPECT_EQ(r.body,
            R"x({"error":{"code":"insufficient_storage","message":"No space: no space left on )x"
            R"x(device (wal 000012.log)"}})x"
            "\n");
  EXPECT_EQ(std::string(r.content_type), "application/json");
}

// Api + HttpServer over an engine whose files fail on demand.
class WriteFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("statewatch-write-failure");
    faults_ = storage::NewFaultInjector();
    EngineOptions eo;
    eo.clock = std::make_shared<ManualClock>(kStartMs);
    eo.durability = Durability::kSync;
    engine::EngineTestHooks hooks;
    hooks.faults = faults_;
    auto engine = engine::OpenEngineWithHooks(eo, dir_ + "/data", hooks);
    ASSERT_OK(engine);
    engine_ = std::move(engine).value();
    api_ = std::make_unique<EngineApi>(engine_.get());
    auto server = server::HttpServer::Bind(engine_.get(), api_->api.get(), &api_->metrics,
                                           api_->options);
    ASSERT_OK(server);
    server_ = std::move(server).value();
    thread_ = std::thread([s = server_.get()] { s->Run(); });
    http_ = std::make_unique<HttpClient>(server_->port());
    // The child in the parent's tree, so that the parent may read its status.
    PutSession(*http_, kChild, {{"parentSessionKey", kMain}});
  }
  void TearDown() override {
    http_.reset();
    if (server_) server_->Shutdown();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    api_.reset();
    engine_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string dir_;
  std::shared_ptr<storage::FaultInjector> faults_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<EngineApi> api_;
  std::unique_ptr<server::HttpServer> server_;
  std::thread thread_;
  std::unique_ptr<HttpClient> http_;
};

TEST_F(WriteFailureTest, HealthzReportsRefusedWritesAndReadsAreStillServed) {
  HttpResult health = http_->Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json().at("status"), json::value("ok")) << health.body;
  Record(*http_, Event(kChild, "child_spawned", "agent",
                       {{"actorId", kMain}, {"watchers", json::array{kMain}}}));
  Record(*http_, HumanMessage(kChild));

  faults_->FailWritesAfter(0);
  HttpResult failed = http_->Post("/v1/events", json::value(HumanMessage(kChild)));
  EXPECT_GE(failed.status, 500) << failed.body;
  EXPECT_FALSE(failed.error_code().empty()) << failed.body;
  HttpResult refused = http_->Post("/v1/events", json::value(HumanMessage(kChild)));
  EXPECT_EQ(refused.status, 503) << refused.body;

  // Alive and degraded: 200, so that a supervisor does not restart a daemon that serves
  // reads, with the reason writes are refused.
  health = http_->Get("/healthz");
  EXPECT_EQ(health.status, 200);
  json::object h = health.json().as_object();
  EXPECT_EQ(h["status"], json::value("degraded")) << health.body;
  EXPECT_EQ(h["writes"], json::value("refused")) << health.body;
  EXPECT_FALSE(h["writeError"].as_string().empty()) << health.body;
  // Reads: only acknowledged state.
  EXPECT_EQ(Notices(*http_, kMain).size(), 1u);
  HttpResult status = http_->Get("/v1/sessions/" + kChild + "/state?changesSince=0");
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.json().at("stateChanges").at("events").as_array().size(), 2u) << status.body;
  EXPECT_EQ(http_->Get("/metrics").status, 200);
  faults_->Heal();
}

// Readiness follows the storage: a load balancer stops sending traffic to a daemon whose
// engine refuses writes, while liveness stays 200 (no restart for a full disk).
TEST_F(WriteFailureTest, ReadyzIs503WhileTheEngineRefusesWrites) {
  HttpResult ready = http_->Get("/readyz");
  ASSERT_EQ(ready.status, 200) << ready.body;
  EXPECT_EQ(ready.json().at("status"), json::value("ready"));
  faults_->NoSpaceAfter(0);
  EXPECT_EQ(http_->Post("/v1/events", json::value(HumanMessage(kChild))).status, 507);
  HttpResult not_ready = http_->Get("/readyz");
  EXPECT_EQ(not_ready.status, 503) << not_ready.body;
  EXPECT_EQ(not_ready.error_code(), "not_ready") << not_ready.body;
  EXPECT_EQ(not_ready.json().at("status"), json::value("not_ready"));
  const std::string storage(not_ready.json().at("checks").at("storage").as_string());
  EXPECT_EQ(storage.rfind("writes refused: ", 0), 0u) << not_ready.body;
  EXPECT_NE(not_ready.error_message().find("storage writes refused"), std::string::npos)
      << not_ready.body;
  EXPECT_EQ(http_->Get("/healthz").status, 200);
  faults_->Heal();
}

// Regression: a full disk answered 500 (or aborted the process). Now a write answers 507
// with the error envelope, /healthz says why writes are refused, and once space is freed
// writes resume in the same daemon.
TEST_F(WriteFailureTest, AFullDiskAnswers507AndWritesResumeOnceSpaceIsFreed) {
  Record(*http_, HumanMessage(kChild));
  faults_->NoSpaceAfter(0);
  HttpResult full = http_->Post("/v1/events", json::value(HumanMessage(kChild)));
  EXPECT_EQ(full.status, 507) << full.body;
  EXPECT_EQ(full.error_code(), "insufficient_storage") << full.body;
  EXPECT_NE(full.error_message().find("no space left on device"), std::string::npos) << full.body;
  HttpResult health = http_->Get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.json().at("status"), json::value("degraded")) << health.body;
  EXPECT_NE(health.body.find("no space left on device"), std::string::npos) << health.body;
  HttpResult status = http_->Get("/v1/sessions/" + kChild + "/state?changesSince=0");
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.json().at("stateChanges").at("events").as_array().size(), 1u);

  faults_->Heal();  // space is freed
  Record(*http_, HumanMessage(kChild));
  EXPECT_EQ(http_->Get("/healthz").json().at("status"), json::value("ok"));
  status = http_->Get("/v1/sessions/" + kChild + "/state?changesSince=0");
  EXPECT_EQ(status.json().at("stateChanges").at("events").as_array().size(), 2u) << status.body;
}

}  // namespace
}  // namespace statewatch::testing

// The daemon in cluster mode over HTTP, with MemLog as the partition's stream (the fast
// tier): a standby daemon that follows and serves reads but refuses writes, its live
// takeover (POST /v1/cluster/takeover, no restart), and the fenced-out owner that stops
// answering reads and writes. tests/cluster/jetstream runs the fencing on real nats-servers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "cluster/replicated_log.h"
#include "engine/engine_fixture.h"
#include "http_helpers.h"
#include "log/mem_log.h"
#include "server/cluster_routes.h"
#include "server/standby_daemon.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

using cluster::PartitionRole;
using cluster::PartitionState;

cluster::ReplicatedLogOptions LogOptions(const std::string& node) {
  cluster::ReplicatedLogOptions ro;
  ro.node = node;
  ro.retry = log::RetryPolicy{20, nullptr};  // MemLog answers at once: no backoff
  return ro;
}

// The standby's view of the partition's stream, which a test can make unreachable (every
// call an IOError, as a JetStream request timing out while its servers elect a leader).
class ReachableLog final : public log::LogBackend {
 public:
  explicit ReachableLog(std::shared_ptr<log::LogBackend> log) : log_(std::move(log)) {}
  void SetReachable(bool reachable) { reachable_ = reachable; }

  Result<log::LogPosition> Append(std::string_view data,
                                  const log::AppendOptions& options) override {
    if (!reachable_) return Unreachable();
    return log_->Append(data, options);
  }
  Result<std::vector<log::LogRecord>> ReadFrom(log::LogPosition from,
                                               std::size_t max_records) override {
    if (!reachable_) return Unreachable();
    return log_->ReadFrom(from, max_records);
  }
  Result<log::LogPosition> Tail() override {
    if (!reachable_) return Unreachable();
    return log_->Tail();
  }
  Status PurgeBelow(log::LogPosition position) override {
    if (!reachable_) return Unreachable();
    return log_->PurgeBelow(position);
  }

 private:
  static Status Unreachable() { return Status::IOError("stream info of SW_P0: Timeout"); }

  std::shared_ptr<log::LogBackend> log_;
  std::atomic<bool> reachable_{true};
};

class ClusterStandbyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    remote_ = std::make_shared<log::MemLog>();
    owner_state_ = std::make_shared<PartitionState>(0);
    server::ServerOptions o = TestOptions();
    cluster::ReplicatedLogOptions ro = LogOptions("owner-a");
    ro.state = owner_state_;
    o.wrap_log = cluster::OwnerLog(remote_, ro);
    o.gate = std::make_shared<server::ClusterGate>(owner_state_, server::ClusterGate::Hooks{});
    owner_ = std::make_unique<TestServer>(o);
    owner_http_ = std::make_unique<HttpClient>(owner_->port());

    standby_root_ = MakeTempDir("statewatch-standby-test");
    server::StandbyDaemonOptions so;
    so.server = TestOptions();
    so.server.data_dir = standby_root_ + "/data";
    standby_log_ = std::make_shared<ReachableLog>(remote_);
    so.remote = standby_log_;
    so.log = LogOptions("standby-b");
    so.follow_interval = std::chrono::milliseconds(1);
    so.owner_bound = [this] {
      bound_when_told_ = standby_->owner() != nullptr;
      ++told_bound_;
    };
    auto standby = server::StandbyDaemon::Open(so);
    ASSERT_OK(standby);
    standby_ = std::move(*standby);
    standby_thread_ = std::thread([this] { run_status_ = standby_->Run(); });
    standby_http_ = std::make_unique<HttpClient>(standby_->port());
  }

  void TearDown() override {
    if (standby_) {
      standby_->Shutdown();
      standby_thread_.join();
      EXPECT_OK(run_status_);
      standby_.reset();
    }
    std::error_code ec;
    std::filesystem::remove_all(standby_root_, ec);
  }

  // The standby has applied everything the owner has appended.
  bool StandbyCaughtUp() {
    return standby_->partition()->view().position == owner_state_->view().position;
  }

  std::shared_ptr<log::MemLog> remote_;
  std::shared_ptr<ReachableLog> standby_log_;
  std::shared_ptr<PartitionState> owner_state_;
  std::unique_ptr<TestServer> owner_;
  std::unique_ptr<HttpClient> owner_http_;
  std::string standby_root_;
  std::unique_ptr<server::StandbyDaemon> standby_;
  std::thread standby_thread_;
  Status run_status_;
  std::unique_ptr<HttpClient> standby_http_;
  std::atomic<int> told_bound_{0};  // owner_bound calls
  std::atomic<bool> bound_when_told_{false};
};

TEST_F(ClusterStandbyTest, StandbyFollowsServesReadsAndRefusesWrites) {
  Record(*owner_http_, json::array{HumanMessage("agent:main:a"), HumanMessage("agent:main:b")});
  Record(*owner_http_, HumanMessage("agent:main:a"));
  ASSERT_TRUE(WaitFor([&] { return StandbyCaughtUp(); }));

  json::value status = standby_http_->Get("/v1/cluster/status").json();
  EXPECT_EQ(status.at("role").as_string(), "standby");
  EXPECT_EQ(status.at("epoch").as_int64(), 1);  // the owner's fence, folded
  EXPECT_EQ(status.at("position").to_number<uint64_t>(), owner_state_->view().position);

  HttpResult owner_export = owner_http_->Get("/v1/export");
  HttpResult standby_export = standby_http_->Get("/v1/export");
  ASSERT_EQ(standby_export.status, 200) << standby_export.body;
  EXPECT_EQ(standby_export.body, owner_export.body);
  json::value owner_digest = owner_http_->Get("/v1/cluster/digest").json();
  json::value standby_digest = standby_http_->Get("/v1/cluster/digest").json();
  EXPECT_EQ(standby_digest.at("digest"), owner_digest.at("digest"));
  EXPECT_EQ(standby_digest.at("position"), owner_digest.at("position"));
  HttpResult verify = standby_http_->Get("/v1/verify");
  EXPECT_EQ(verify.status, 200) << verify.body;
  EXPECT_TRUE(verify.json().at("ok").as_bool()) << verify.body;
  const json::object ask{{"sessions", json::array{"agent:main:a", "agent:main:b"}}};
  HttpResult versions = standby_http_->Post("/v1/versions", ask);
  ASSERT_EQ(versions.status, 200) << versions.body;
  EXPECT_EQ(versions.body, owner_http_->Post("/v1/versions", ask).body);

  HttpResult write = standby_http_->Post("/v1/events", HumanMessage("agent:main:c"));
  EXPECT_EQ(write.status, 503);
  EXPECT_EQ(write.error_code(), "standby");
  EXPECT_NE(write.error_message().find("standby of partition 0 (the owner's epoch is 1"),
            std::string::npos)
      << write.body;
  EXPECT_EQ(standby_http_->Request("DELETE", "/v1/sessions/agent:main:a").status, 503);
  EXPECT_EQ(standby_http_->Get("/v1/export").body, owner_export.body);  // nothing changed
  EXPECT_EQ(standby_http_->Get("/healthz").status, 200);
  std::string refused;  // a standby has no wakes to stream: refused, not silent
  EXPECT_EQ(WsClient::Connect(standby_->port(), "/v1/wakes", {}, &refused), nullptr);
  EXPECT_NE(refused.find("503"), std::string::npos) << refused;
}

TEST_F(ClusterStandbyTest, LiveTakeoverServesWritesAndFencesTheOldOwnerOut) {
  std::vector<uint64_t> before = Record(*owner_http_, HumanMessage("agent:main:a"));
  ASSERT_EQ(before.size(), 1u);
  ASSERT_TRUE(WaitFor([&] { return StandbyCaughtUp(); }));
  const uint64_t tail = owner_state_->view().position;

  HttpResult taken = standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 0}});
  ASSERT_EQ(taken.status, 200) << taken.body;
  EXPECT_EQ(taken.json().at("epoch").as_int64(), 2);
  EXPECT_EQ(taken.json().at("position").to_number<uint64_t>(), tail + 1);  // its fence
  EXPECT_EQ(taken.json().at("role").as_string(), "owner");

  // Same process, same port: the owner's daemon replaces the standby's server.
  ASSERT_TRUE(WaitFor([&] { return standby_->owner() != nullptr; }));
  HttpClient now_owner(standby_->port());
  std::vector<uint64_t> after = Record(now_owner, HumanMessage("agent:main:a"));
  ASSERT_EQ(after.size(), 1u);
  EXPECT_GT(after[0], before[0]);
  HttpResult again = now_owner.Post("/v1/cluster/takeover", json::object{});
  EXPECT_EQ(again.status, 409);
  EXPECT_NE(again.error_message().find("already owns partition 0 (epoch 2"), std::string::npos)
      << again.body;

  // The old owner's next append meets the fence: nothing more is acknowledged or read there.
  HttpResult zombie = owner_http_->Post("/v1/events", HumanMessage("agent:main:b"));
  EXPECT_EQ(zombie.status, 503) << zombie.body;
  EXPECT_EQ(zombie.error_code(), "partition_moved");
  EXPECT_NE(zombie.body.find("partition moved"), std::string::npos) << zombie.body;
  HttpResult stale = owner_http_->Get("/v1/export");
  EXPECT_EQ(stale.status, 503);
  EXPECT_EQ(stale.error_code(), "partition_moved");
  EXPECT_NE(stale.error_message().find("partition 0 moved"), std::string::npos) << stale.body;
  EXPECT_EQ(owner_http_->Get("/v1/cluster/status").json().at("role").as_string(), "moved");
  EXPECT_EQ(owner_http_->Post("/v1/cluster/takeover", json::object{}).status, 409);

  // The new owner has both events, and the refused one nowhere.
  HttpResult exported = now_owner.Get("/v1/export");
  ASSERT_EQ(exported.status, 200);
  EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 2);
  EXPECT_EQ(exported.body.find("agent:main:b"), std::string::npos);
  EXPECT_TRUE(now_owner.Get("/v1/verify").json().at("ok").as_bool());
}

// A takeover answers before the owner's server has the address; a control-plane node reports
// the slot "owner" (to its readiness, routers and the old owner) only once owner() is non-null,
// and owner_bound tells it when: from then on a connection is served, never refused.
TEST_F(ClusterStandbyTest, TheOwnerSaysItIsBoundOnlyOnceItsServerHasTheAddress) {
  EXPECT_EQ(standby_->owner(), nullptr);
  HttpResult taken = standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 0}});
  ASSERT_EQ(taken.status, 200) << taken.body;
  ASSERT_TRUE(WaitFor([&] { return told_bound_.load() > 0; }));
  EXPECT_TRUE(bound_when_told_.load());
  EXPECT_NE(standby_->owner(), nullptr);
  HttpClient now_owner(standby_->port());
  HttpResult first = now_owner.Post("/v1/events", HumanMessage("agent:main:a"));
  EXPECT_EQ(first.status, 200) << first.body;  // the first try: nothing retried here
  EXPECT_EQ(told_bound_.load(), 1);
}

// X-Request-Id records travel in the partition's log: a retry of a request the old owner
// applied is answered by the new owner from the record, and applied nothing again
// (docs/request-ids.md).
TEST_F(ClusterStandbyTest, ARetryAfterATakeoverGetsTheFirstAnswer) {
  const Headers id{{"X-Request-Id", "failover-1"}};
  HttpResult first = owner_http_->Post("/v1/events", HumanMessage("agent:main:a"), id);
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_TRUE(WaitFor([&] { return StandbyCaughtUp(); }));
  ASSERT_EQ(standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 0}}).status,
            200);
  ASSERT_TRUE(WaitFor([&] { return standby_->owner() != nullptr; }));
  HttpClient now_owner(standby_->port());

  HttpResult retry = now_owner.Post("/v1/events", HumanMessage("agent:main:a"), id);
  EXPECT_EQ(retry.status, 200) << retry.body;
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.headers["x-statewatch-replayed"], "true");
  HttpResult reused = now_owner.Post("/v1/events", HumanMessage("agent:main:b"), id);
  EXPECT_EQ(reused.status, 422) << reused.body;
  EXPECT_EQ(reused.error_code(), "request_id_reused");
  HttpResult exported = now_owner.Get("/v1/export");
  ASSERT_EQ(exported.status, 200);
  EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 1) << exported.body;
}

// A takeover while the stream is unreachable fails, and so does following it again: the
// standby is left following nothing. The next takeover (the control plane retries while it
// names this node owner) succeeds once the stream answers. It used to crash the node.
TEST_F(ClusterStandbyTest, ATakeoverThatFailedWhileTheStreamWasUnreachableSucceedsLater) {
  Record(*owner_http_, HumanMessage("agent:main:a"));
  ASSERT_TRUE(WaitFor([&] { return StandbyCaughtUp(); }));

  standby_log_->SetReachable(false);
  HttpResult failed = standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 0}});
  EXPECT_GE(failed.status, 500) << failed.body;
  EXPECT_NE(failed.body.find("SW_P0: Timeout"), std::string::npos) << failed.body;
  EXPECT_EQ(standby_->partition()->view().role, PartitionRole::kStandby);
  HttpResult read = standby_http_->Get("/v1/export");  // following nothing: no stale answer
  EXPECT_NE(read.status, 200) << read.body;

  standby_log_->SetReachable(true);
  HttpResult taken = standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 0}});
  ASSERT_EQ(taken.status, 200) << taken.body;
  EXPECT_EQ(taken.json().at("role").as_string(), "owner");
  ASSERT_TRUE(WaitFor([&] { return standby_->owner() != nullptr; }));
  HttpClient now_owner(standby_->port());
  Record(now_owner, HumanMessage("agent:main:b"));
  HttpResult exported = now_owner.Get("/v1/export");
  ASSERT_EQ(exported.status, 200);
  EXPECT_EQ(std::count(exported.body.begin(), exported.body.end(), '\n'), 2) << exported.body;
  EXPECT_TRUE(now_owner.Get("/v1/verify").json().at("ok").as_bool());
}

TEST_F(ClusterStandbyTest, BadTakeoverRequestsChangeNothing) {
  HttpResult wrong = standby_http_->Post("/v1/cluster/takeover", json::object{{"partition", 3}});
  EXPECT_EQ(wrong.status, 400);
  EXPECT_NE(wrong.error_message().find("serves partition 0, not partition 3"), std::string::npos)
      << wrong.body;
  EXPECT_EQ(standby_http_->Post("/v1/cluster/takeover", std::string("[1")).status, 400);
  EXPECT_EQ(standby_http_->Get("/v1/cluster/takeover").status, 405);
  EXPECT_EQ(standby_http_->Get("/v1/cluster/nothing").status, 404);
  EXPECT_EQ(standby_->partition()->view().role, PartitionRole::kStandby);
  EXPECT_EQ(owner_http_->Post("/v1/cluster/takeover", json::object{}).status, 409);
  Record(*owner_http_, HumanMessage("agent:main:a"));  // the owner still owns
  EXPECT_TRUE(WaitFor([&] { return StandbyCaughtUp(); }));
}

}  // namespace
}  // namespace statewatch::testing

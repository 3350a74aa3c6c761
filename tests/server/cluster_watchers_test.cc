// The watcher directory and a watcher's reset saga on three nodes under etcd (as
// cluster_node_test.cc: ClusterNodes in one process on a real etcd, each partition's stream a
// MemLog): a peek or a drain through a node asks only the watcher's home and the partitions
// its directory lists (X-Statewatch-Owners names those that answered), and a reset of a
// watcher through a node removes its cursors on every partition.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "control/etcd_fixture.h"
#include "control/operator.h"
#include "control/placement.h"
#include "engine/agent_partition.h"
#include "http_helpers.h"
#include "log/mem_checkpoint_store.h"
#include "log/mem_log.h"
#include "server/cluster_node.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::control {
namespace {

using statewatch::testing::HttpClient;
using statewatch::testing::HumanMessage;

constexpr uint32_t kPartitions = 3;

class ClusterWatchersTest : public EtcdFixture {
 protected:
  void SetUp() override {
    EtcdFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    root_ = statewatch::testing::MakeTempDir("statewatch-watchers-test");
    keys_ = std::make_unique<ClusterKeys>(Name());
    for (uint32_t p = 0; p < kPartitions; ++p) {
      logs_[p].stream = std::make_shared<log::MemLog>();
      logs_[p].checkpoints = std::make_shared<log::MemCheckpointStore>();
    }
    for (const char* id : {"w1", "w2", "w3"}) StartNode(id);
  }

  void TearDown() override {
    for (auto& [id, node] : nodes_) node.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  static std::string Name() {
    return std::string("t-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  void StartNode(const std::string& id) {
    server::ClusterNodeOptions o;
    o.server = statewatch::testing::TestOptions();
    o.server.data_dir = root_ + "/" + id;
    o.etcd = {url_};
    o.cluster = Name();
    o.node_id = id;
    o.partitions = kPartitions;
    o.lease_ttl_seconds = 1;
    o.poll = std::chrono::milliseconds(20);
    o.open_partition = [this](uint32_t p) -> Result<server::PartitionLogs> { return logs_[p]; };
    auto node = server::ClusterNode::Start(o);
    ASSERT_OK(node);
    nodes_[id] = std::move(*node);
  }

  // Polls (bounded: 30 s) until every partition is ready and the controller is done.
  ClusterView WaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (;;) {
      auto view = ReadClusterView(*client_, *keys_);
      EXPECT_OK(view);
      if (!view.ok()) return {};
      view->placement.warm_lag = 1000;
      if (ClusterReady(*view) && Plan(view->placement).changes.empty()) return *view;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "not ready within 30 s: " << ClusterStatusJson(*view, Name());
        return *view;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  static uint16_t OwnerPort(const ClusterView& view, uint32_t p) {
    const Assignment& a = view.placement.assignments.at(p);
    const std::string url = view.placement.nodes.at(a.owner).Slot(p)->url;
    return static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  }

  // The n-th session of agents that hash to partition p.
  static std::string SessionOf(uint32_t p, int n = 0) {
    int found = 0;
    for (int i = 0;; ++i) {
      std::string agent = "worker" + std::to_string(i);
      if (engine::PartitionOfAgent(agent, kPartitions) != p) continue;
      if (found++ == n) return "agent:" + agent + ":main";
    }
  }

  // GET /v1/cursors at partition p's owner slot: 200 when the cursor exists, 404 when not.
  int CursorAt(const ClusterView& view, const std::string& watcher, const std::string& target) {
    const uint32_t p = engine::PartitionOfAgent(target.substr(6, target.find(':', 6) - 6),
                                                kPartitions);
    return HttpClient(OwnerPort(view, p))
        .Get("/v1/cursors?watcher=" + watcher + "&target=" + target)
        .status;
  }

  std::string root_;
  std::unique_ptr<ClusterKeys> keys_;
  std::map<uint32_t, server::PartitionLogs> logs_;
  std::map<std::string, std::unique_ptr<server::ClusterNode>> nodes_;
};

TEST_F(ClusterWatchersTest, ADrainAsksTheListedPartitionsAndAResetClearsEveryOne) {
  ClusterView view = WaitReady();
  HttpClient any(nodes_.at("w2")->port());
  const std::string watcher = SessionOf(0);

  // Every owner serving through this node (a write is retried until it lands; a fan-out is
  // not), and the node's directory of owners read since (bounded: 100 polls of 20 ms).
  for (uint32_t p = 0; p < kPartitions; ++p) {
    ASSERT_EQ(any.Post("/v1/events", HumanMessage(SessionOf(p, 5))).status, 200);
  }
  statewatch::testing::HttpResult peek;
  for (int i = 0; i < 100; ++i) {
    peek = any.Get("/v1/notices?watcher=" + watcher);
    if (peek.status == 200 && peek.body.find("incomplete") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // No watch yet: only the home is asked.
  ASSERT_EQ(peek.status, 200) << peek.body;
  EXPECT_EQ(peek.headers["x-statewatch-owners"],
            "0=" + view.placement.assignments.at(0).owner)
      << peek.body;

  // A watch on partition 2's session: the home and partition 2, not partition 1.
  const std::string t2 = SessionOf(2), t1 = SessionOf(1);
  auto w = any.Post("/v1/watches", boost::json::object{{"watcher", watcher}, {"target", t2}});
  ASSERT_EQ(w.status, 200) << w.body;
  ASSERT_EQ(any.Post("/v1/events", HumanMessage(t2)).status, 200);
  auto drained = HttpClient(nodes_.at("w3")->port())
                     .Post("/v1/notices/drain", boost::json::object{{"watcher", watcher}});
  ASSERT_EQ(drained.status, 200) << drained.body;
  EXPECT_NE(drained.body.find(t2), std::string::npos) << drained.body;
  EXPECT_EQ(drained.headers["x-statewatch-owners"],
            "0=" + view.placement.assignments.at(0).owner + ",2=" +
                view.placement.assignments.at(2).owner);

  // Partition 1 too; then a reset through a node clears the cursors on both other partitions.
  ASSERT_EQ(any.Post("/v1/watches", boost::json::object{{"watcher", watcher}, {"target", t1}})
                .status,
            200);
  const std::string own = SessionOf(0, 1);  // a target in the home partition
  ASSERT_EQ(any.Post("/v1/watches", boost::json::object{{"watcher", watcher}, {"target", own}})
                .status,
            200);
  EXPECT_EQ(CursorAt(view, watcher, t1), 200);
  EXPECT_EQ(CursorAt(view, watcher, t2), 200);
  EXPECT_EQ(CursorAt(view, watcher, own), 200);
  auto reset = HttpClient(nodes_.at("w1")->port()).Post("/v1/sessions/" + watcher + "/reset", std::string());
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_EQ(reset.headers["x-statewatch-saga"], "done");
  EXPECT_EQ(CursorAt(view, watcher, t1), 404);
  EXPECT_EQ(CursorAt(view, watcher, t2), 404);
  EXPECT_EQ(CursorAt(view, watcher, own), 404);
  // The directory is empty again: a peek asks the home only.
  auto after = any.Get("/v1/notices?watcher=" + watcher);
  EXPECT_EQ(after.headers["x-statewatch-owners"], "0=" + view.placement.assignments.at(0).owner);
}

}  // namespace
}  // namespace statewatch::control

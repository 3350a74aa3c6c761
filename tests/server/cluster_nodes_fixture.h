// Three (or more) ClusterNodes on a real etcd (tests/control/etcd_fixture.h), each
// partition's stream a MemLog shared by the nodes: start nodes, wait until every partition is
// owned and the controller is done, and name a session of each partition. A shared fixture
// for the cluster tests of tests/server (the older ones still carry their own copies).
#ifndef STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_
#define STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_

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

inline constexpr uint32_t kPartitions = 3;

class ClusterNodesFixture : public EtcdFixture {
 public:
  void SetUp() override {
    EtcdFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    root_ = statewatch::testing::MakeTempDir("statewatch-cluster-nodes");
    keys_ = std::make_unique<ClusterKeys>(Name());
    for (uint32_t p = 0; p < kPartitions; ++p) {
      logs_[p].stream = std::make_shared<log::MemLog>();
      logs_[p].checkpoints = std::make_shared<log::MemCheckpointStore>();
    }
  }
  void TearDown() override {
    for (auto& [id, node] : nodes_) node.reset();
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }
  static std::string Name() {
    return std::string("c-") + ::testing::UnitTest::GetInstance()->current_test_info()->name();
  }

  void StartNode(const std::string& id) {
    server::ClusterNodeOptions o;
    o.server = statewatch::testing::TestOptions();
    o.server.data_dir = root_ + "/" + id;
    o.server.tools.visibility = visibility_;
    o.server.tools.agent_to_agent.enabled = true;
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

  static std::string SessionOf(uint32_t p) {
    for (int i = 0;; ++i) {
      std::string agent = "agent" + std::to_string(i);
      if (engine::PartitionOfAgent(agent, kPartitions) == p) return "agent:" + agent + ":main";
    }
  }

  tools::Visibility visibility_ = tools::Visibility::kAll;
  std::string root_;
  std::unique_ptr<ClusterKeys> keys_;
  std::map<uint32_t, server::PartitionLogs> logs_;
  std::map<std::string, std::unique_ptr<server::ClusterNode>> nodes_;
};

}  // namespace statewatch::control

#endif  // STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_

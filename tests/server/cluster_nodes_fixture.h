// Three (or more) ClusterNodes on a real etcd (tests/control/etcd_fixture.h), each
// partition's stream a MemLog shared by the nodes: start nodes, wait until every partition is
// owned and the controller is done, find a partition's owner slot, and name sessions of each
// partition. The shared fixture of the cluster tests of tests/server.
#ifndef STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_
#define STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

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

// How long a cluster test waits for the cluster to settle (owners, standbys warmed, the
// controller's balancing done) or for a planned move or drain to finish. Generous on purpose:
// under ASan, with two such tests running at once on a two-core CI machine, three nodes take
// tens of seconds to settle (CI once needed more than 30 s). Only a failing test waits it out.
inline constexpr std::chrono::seconds kSettle{120};

class ClusterNodesFixture : public EtcdFixture {
 public:
  using HttpClient = statewatch::testing::HttpClient;

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
  // The cluster's name in etcd: one per test (suite and name).
  static std::string Name() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("c-") + info->test_suite_name() + "-" + info->name();
  }

  void StartNode(const std::string& id) {
    server::ClusterNodeOptions o;
    o.server = statewatch::testing::TestOptions();
    o.server.data_dir = root_ + "/" + id;
    o.server.tools.visibility = visibility_;
    o.server.tokens = tokens_;
    o.server.tools.agent_to_agent.enabled = true;
    o.server.messaging.tool_policy.allow_agents = allow_agents_;
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

  ClusterView View() {
    auto view = ReadClusterView(*client_, *keys_);
    EXPECT_OK(view);
    return view.ok() ? *view : ClusterView{};
  }

  // Polls (bounded: kSettle) until every partition is ready, with a standby when 2+ nodes run,
  // and the controller has nothing left to change (balancing included).
  ClusterView WaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + kSettle;
    for (;;) {
      ClusterView view = View();
      view.placement.warm_lag = 1000;
      if (ClusterReady(view) && Plan(view.placement).changes.empty()) return view;
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << "not ready within " << kSettle.count() << " s: " << ClusterStatusJson(view, Name());
        return view;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Starts the nodes n1, n2 and n3 and waits until the cluster is ready (WaitReady).
  ClusterView StartThreeNodes() {
    for (const char* id : {"n1", "n2", "n3"}) StartNode(id);
    return WaitReady();
  }

  static uint16_t PortOf(const std::string& url) {
    return static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
  }

  // The slot URL port of partition p's owner.
  static uint16_t OwnerPort(const ClusterView& view, uint32_t p) {
    const Assignment& a = view.placement.assignments.at(p);
    return PortOf(view.placement.nodes.at(a.owner).Slot(p)->url);
  }

  // The n-th session ("agent:<agent>:main") of the agents that hash to partition p.
  static std::string SessionOf(uint32_t p, int n = 0) {
    int found = 0;
    for (int i = 0;; ++i) {
      std::string agent = "agent" + std::to_string(i);
      if (engine::PartitionOfAgent(agent, kPartitions) != p) continue;
      if (found++ == n) return "agent:" + agent + ":main";
    }
  }

  tools::Visibility visibility_ = tools::Visibility::kAll;
  std::vector<auth::AccessToken> tokens_;  // none: requests need no token
  std::vector<std::string> allow_agents_;  // agents a session may spawn into besides its own
  std::string root_;
  std::unique_ptr<ClusterKeys> keys_;
  std::map<uint32_t, server::PartitionLogs> logs_;
  std::map<std::string, std::unique_ptr<server::ClusterNode>> nodes_;
};

}  // namespace statewatch::control

#endif  // STATEWATCH_TESTS_SERVER_CLUSTER_NODES_FIXTURE_H_

// The controller against a real etcd (tests/control/etcd_fixture.h): one of several nodes
// is elected, it assigns every partition with the assignment's mod_revision as its epoch, a
// node that is not elected writes nothing, and when the leader's lease ends another node
// takes the role over and fails the dead node's partitions over to their standbys.
#include "control/controller.h"

#include "control/etcd_fixture.h"
#include "control/operator.h"
#include "status_matchers.h"

namespace statewatch::control {
namespace {

class ControllerTest : public EtcdFixture {
 protected:
  // A node as the controller sees it: a record under a lease of its own.
  int64_t Join(const ClusterKeys& keys, const std::string& id) {
    auto lease = client_->Grant(60);
    EXPECT_OK(lease);
    NodeRecord r;
    r.id = id;
    r.url = "http://127.0.0.1:1";
    EXPECT_OK(client_->Put(keys.Node(id), EncodeNodeRecord(r), *lease));
    return *lease;
  }

  std::shared_ptr<EtcdClient> Shared() { return std::shared_ptr<EtcdClient>(std::move(client_)); }

  // n1 and n2 joined to a cluster of `partitions` under `keys`, and the client they share
  // from then on (client_ is moved into it).
  struct TwoNodes {
    int64_t n1_lease = 0;
    int64_t n2_lease = 0;
    std::shared_ptr<EtcdClient> etcd;
  };
  TwoNodes JoinTwoNodes(const ClusterKeys& keys, uint32_t partitions) {
    EXPECT_OK(client_->Put(keys.Config(), EncodeClusterConfig(partitions)));
    TwoNodes nodes;
    nodes.n1_lease = Join(keys, "n1");
    nodes.n2_lease = Join(keys, "n2");
    nodes.etcd = Shared();
    return nodes;
  }
};

TEST_F(ControllerTest, OneNodeLeadsAndAssignsEveryPartitionUnderItsEpoch) {
  ClusterKeys keys("elect");
  const auto [l1, l2, etcd] = JoinTwoNodes(keys, 4);
  Controller c1(etcd, keys, "n1");
  Controller c2(etcd, keys, "n2");
  auto first = c1.Round(l1);
  ASSERT_OK(first);
  EXPECT_TRUE(*first);
  auto second = c2.Round(l2);
  ASSERT_OK(second);
  EXPECT_FALSE(*second);
  EXPECT_FALSE(c2.leading());
  // Elected in its first round; it plans on the next read.
  ASSERT_OK(c1.Round(l1));
  auto view = ReadClusterView(*etcd, keys);
  ASSERT_OK(view);
  EXPECT_EQ(view->controller, "n1");
  ASSERT_EQ(view->placement.assignments.size(), 4u);
  auto epoch = etcd->Get(keys.Assign(0));
  ASSERT_OK(epoch);
  for (const auto& [p, a] : view->placement.assignments) {
    EXPECT_NE(a.owner, a.standby);
    EXPECT_EQ(a.owner_lease, a.owner == "n1" ? l1 : l2);
    EXPECT_GT(a.epoch, 0);
  }
  EXPECT_EQ(view->placement.assignments.at(0).epoch, epoch->mod_revision);
  // The one that is not elected plans nothing.
  ASSERT_OK(c2.Round(l2));
  auto again = ReadClusterView(*etcd, keys);
  ASSERT_OK(again);
  EXPECT_EQ(again->placement.assignments.at(0).epoch, epoch->mod_revision);
}

TEST_F(ControllerTest, WhenTheLeaderDiesAnotherNodeLeadsAndFailsItsPartitionsOver) {
  ClusterKeys keys("failover");
  const auto [l1, l2, etcd] = JoinTwoNodes(keys, 2);
  Controller c1(etcd, keys, "n1");
  Controller c2(etcd, keys, "n2");
  ASSERT_OK(c1.Round(l1));
  ASSERT_OK(c1.Round(l1));
  auto before = ReadClusterView(*etcd, keys);
  ASSERT_OK(before);
  ASSERT_EQ(before->placement.assignments.size(), 2u);

  ASSERT_OK(etcd->Revoke(l1));  // n1 is gone: its record and the controller key with it
  auto elected = c2.Round(l2);
  ASSERT_OK(elected);
  EXPECT_TRUE(*elected);
  ASSERT_OK(c2.Round(l2));
  auto after = ReadClusterView(*etcd, keys);
  ASSERT_OK(after);
  EXPECT_EQ(after->controller, "n2");
  for (uint32_t p = 0; p < 2; ++p) {
    const Assignment& a = after->placement.assignments.at(p);
    EXPECT_EQ(a.owner, "n2") << p;
    EXPECT_EQ(a.owner_lease, l2);
    EXPECT_EQ(a.standby, "");  // no other live node
    EXPECT_GT(a.epoch, before->placement.assignments.at(p).epoch);
  }
  // The old leader's next round finds another controller and writes nothing.
  auto deposed = c1.Round(l1);
  ASSERT_OK(deposed);
  EXPECT_FALSE(*deposed);
}

TEST_F(ControllerTest, AMoveRequestToAMissingNodeIsRefusedBeforeAnythingIsWritten) {
  ClusterKeys keys("moves");
  ASSERT_OK(client_->Put(keys.Config(), EncodeClusterConfig(2)));
  Join(keys, "n1");
  auto etcd = Shared();
  WaitOptions wait;
  wait.timeout = std::chrono::milliseconds(50);
  auto missing = RequestMove(*etcd, keys, 0, "nobody", wait);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("\"nobody\""), std::string::npos);
  auto range = RequestMove(*etcd, keys, 7, "n1", wait);
  ASSERT_FALSE(range.ok());
  EXPECT_TRUE(range.status().IsInvalidArgument());
  auto view = ReadClusterView(*etcd, keys);
  ASSERT_OK(view);
  EXPECT_TRUE(view->placement.moves.empty());
  // No controller runs here: a valid request waits, then says where it stood.
  auto stuck = RequestMove(*etcd, keys, 1, "n1", wait);
  ASSERT_FALSE(stuck.ok());
  EXPECT_NE(stuck.status().message().find("not done within 50 ms"), std::string::npos);
  auto pending = ReadClusterView(*etcd, keys);
  ASSERT_OK(pending);
  EXPECT_EQ(pending->placement.moves.at(1), "n1");
}

}  // namespace
}  // namespace statewatch::control

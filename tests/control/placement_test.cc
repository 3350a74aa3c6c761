// The controller's decisions (control/placement.h), rule by rule, and a seeded simulation in
// which nodes come and go and every round's plan is applied: the plan must settle with
// every partition owned by a live node, a standby on another node, and owners balanced.
#include "control/placement.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

namespace statewatch::control {
namespace {

NodeRecord Node(const std::string& id, int64_t lease) {
  NodeRecord r;
  r.id = id;
  r.url = "http://127.0.0.1:1/" + id;
  r.lease = lease;
  return r;
}

Assignment Assigned(const std::string& owner, int64_t lease, const std::string& standby,
                    int64_t epoch) {
  Assignment a;
  a.owner = owner;
  a.owner_lease = lease;
  a.standby = standby;
  a.epoch = epoch;
  return a;
}

void Report(NodeRecord* node, uint32_t p, const std::string& role, uint64_t position) {
  SlotReport s;
  s.partition = p;
  s.role = role;
  s.position = position;
  node->slots.push_back(s);
}

PlacementInput ThreeNodes(uint32_t partitions) {
  PlacementInput in;
  in.partitions = partitions;
  in.nodes["n1"] = Node("n1", 11);
  in.nodes["n2"] = Node("n2", 12);
  in.nodes["n3"] = Node("n3", 13);
  return in;
}

// The one change Plan(in) makes; fails the test (and answers an empty change) when it makes
// none or several.
PlacementChange OnlyChange(const PlacementInput& in) {
  PlacementPlan plan = Plan(in);
  EXPECT_EQ(plan.changes.size(), 1u);
  return plan.changes.size() == 1 ? plan.changes[0] : PlacementChange{};
}

TEST(PlacementTest, FirstRoundAssignsEveryPartitionBalancedWithStandbysElsewhere) {
  PlacementPlan plan = Plan(ThreeNodes(6));
  ASSERT_EQ(plan.changes.size(), 6u);
  std::map<std::string, int> owned, standing;
  for (const PlacementChange& c : plan.changes) {
    EXPECT_EQ(c.reason, "assign");
    EXPECT_EQ(c.expected_epoch, 0);
    EXPECT_NE(c.next.owner, c.next.standby);
    EXPECT_FALSE(c.next.standby.empty());
    EXPECT_EQ(c.next.owner_lease, ThreeNodes(1).nodes.at(c.next.owner).lease);
    ++owned[c.next.owner];
    ++standing[c.next.standby];
  }
  for (const char* n : {"n1", "n2", "n3"}) {
    EXPECT_EQ(owned[n], 2) << n;
    EXPECT_EQ(standing[n], 2) << n;
  }
}

TEST(PlacementTest, ASingleNodeOwnsEverythingWithoutAStandby) {
  PlacementInput in;
  in.partitions = 2;
  in.nodes["solo"] = Node("solo", 5);
  PlacementPlan plan = Plan(in);
  ASSERT_EQ(plan.changes.size(), 2u);
  for (const PlacementChange& c : plan.changes) {
    EXPECT_EQ(c.next.owner, "solo");
    EXPECT_EQ(c.next.standby, "");
  }
}

TEST(PlacementTest, NoLiveNodeChangesNothing) {
  PlacementInput in;
  in.partitions = 3;
  in.assignments[0] = Assigned("gone", 1, "also-gone", 40);
  EXPECT_TRUE(Plan(in).changes.empty());
}

TEST(PlacementTest, AnOwnerWhoseRecordIsGoneFailsOverToItsStandby) {
  PlacementInput in = ThreeNodes(1);
  in.nodes.erase("n1");
  in.assignments[0] = Assigned("n1", 11, "n2", 77);
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "failover");
  EXPECT_EQ(c.expected_epoch, 77);
  EXPECT_EQ(c.next.owner, "n2");
  EXPECT_EQ(c.next.owner_lease, 12);
  EXPECT_EQ(c.next.standby, "n3");
}

TEST(PlacementTest, AnOwnerThatRestartedUnderANewLeaseIsFailedOverToo) {
  PlacementInput in = ThreeNodes(1);
  in.assignments[0] = Assigned("n1", 999, "n2", 50);  // n1 now holds lease 11
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "failover");
  EXPECT_EQ(c.next.owner, "n2");
  EXPECT_NE(c.next.standby, "n2");
}

TEST(PlacementTest, WithoutALiveStandbyAnotherLiveNodeOwnsIt) {
  PlacementInput in = ThreeNodes(1);
  in.nodes.erase("n1");
  in.nodes.erase("n2");
  in.assignments[0] = Assigned("n1", 11, "n2", 5);
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.next.owner, "n3");
  EXPECT_EQ(c.next.standby, "");
}

TEST(PlacementTest, AGoneStandbyIsReplacedAndTheOwnerKept) {
  PlacementInput in = ThreeNodes(1);
  in.nodes.erase("n2");
  in.assignments[0] = Assigned("n1", 11, "n2", 9);
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "standby");
  EXPECT_EQ(c.next.owner, "n1");
  EXPECT_EQ(c.next.owner_lease, 11);
  EXPECT_EQ(c.next.standby, "n3");
}

TEST(PlacementTest, AMoveWarmsTheTargetUpAsStandbyFirst) {
  PlacementInput in = ThreeNodes(1);
  in.assignments[0] = Assigned("n1", 11, "n2", 9);
  in.moves[0] = "n3";
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "warm-up");
  EXPECT_EQ(c.next.owner, "n1");
  EXPECT_EQ(c.next.standby, "n3");
}

TEST(PlacementTest, AMovePromotesTheTargetOnlyOnceItFollowsWithinTheWarmLag) {
  PlacementInput in = ThreeNodes(1);
  in.assignments[0] = Assigned("n1", 11, "n3", 9);
  in.moves[0] = "n3";
  Report(&in.nodes["n1"], 0, "owner", 5000);
  Report(&in.nodes["n3"], 0, "standby", 5000 - in.warm_lag);  // exactly warm_lag behind
  EXPECT_TRUE(Plan(in).changes.empty());

  in.nodes["n3"].slots[0].position = 5000 - in.warm_lag + 1;
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "move");
  EXPECT_EQ(c.next.owner, "n3");
  EXPECT_EQ(c.next.owner_lease, 13);
  EXPECT_EQ(c.next.standby, "n1");  // the old owner stands by
}

TEST(PlacementTest, BalancingWaitsWhileAMoveWarmsItsTargetUp) {
  PlacementInput in = ThreeNodes(3);
  in.assignments[0] = Assigned("n1", 11, "n2", 1);
  in.assignments[1] = Assigned("n2", 12, "n3", 2);  // n3's standby is the move's warm-up
  in.assignments[2] = Assigned("n3", 13, "n2", 3);
  in.moves[1] = "n3";
  Report(&in.nodes["n2"], 1, "owner", 5000);
  Report(&in.nodes["n3"], 1, "standby", 10);  // far behind: not warm yet
  // n2 stands by twice and n1 never: balancing would take n3's standby of 1 away.
  EXPECT_TRUE(Plan(in).changes.empty());
}

TEST(PlacementTest, AMoveToAnUnknownNodeEndsAndADoneMoveStaysAsAPin) {
  PlacementInput in = ThreeNodes(2);
  in.assignments[0] = Assigned("n1", 11, "n2", 9);
  in.assignments[1] = Assigned("n2", 12, "n1", 10);
  in.moves[0] = "n1";
  in.moves[1] = "nobody";
  PlacementPlan plan = Plan(in);
  EXPECT_EQ(plan.moves_done, (std::vector<uint32_t>{1}));
  EXPECT_TRUE(plan.changes.empty());
}

TEST(PlacementTest, TheBalancerLeavesAPinnedPartitionWhereTheOperatorPutIt) {
  PlacementInput in = ThreeNodes(4);
  in.assignments[0] = Assigned("n1", 11, "n2", 1);
  in.assignments[1] = Assigned("n1", 11, "n2", 2);
  in.assignments[2] = Assigned("n1", 11, "n3", 3);
  in.assignments[3] = Assigned("n2", 12, "n3", 4);
  for (uint32_t p = 0; p < 3; ++p) in.moves[p] = "n1";  // all of n1's partitions are pinned
  for (uint32_t p = 0; p < 4; ++p) {
    Report(&in.nodes[in.assignments[p].owner], p, "owner", 10);
    Report(&in.nodes[in.assignments[p].standby], p, "standby", 10);
  }
  PlacementPlan plan = Plan(in);  // n1 owns 3, n3 none: unbalanced, but pinned
  for (const PlacementChange& c : plan.changes) EXPECT_EQ(c.next.owner, in.assignments[c.partition].owner);
  in.moves.erase(2);
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.partition, 2u);
  EXPECT_EQ(c.reason, "balance");
}

TEST(PlacementTest, ADrainMovesOwnershipOffAndEndsWhenTheNodeRestarts) {
  PlacementInput in = ThreeNodes(1);
  in.assignments[0] = Assigned("n1", 11, "n2", 9);
  in.drains["n1"] = 11;
  Report(&in.nodes["n1"], 0, "owner", 10);
  Report(&in.nodes["n2"], 0, "standby", 10);
  PlacementPlan plan = Plan(in);
  ASSERT_EQ(plan.changes.size(), 1u);
  EXPECT_EQ(plan.changes[0].reason, "drain");
  EXPECT_EQ(plan.changes[0].next.owner, "n2");
  EXPECT_EQ(plan.changes[0].next.standby, "n3");  // not the draining node
  EXPECT_TRUE(plan.drains_done.empty());

  in.nodes["n1"].lease = 21;  // restarted: the drain was for lease 11
  EXPECT_EQ(Plan(in).drains_done, (std::vector<std::string>{"n1"}));
}

TEST(PlacementTest, AJoiningNodeGetsAPartitionStandbyFirst) {
  PlacementInput in = ThreeNodes(6);
  for (uint32_t p = 0; p < 6; ++p) {
    const bool first = p < 3;
    in.assignments[p] = Assigned(first ? "n1" : "n2", first ? 11 : 12, first ? "n2" : "n1",
                                 100 + p);
  }
  const PlacementChange c = OnlyChange(in);
  EXPECT_EQ(c.reason, "warm-up");
  EXPECT_EQ(c.next.standby, "n3");
}

// Applies each round's plan; nodes report their slots as the assignments say, warm.
class Simulation {
 public:
  explicit Simulation(uint32_t partitions) { in_.partitions = partitions; }

  void Join(const std::string& id) { in_.nodes[id] = Node(id, ++lease_); }
  void Leave(const std::string& id) { in_.nodes.erase(id); }
  void Restart(const std::string& id) { in_.nodes[id] = Node(id, ++lease_); }

  // Rounds until a plan is empty; false when it does not settle within `max_rounds`.
  bool Settle(int max_rounds) {
    for (int round = 0; round < max_rounds; ++round) {
      ReportSlots();
      PlacementPlan plan = Plan(in_);
      for (uint32_t p : plan.moves_done) in_.moves.erase(p);
      for (const std::string& n : plan.drains_done) in_.drains.erase(n);
      if (plan.changes.empty()) return true;
      for (const PlacementChange& c : plan.changes) {
        EXPECT_EQ(c.expected_epoch, in_.assignments.count(c.partition)
                                        ? in_.assignments[c.partition].epoch
                                        : 0);
        Assignment next = c.next;
        next.epoch = ++revision_;
        in_.assignments[c.partition] = next;
      }
    }
    return false;
  }

  void ExpectHealthy() const {
    std::map<std::string, int> owned;
    for (uint32_t p = 0; p < in_.partitions; ++p) {
      auto a = in_.assignments.find(p);
      ASSERT_NE(a, in_.assignments.end()) << "partition " << p;
      ASSERT_TRUE(in_.nodes.count(a->second.owner)) << "partition " << p;
      EXPECT_EQ(in_.nodes.at(a->second.owner).lease, a->second.owner_lease);
      if (in_.nodes.size() >= 2) {
        EXPECT_TRUE(in_.nodes.count(a->second.standby)) << "partition " << p;
        EXPECT_NE(a->second.standby, a->second.owner);
      }
      ++owned[a->second.owner];
    }
    int most = 0, least = 1 << 30;
    for (const auto& [id, n] : in_.nodes) {
      most = std::max(most, owned[id]);
      least = std::min(least, owned[id]);
    }
    EXPECT_LE(most - least, 1);
  }

 private:
  void ReportSlots() {
    for (auto& [id, node] : in_.nodes) node.slots.clear();
    for (const auto& [p, a] : in_.assignments) {
      if (in_.nodes.count(a.owner)) Report(&in_.nodes[a.owner], p, "owner", 100);
      if (in_.nodes.count(a.standby)) Report(&in_.nodes[a.standby], p, "standby", 100);
    }
  }

  PlacementInput in_;
  int64_t lease_ = 0;
  int64_t revision_ = 0;
};

TEST(PlacementTest, SeededJoinsLeavesAndRestartsAlwaysSettleHealthyAndBalanced) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937 rng(seed);
    Simulation sim(6 + seed % 7);
    std::vector<std::string> ids = {"a", "b", "c", "d", "e"};
    std::set<std::string> up;
    for (int step = 0; step < 12; ++step) {
      const std::string& id = ids[rng() % ids.size()];
      const int action = static_cast<int>(rng() % 3);
      if (!up.count(id)) {
        sim.Join(id);
        up.insert(id);
      } else if (action == 0 && up.size() > 1) {
        sim.Leave(id);
        up.erase(id);
      } else {
        sim.Restart(id);
      }
      ASSERT_TRUE(sim.Settle(200)) << "seed " << seed << " step " << step;
      sim.ExpectHealthy();
    }
  }
}

}  // namespace
}  // namespace statewatch::control

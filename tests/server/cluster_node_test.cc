// Nodes under the control plane, in one process: three ClusterNodes on a real etcd
// (tests/control/etcd_fixture.h), each partition's stream a MemLog shared by the nodes (the
// fast tier; scripts/cluster-chaos.sh runs the real processes on JetStream). The cluster
// assigns every partition an owner and a standby; a node that stops hands its partitions
// to their standbys with every acknowledged event kept; a planned move and a drain end with
// the partitions served elsewhere and nothing lost.
#include <set>

#include "cluster_nodes_fixture.h"

namespace statewatch::control {
namespace {

using statewatch::testing::HumanMessage;

class ClusterNodeTest : public ClusterNodesFixture {
 protected:
  // Records `n` events on partition p's owner; their sequences.
  std::vector<uint64_t> RecordOn(const ClusterView& view, uint32_t p, int n) {
    HttpClient http(OwnerPort(view, p));
    std::vector<uint64_t> seqs;
    for (int i = 0; i < n; ++i) {
      auto s = statewatch::testing::Record(http, HumanMessage(SessionOf(p)));
      seqs.insert(seqs.end(), s.begin(), s.end());
    }
    return seqs;
  }

  // The sequences partition p's current owner holds for SessionOf(p).
  std::string StateOn(const ClusterView& view, uint32_t p) {
    HttpClient http(OwnerPort(view, p));
    auto r = http.Get("/v1/sessions/" + SessionOf(p) + "/state");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }
};

TEST_F(ClusterNodeTest, ThreeNodesGetEveryPartitionAnOwnerAndAStandby) {
  ClusterView view = StartThreeNodes();
  ASSERT_TRUE(view.controller.has_value());
  std::map<std::string, int> owned;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    const Assignment& a = view.placement.assignments.at(p);
    EXPECT_NE(a.owner, a.standby);
    ++owned[a.owner];
    EXPECT_EQ(RecordOn(view, p, 2).size(), 2u);
  }
  for (const char* id : {"n1", "n2", "n3"}) EXPECT_EQ(owned[id], 1) << id;
}

TEST_F(ClusterNodeTest, AStoppedOwnersPartitionsFailOverWithEveryAcknowledgedEvent) {
  ClusterView before = StartThreeNodes();
  const std::string victim = before.placement.assignments.at(0).owner;
  const int64_t epoch = before.placement.assignments.at(0).epoch;
  auto seqs = RecordOn(before, 0, 5);
  ASSERT_EQ(seqs.size(), 5u);
  const std::string state = StateOn(before, 0);

  nodes_[victim].reset();  // Shutdown: slots closed, lease revoked
  ClusterView after = WaitReady();
  const Assignment& a = after.placement.assignments.at(0);
  EXPECT_NE(a.owner, victim);
  EXPECT_GT(a.epoch, epoch);
  EXPECT_EQ(after.placement.nodes.count(victim), 0u);
  EXPECT_EQ(StateOn(after, 0), state);  // the same state version and last sequence
  auto more = RecordOn(after, 0, 1);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_GT(more[0], seqs.back());
}

TEST_F(ClusterNodeTest, APlannedMoveAndADrainServeThePartitionsElsewhere) {
  ClusterView view = StartThreeNodes();
  RecordOn(view, 1, 3);
  const std::string state = StateOn(view, 1);
  const std::string owner = view.placement.assignments.at(1).owner;
  std::string target = owner == "n1" ? "n2" : "n1";
  WaitOptions wait;
  wait.timeout = kSettle;
  auto moved = RequestMove(*client_, *keys_, 1, target, wait);
  ASSERT_OK(moved);
  EXPECT_NE(moved->find("\"owner\":\"" + target + "\""), std::string::npos) << *moved;
  ClusterView after_move = WaitReady();
  EXPECT_EQ(after_move.placement.assignments.at(1).owner, target);
  EXPECT_EQ(StateOn(after_move, 1), state);

  auto drained = RequestDrain(*client_, *keys_, target, wait);
  ASSERT_OK(drained);
  ClusterView after_drain = WaitReady();
  for (const auto& [p, a] : after_drain.placement.assignments) {
    EXPECT_NE(a.owner, target) << p;
    EXPECT_NE(a.standby, target) << p;
  }
  EXPECT_EQ(StateOn(after_drain, 1), state);
}

// Stage 2b: any node's own port answers any session (server/partition_router.h): writes and
// reads reach the partition's owner and say which one it is; a watcher on one partition
// drains notices from targets on the others; a batch spanning partitions is refused whole.
TEST_F(ClusterNodeTest, AnyNodesPortAnswersEverySessionAndDrainsAcrossPartitions) {
  ClusterView view = StartThreeNodes();
  const std::string watcher = SessionOf(0);
  for (const auto& [id, node] : nodes_) {
    HttpClient http(node->port());
    for (uint32_t p = 0; p < kPartitions; ++p) {
      auto r = http.Post("/v1/events", HumanMessage(SessionOf(p)));
      ASSERT_EQ(r.status, 200) << id << " partition " << p << ": " << r.body;
      EXPECT_EQ(r.headers["x-statewatch-partition"], std::to_string(p));
      EXPECT_EQ(r.headers["x-statewatch-owner"], view.placement.assignments.at(p).owner);
      auto state = http.Get("/v1/sessions/" + SessionOf(p) + "/state");
      EXPECT_EQ(state.status, 200) << state.body;
      EXPECT_EQ(state.body, StateOn(view, p)) << "partition " << p << " through " << id;
    }
  }
  HttpClient any(nodes_.at("n2")->port());
  // The node relays every partition's wakes on one WebSocket (read here as raw frames).
  statewatch::testing::RawConnection wakes(nodes_.at("n1")->port());
  ASSERT_NE(wakes.Upgrade("/v1/wakes?watcher=" + watcher).find(" 101 "), std::string::npos);
  for (uint32_t p = 1; p < kPartitions; ++p) {
    auto w = any.Post("/v1/watches", boost::json::object{{"watcher", watcher},
                                                             {"target", SessionOf(p)}});
    ASSERT_EQ(w.status, 200) << w.body;
    EXPECT_NE(w.body.find("\"watched\":true"), std::string::npos) << w.body;
    ASSERT_EQ(any.Post("/v1/events", HumanMessage(SessionOf(p))).status, 200);
  }
  // One wake for the watcher across the partitions (the node's window, A4): live (a
  // target's context key), or the relay's catch-up ("reconnected") when an upstream opened
  // after the notice did; the other targets' wakes wait for the window's end (20 s).
  std::multiset<std::string> woken;
  std::string frames;
  for (int i = 0; i < 8 && woken.empty(); ++i) {  // bounded: kWait each
    frames += wakes.ReadUntil("}");
    for (std::size_t open = frames.find('{'); open != std::string::npos; open = frames.find('{')) {
      const std::size_t close = frames.find('}', open);
      if (close == std::string::npos) break;
      auto w = boost::json::parse(frames.substr(open, close - open + 1)).as_object();
      frames.erase(0, close + 1);
      EXPECT_EQ(w.at("watcher").as_string(), watcher);
      woken.insert(std::string(w.at("reason").as_string()));
    }
  }
  ASSERT_EQ(woken.size(), 1u);
  bool known = woken.count("reconnected") > 0;
  for (uint32_t p = 1; p < kPartitions; ++p) {
    known = known || woken.count("session-state:" + SessionOf(p)) > 0;
  }
  EXPECT_TRUE(known) << *woken.begin();
  auto peek = any.Get("/v1/notices?watcher=" + watcher);
  ASSERT_EQ(peek.status, 200) << peek.body;
  EXPECT_EQ(peek.body.find("incomplete"), std::string::npos) << peek.body;
  auto drained = HttpClient(nodes_.at("n3")->port())
                     .Post("/v1/notices/drain", boost::json::object{{"watcher", watcher}});
  ASSERT_EQ(drained.status, 200) << drained.body;
  EXPECT_EQ(drained.body, peek.body);
  for (uint32_t p = 1; p < kPartitions; ++p) {
    EXPECT_NE(drained.body.find(SessionOf(p)), std::string::npos) << drained.body;
  }
  auto after = any.Get("/v1/notices?watcher=" + watcher);
  EXPECT_NE(after.body.find("\"notices\":[]"), std::string::npos) << after.body;

  boost::json::array batch{HumanMessage(SessionOf(0)), HumanMessage(SessionOf(1))};
  auto mixed = any.Post("/v1/events", batch);
  EXPECT_EQ(mixed.status, 400) << mixed.body;
  EXPECT_NE(mixed.body.find("cross_partition_batch"), std::string::npos) << mixed.body;
  EXPECT_EQ(StateOn(view, 0), any.Get("/v1/sessions/" + SessionOf(0) + "/state").body);

  auto versions = any.Post(
      "/v1/versions", boost::json::object{{"sessions", boost::json::array{SessionOf(2), SessionOf(0), SessionOf(1)}}});
  ASSERT_EQ(versions.status, 200) << versions.body;
  EXPECT_LT(versions.body.find(SessionOf(2)), versions.body.find(SessionOf(0))) << versions.body;
  EXPECT_LT(versions.body.find(SessionOf(0)), versions.body.find(SessionOf(1))) << versions.body;

  auto wrong = any.Get("/v1/sessions/" + SessionOf(1) + "/state?partition=0");
  EXPECT_EQ(wrong.status, 421) << wrong.body;
  auto whole = any.Get("/v1/stats");
  EXPECT_EQ(whole.status, 400) << whole.body;
  EXPECT_EQ(any.Get("/v1/stats?partition=2").status, 200);
}

}  // namespace
}  // namespace statewatch::control

namespace statewatch::control {
namespace {

// Readiness under the control plane: a node's port answers /readyz 200 once it owns, with a
// serving owner slot, every partition assigned to it; a standby slot's own port answers 503
// (it takes no writes), while its /healthz stays 200. A node's port answers HEAD like GET.
TEST_F(ClusterNodeTest, ANodeIsReadyOnceItOwnsItsPartitionsAndAStandbySlotIsNot) {
  namespace json = boost::json;
  for (const char* id : {"n1", "n2"}) StartNode(id);
  ClusterView view = WaitReady();
  for (const auto& [id, node] : nodes_) {
    HttpClient http(node->port());
    statewatch::testing::HttpResult r;
    // The node reads the assignments every poll (20 ms): bounded wait for its next round.
    for (int i = 0; i < 250; ++i) {
      r = http.Get("/readyz");
      if (r.status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ASSERT_EQ(r.status, 200) << id << ": " << r.body;
    EXPECT_EQ(r.json().at("status"), json::value("ready"));
    EXPECT_EQ(r.json().at("checks").at("lease"), json::value("held"));
    const json::value body = r.json();
    const json::object& parts = body.at("checks").at("partitions").as_object();
    for (uint32_t p = 0; p < kPartitions; ++p) {
      const bool mine = view.placement.assignments.at(p).owner == id;
      EXPECT_EQ(parts.contains(std::to_string(p)), mine) << id << " " << p << ": " << r.body;
    }
  }
  statewatch::testing::RawConnection raw(nodes_.begin()->second->port());
  ASSERT_TRUE(raw.Send("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
  const std::string head = raw.ReadUntilClosed();
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_EQ(head.substr(head.find("\r\n\r\n") + 4), "") << head;
  // A forwarded route too: the owner is asked GET, and the node leaves the body out.
  for (const char* target : {"/v1/stats?partition=0", "/v1/clock"}) {
    statewatch::testing::RawConnection fwd(nodes_.begin()->second->port());
    ASSERT_TRUE(fwd.Send(std::string("HEAD ") + target +
                         " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"));
    const std::string fwd_head = fwd.ReadUntilClosed();
    EXPECT_EQ(fwd_head.rfind("HTTP/1.1 200", 0), 0u) << target << ": " << fwd_head;
    EXPECT_EQ(fwd_head.substr(fwd_head.find("\r\n\r\n") + 4), "") << fwd_head;
  }
  const Assignment& a = view.placement.assignments.at(0);
  HttpClient standby(PortOf(view.placement.nodes.at(a.standby).Slot(0)->url));
  statewatch::testing::HttpResult r = standby.Get("/readyz");
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_EQ(r.error_code(), "standby") << r.body;
  EXPECT_EQ(standby.Get("/healthz").status, 200);
  HttpClient owner(OwnerPort(view, 0));
  EXPECT_EQ(owner.Get("/readyz").status, 200);
}

}  // namespace
}  // namespace statewatch::control

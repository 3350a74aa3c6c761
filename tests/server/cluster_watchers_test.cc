// The watcher directory and a watcher's reset saga on three nodes under etcd (as
// cluster_node_test.cc: ClusterNodes in one process on a real etcd, each partition's stream a
// MemLog): a peek or a drain through a node asks only the watcher's home and the partitions
// its directory lists (X-Statewatch-Owners names those that answered), and a reset of a
// watcher through a node removes its cursors on every partition.
#include "cluster_nodes_fixture.h"

namespace statewatch::control {
namespace {

using statewatch::testing::HumanMessage;

class ClusterWatchersTest : public ClusterNodesFixture {
 protected:
  void SetUp() override {
    ClusterNodesFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    for (const char* id : {"w1", "w2", "w3"}) StartNode(id);
  }

  // GET /v1/cursors at partition p's owner slot: 200 when the cursor exists, 404 when not.
  int CursorAt(const ClusterView& view, const std::string& watcher, const std::string& target) {
    const uint32_t p = engine::PartitionOfAgent(target.substr(6, target.find(':', 6) - 6),
                                                kPartitions);
    return HttpClient(OwnerPort(view, p))
        .Get("/v1/cursors?watcher=" + watcher + "&target=" + target)
        .status;
  }
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
  // A watch or an event the owner refuses (a misspelt field) lists no partition either.
  auto misspelt = any.Post("/v1/watches", boost::json::object{{"watcher", watcher},
                                                              {"target", SessionOf(2)},
                                                              {"targetAgent", "main"}});
  EXPECT_EQ(misspelt.status, 400) << misspelt.body;
  boost::json::value listed = HumanMessage(SessionOf(1));
  listed.as_object()["watchers"] = boost::json::array{watcher.c_str()};
  listed.as_object()["summry"] = "x";
  EXPECT_EQ(any.Post("/v1/events", listed).status, 400);
  EXPECT_EQ(any.Get("/v1/notices?watcher=" + watcher).headers["x-statewatch-owners"],
            "0=" + view.placement.assignments.at(0).owner);

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

// The target of each notice of a peek's or drain's answer, in order.
std::vector<std::string> NoticeTargets(const boost::json::object& answer) {
  std::vector<std::string> out;
  for (const boost::json::value& n : answer.at("notices").as_array()) {
    out.emplace_back(n.at("targetSessionKey").as_string());
  }
  return out;
}

// Issue 37: one partition refuses its part of a drain (422 request_id_reused: the id was used
// there by another request) after the others acknowledged theirs. The node answers every
// notice the others acknowledged, with the refusal as partition 1's error; partition 1's
// notice stays pending; the retry under the same id replays the same notices; a new drain
// delivers the last one. Every notice reaches the client exactly once.
TEST_F(ClusterWatchersTest, ADrainRefusedByOnePartitionLeavesEveryNoticeDeliverable) {
  ClusterView view = WaitReady();
  HttpClient any(nodes_.at("w2")->port());
  const std::string watcher = SessionOf(0);
  const std::string own = SessionOf(0, 1), t1 = SessionOf(1), t2 = SessionOf(2);
  for (const std::string& t : {own, t1, t2}) {
    auto w = any.Post("/v1/watches", boost::json::object{{"watcher", watcher}, {"target", t}});
    ASSERT_EQ(w.status, 200) << w.body;
    ASSERT_EQ(any.Post("/v1/events", HumanMessage(t)).status, 200);
  }
  // Every owner known to the node (a fan-out asks once; bounded: 100 polls of 20 ms).
  statewatch::testing::HttpResult peek;
  for (int i = 0; i < 100; ++i) {
    peek = any.Get("/v1/notices?watcher=" + watcher);
    if (peek.status == 200 && peek.body.find("incomplete") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(NoticeTargets(peek.json().as_object()), (std::vector<std::string>{own, t1, t2}))
      << peek.body;

  // The id "d-1" is taken at partition 1 by another request (an event sent to its slot).
  HttpClient slot1(OwnerPort(view, 1));
  auto taken = slot1.Post("/v1/events", HumanMessage(SessionOf(1, 2)), {{"X-Request-Id", "d-1"}});
  ASSERT_EQ(taken.status, 200) << taken.body;

  const statewatch::testing::Headers d1{{"X-Request-Id", "d-1"}};
  auto drained = any.Post("/v1/notices/drain", boost::json::object{{"watcher", watcher}}, d1);
  ASSERT_EQ(drained.status, 200) << drained.body;
  const boost::json::object body = drained.json().as_object();
  EXPECT_EQ(NoticeTargets(body), (std::vector<std::string>{own, t2})) << drained.body;
  EXPECT_EQ(body.at("incomplete"), true);
  EXPECT_EQ(boost::json::serialize(body.at("missingPartitions")), "[1]");
  const boost::json::object& why = body.at("partitionErrors").as_array().at(0).as_object();
  EXPECT_EQ(why.at("status"), 422);
  EXPECT_EQ(why.at("error").at("code"), "request_id_reused") << drained.body;

  // The retry under the same id: partitions 0 and 2 replay their recorded answers.
  auto again = any.Post("/v1/notices/drain", boost::json::object{{"watcher", watcher}}, d1);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(NoticeTargets(again.json().as_object()), (std::vector<std::string>{own, t2}))
      << again.body;

  // Partition 1's notice was never acknowledged: a new drain delivers it, and only it.
  auto fresh = any.Post("/v1/notices/drain", boost::json::object{{"watcher", watcher}},
                        {{"X-Request-Id", "d-2"}});
  ASSERT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_EQ(NoticeTargets(fresh.json().as_object()), (std::vector<std::string>{t1}))
      << fresh.body;
  EXPECT_EQ(fresh.body.find("incomplete"), std::string::npos) << fresh.body;
}

// Nodes that require tokens: a reader's (read scope) and a gateway's (write).
class ClusterWatchersScopedTest : public ClusterWatchersTest {
 protected:
  static constexpr const char* kRead = "Bearer cluster-read-token-0a1b2c";
  static constexpr const char* kWrite = "Bearer cluster-write-token-3d4e5f";
  void SetUp() override {
    tokens_ = {{"reader", auth::Sha256(std::string(kRead).substr(7)), auth::Scope::kRead},
               {"gateway", auth::Sha256(std::string(kWrite).substr(7)), auth::Scope::kWrite}};
    ClusterWatchersTest::SetUp();
  }
};

// A reset or deletion through a node journals a saga at the watcher's home and clears the
// other partitions before the home answers: a token the home would refuse (read scope) is
// refused at the node first, and no cursor anywhere is touched; the gateway's token resets
// every one.
TEST_F(ClusterWatchersScopedTest, ARemovalTheTokenMayNotMakeClearsNothingAnywhere) {
  ClusterView view = WaitReady();
  HttpClient any(nodes_.at("w2")->port());
  const statewatch::testing::Headers write{{"Authorization", kWrite}};
  const statewatch::testing::Headers read{{"Authorization", kRead}};
  const std::string watcher = SessionOf(0), t1 = SessionOf(1), t2 = SessionOf(2);
  for (const std::string& t : {t1, t2}) {
    auto w = any.Post("/v1/watches", boost::json::object{{"watcher", watcher}, {"target", t}},
                      write);
    ASSERT_EQ(w.status, 200) << w.body;
  }
  auto cursor_at = [&](const std::string& target) {
    const uint32_t p = engine::PartitionOfAgent(target.substr(6, target.find(':', 6) - 6),
                                                kPartitions);
    return HttpClient(OwnerPort(view, p))
        .Get("/v1/cursors?watcher=" + watcher + "&target=" + target, write)
        .status;
  };
  for (const char* method : {"POST", "DELETE"}) {
    const std::string target = std::string("/v1/sessions/") + watcher +
                               (std::string(method) == "POST" ? "/reset" : "");
    auto refused = any.Request(method, target, "", read);
    EXPECT_EQ(refused.status, 403) << method << " " << refused.body;
    EXPECT_EQ(refused.error_code(), "insufficient_scope") << refused.body;
    EXPECT_EQ(cursor_at(t1), 200) << method << ": the cursor at partition 1 was cleared";
    EXPECT_EQ(cursor_at(t2), 200) << method << ": the cursor at partition 2 was cleared";
  }
  auto reset = any.Request("POST", "/v1/sessions/" + watcher + "/reset", "", write);
  ASSERT_EQ(reset.status, 200) << reset.body;
  EXPECT_EQ(reset.headers["x-statewatch-saga"], "done");
  EXPECT_EQ(cursor_at(t1), 404);
  EXPECT_EQ(cursor_at(t2), 404);
}

}  // namespace
}  // namespace statewatch::control

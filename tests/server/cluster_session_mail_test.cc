// sessions_send across partitions through a node's port (docs/cluster-internals.md,
// "Session tools across partitions"): three ClusterNodes on a real etcd
// (tests/control/etcd_fixture.h), each partition's stream a MemLog shared by the nodes, as in
// cluster_node_test.cc. A send from a session of one partition to a session of another is accepted
// at the caller's partition and lands in the target's transcript once; the reply to its run, posted
// at any node, reaches the run's home, and the ping-pong turn back crosses again. With the target's
// owner stopped between the send and the apply, the message lands once the partition failed over.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "cluster_nodes_fixture.h"
#include "gateway_agents.h"

namespace statewatch::control {
namespace {

using statewatch::testing::Tool;
namespace json = boost::json;

class ClusterSessionMailTest : public ClusterNodesFixture {
 protected:
  ClusterSessionMailTest() { allow_agents_ = {"*"}; }  // spawns into any agent

  static std::string AgentOf(uint32_t p) {
    for (int i = 0;; ++i) {
      std::string agent = "mailer" + std::to_string(i);
      if (engine::PartitionOfAgent(agent, kPartitions) == p) return agent;
    }
  }
  static std::string SessionOf(uint32_t p) { return "agent:" + AgentOf(p) + ":main"; }

  // How often `text` (a JSON string's content; with `part`, any part of one) occurs in
  // `session`'s transcript, asked at `http` (any node's port) by `caller` (default: the
  // session itself).
  static int Occurrences(HttpClient& http, const std::string& session, const std::string& text,
                         const std::string& caller = "", bool part = false) {
    auto r = Tool(http, "sessions_history", caller.empty() ? session : caller,
                  json::object{{"sessionKey", session}, {"limit", 100}});
    if (r.status != 200) return -1;
    int n = 0;
    const std::string needle = part ? text : "\"" + text + "\"";
    for (auto at = r.body.find(needle); at != std::string::npos; at = r.body.find(needle, at + 1)) {
      ++n;
    }
    return n;
  }

  // Polls (bounded: kSettle) until `text` is in `session`'s transcript; its count then.
  static int WaitForText(HttpClient& http, const std::string& session, const std::string& text,
                         const std::string& caller = "", bool part = false) {
    const auto deadline = std::chrono::steady_clock::now() + kSettle;
    for (;;) {
      int n = Occurrences(http, session, text, caller, part);
      if (n > 0 || std::chrono::steady_clock::now() > deadline) return n;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // The first delivery to partition p's agent, read on the feed at p's owner (bounded: three
  // tries, each from a fresh view, as the balancer may still be moving the partition).
  json::object FirstDelivery(uint32_t p) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      std::string error;
      auto ws = statewatch::testing::WsClient::Connect(
          OwnerPort(View(), p), "/v1/deliveries?agentId=" + AgentOf(p), {}, &error);
      if (!ws) continue;
      if (auto m = ws->Next()) return statewatch::testing::WakeJson(*m);
    }
    return {};
  }
};

TEST_F(ClusterSessionMailTest, ASendCrossesPartitionsAndItsReplyComesBack) {
  StartThreeNodes();
  const std::string caller = SessionOf(0), target = SessionOf(1);
  HttpClient any(nodes_.at("n2")->port());
  auto sent = Tool(any, "sessions_send", caller,
                   json::object{{"sessionKey", target}, {"message", "ping-1"},
                                {"timeoutSeconds", 0}});
  ASSERT_EQ(sent.status, 200) << sent.body;
  auto answer = json::parse(sent.body).as_object();
  EXPECT_EQ(answer.at("status").as_string(), "accepted") << sent.body;
  const std::string run_id(answer.at("runId").as_string());
  EXPECT_EQ(WaitForText(any, target, "ping-1"), 1);

  // The target's reply, posted at another node, reaches the run at the caller's partition;
  // turn 1 goes to the caller, the caller's answer back across to the target.
  HttpClient other(nodes_.at("n3")->port());
  auto reply = other.Post("/v1/runs/" + run_id + "/reply", json::object{{"text", "pong-1"}});
  ASSERT_EQ(reply.status, 200) << reply.body;
  EXPECT_NE(reply.body.find("\"applied\":true"), std::string::npos) << reply.body;
  EXPECT_EQ(WaitForText(any, caller, "pong-1"), 1);
  auto again = other.Post("/v1/runs/" + run_id + "/reply", json::object{{"text", "ping-2"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(WaitForText(any, target, "ping-2"), 1);
  EXPECT_EQ(Occurrences(any, target, "ping-1"), 1);  // still once
}

// Each partition numbers its deliveries n * P + p, so the id an agent reads on its feed names
// its partition, and an acknowledgement through any node reaches that
// one. (When each partition counted from 1, two messages to two partitions were both
// delivery 1, and the node acknowledged the first partition's for both.)
TEST_F(ClusterSessionMailTest, ADeliveryAcknowledgedThroughANodeIsTheOneItsIdNames) {
  StartThreeNodes();
  const std::string caller = SessionOf(0);
  HttpClient any(nodes_.at("n2")->port());
  for (uint32_t p : {1u, 2u}) {
    auto sent = Tool(any, "sessions_send", caller,
                     json::object{{"sessionKey", SessionOf(p)},
                                  {"message", "for-p" + std::to_string(p)},
                                  {"timeoutSeconds", 0}});
    ASSERT_EQ(sent.status, 200) << sent.body;
    EXPECT_EQ(WaitForText(any, SessionOf(p), "for-p" + std::to_string(p)), 1);  // landed
  }
  for (uint32_t p : {1u, 2u}) {
    json::object delivery = FirstDelivery(p);
    ASSERT_TRUE(delivery.contains("deliveryId")) << json::serialize(delivery);
    const uint64_t id = delivery.at("deliveryId").to_number<uint64_t>();
    EXPECT_EQ(id % kPartitions, p) << json::serialize(delivery);
    EXPECT_NE(json::serialize(delivery).find("for-p" + std::to_string(p)), std::string::npos);
    auto acked = statewatch::testing::Ack(any, delivery);
    EXPECT_EQ(acked.status, 200) << acked.body;
    EXPECT_EQ(statewatch::testing::Ack(any, delivery).status, 404);  // once, and only its own
  }
}

TEST_F(ClusterSessionMailTest, AMessageToAStoppedOwnerLandsOnceAfterTheFailover) {
  ClusterView view = StartThreeNodes();
  const uint32_t home = 0, dest = 1;
  const std::string home_owner = view.placement.assignments.at(home).owner;
  const std::string dest_owner = view.placement.assignments.at(dest).owner;
  if (home_owner == dest_owner) GTEST_SKIP() << "one node owns both partitions";
  std::string via;
  for (const auto& [id, node] : nodes_) {
    if (id != dest_owner) via = id;
  }
  nodes_.at(dest_owner).reset();  // the target's owner is gone before the mail is applied
  nodes_.erase(dest_owner);
  HttpClient http(nodes_.at(via)->port());
  auto sent = Tool(http, "sessions_send", SessionOf(home),
                   json::object{{"sessionKey", SessionOf(dest)}, {"message", "after-failover"},
                                {"timeoutSeconds", 0}});
  ASSERT_EQ(sent.status, 200) << sent.body;
  EXPECT_EQ(WaitForText(http, SessionOf(dest), "after-failover"), 1);
}

// sessions_spawn into an agent of another partition (docs/cluster-internals.md,
// "Session tools across partitions"): the child is created at its partition (the task in
// its transcript once); the child's run end, posted at yet another node, is announced to
// the parent once (a retried finish changes nothing), and the parent's cursor at the
// child's partition — seeded by child_spawned — drains the child's notice through a node.
TEST_F(ClusterSessionMailTest, ASpawnCrossesPartitionsAndItsEndIsAnnouncedOnce) {
  StartThreeNodes();
  const std::string parent = SessionOf(0);
  HttpClient via(nodes_.at("n2")->port());
  auto spawned = Tool(via, "sessions_spawn", parent,
                      json::object{{"task", "spawn-task-1"}, {"agentId", AgentOf(1)}});
  ASSERT_EQ(spawned.status, 200) << spawned.body;
  auto answer = json::parse(spawned.body).as_object();
  EXPECT_EQ(answer.at("status").as_string(), "accepted") << spawned.body;
  const std::string run_id(answer.at("runId").as_string());
  const std::string child(answer.at("childSessionKey").as_string());
  EXPECT_EQ(engine::PartitionOfAgent(AgentOf(1), kPartitions), 1u);
  EXPECT_EQ(WaitForText(via, child, "spawn-task-1", parent), 1);

  HttpClient other(nodes_.at("n3")->port());
  const json::object finish{{"status", "ok"}, {"result", "spawn-result-1"}};
  auto done = other.Post("/v1/runs/" + run_id + "/finish", finish);
  ASSERT_EQ(done.status, 200) << done.body;
  EXPECT_NE(done.body.find("\"applied\":true"), std::string::npos) << done.body;
  EXPECT_EQ(WaitForText(via, parent, "spawn-result-1", "", /*part=*/true), 1);
  auto again = via.Post("/v1/runs/" + run_id + "/finish", finish);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_NE(again.body.find("\"applied\":false"), std::string::npos) << again.body;
  EXPECT_EQ(Occurrences(via, parent, "spawn-result-1", "", /*part=*/true), 1);

  // The parent's cursor at partition 1, seeded by child_spawned, sees a notifying change of
  // the child; a drain of the parent through a node reaches it (bounded: kSettle).
  statewatch::testing::Record(other, statewatch::testing::HumanMessage(child));
  const auto deadline = std::chrono::steady_clock::now() + kSettle;
  while (statewatch::testing::Notices(via, parent).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  json::array drained = statewatch::testing::Drain(via, parent);
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_NE(json::serialize(drained[0]).find(child), std::string::npos)
      << json::serialize(drained);
  EXPECT_TRUE(statewatch::testing::Notices(via, parent).empty());
}

}  // namespace
}  // namespace statewatch::control

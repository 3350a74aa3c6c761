// Cluster mode: a write or read addressing a session of another partition is answered 421
// "misdirected", naming the partition that owns it, and changes nothing. The daemon serves
// partition 0 of 2 (PartitionOfAgent: main -> 0, research -> 1).
#include <gtest/gtest.h>

#include "http_helpers.h"
#include "test_client.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kOwn = "agent:main:main";
const std::string kOther = "agent:research:x";
const std::string kMessage =
    "session agent:research:x (agent research) belongs to partition 1 of 2; this node owns "
    "partition 0: send it to partition 1's owner";

class MisdirectedTest : public ServerTest {
 protected:
  void SetUp() override {
    server::ServerOptions o = TestOptions();
    o.partition = 0;
    o.partitions = 2;
    o.messaging.tool_policy.allow_agents = {"*"};  // spawns into another agent get that far
    StartServer(std::move(o));
  }
  void ExpectMisdirected(const HttpResult& r, const std::string& message) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.status, 421) << r.body;
    EXPECT_EQ(r.error_code(), "misdirected") << r.body;
    EXPECT_EQ(r.error_message(), message) << r.body;
  }
};

TEST_F(MisdirectedTest, WritesToAnotherPartitionsSessionAre421AndChangeNothing) {
  auto first = Record(*http_, HumanMessage(kOwn));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0], 2u);  // n * 2 + 0
  ExpectMisdirected(http_->Post("/v1/events", HumanMessage(kOther)), kMessage);
  // One misdirected event refuses the whole call.
  ExpectMisdirected(
      http_->Post("/v1/events", json::array{HumanMessage(kOwn), HumanMessage(kOther)}),
      "events[1]: " + kMessage);
  // A watch whose target lives elsewhere (its cursor would live there).
  ExpectMisdirected(http_->Post("/v1/watches", json::object{{"watcher", kOwn}, {"target", kOther}}),
                    kMessage);
  // One such target refuses a whole array of watches.
  ExpectMisdirected(
      http_->Post("/v1/watches",
                  json::array{json::object{{"watcher", kOwn}, {"target", "agent:main:b"}},
                              json::object{{"watcher", kOwn}, {"target", kOther}}}),
      "watches[1]: " + kMessage);
  ExpectMisdirected(http_->Request("DELETE", "/v1/sessions/" + kOther), kMessage);
  // Nothing took a sequence, nothing was watched.
  auto next = Record(*http_, HumanMessage(kOwn));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], 4u);
  EXPECT_TRUE(Notices(*http_, kOwn).empty());
  // A watcher of another partition may watch this partition's session.
  EXPECT_EQ(http_->Post("/v1/watches", json::object{{"watcher", kOther}, {"target", kOwn}}).status,
            200);
}

// Reads of another partition's session would answer from a node that does not hold it
// ("version 0, no events"), so they are 421 as well; the registry and transcripts too.
TEST_F(MisdirectedTest, ReadsAndSessionTableWritesOfAnotherPartitionsSessionAre421) {
  ASSERT_EQ(Record(*http_, HumanMessage(kOwn)).size(), 1u);  // sequence 2
  ExpectMisdirected(http_->Get("/v1/sessions/" + kOther + "/state"), kMessage);
  ExpectMisdirected(http_->Get("/v1/sessions/" + kOther + "/state?changesSince=0"), kMessage);
  ExpectMisdirected(
      http_->Post("/v1/versions", json::object{{"sessions", json::array{kOwn, kOther}}}),
      "sessions[1]: " + kMessage);
  ExpectMisdirected(http_->Request("PUT", "/v1/sessions/" + kOther, R"({"label": "x"})"),
                    kMessage);
  ExpectMisdirected(
      http_->Post("/v1/sessions/" + kOther + "/messages",
                  json::object{{"role", "user"}, {"content", "hello"}}),
      kMessage);
  // This partition's session reads as before.
  HttpResult own = http_->Get("/v1/sessions/" + kOwn + "/state");
  ASSERT_EQ(own.status, 200) << own.body;
  EXPECT_EQ(own.json().at("stateVersion"), json::value(2));
}

// The session tools: a caller of another partition, and every session a tool addresses by
// key, label or agent, are refused before the tool changes anything.
TEST_F(MisdirectedTest, SessionToolsAddressingAnotherPartitionAre421AndChangeNothing) {
  ASSERT_EQ(Record(*http_, HumanMessage(kOwn)).size(), 1u);  // sequence 2
  ExpectMisdirected(Tool(*http_, "session_status", kOther, json::object{}), kMessage);
  ExpectMisdirected(Tool(*http_, "session_status", kOwn, json::object{{"sessionKey", kOther}}),
                    kMessage);
  ExpectMisdirected(Tool(*http_, "sessions_history", kOwn, json::object{{"sessionKey", kOther}}),
                    kMessage);
  ExpectMisdirected(Tool(*http_, "sessions_send", kOwn,
                         json::object{{"sessionKey", kOther}, {"message", "hi"}}),
                    kMessage);
  ExpectMisdirected(Tool(*http_, "sessions_send", kOwn,
                         json::object{{"agentId", "research"}, {"message", "hi"}}),
                    "session agent:research:main (agent research) belongs to partition 1 of 2; "
                    "this node owns partition 0: send it to partition 1's owner");
  // A child of an agent of another partition would live there.
  HttpResult spawn = Tool(*http_, "sessions_spawn", kOwn,
                          json::object{{"task", "look"}, {"agentId", "research"}});
  EXPECT_EQ(spawn.status, 421) << spawn.body;
  EXPECT_EQ(spawn.error_code(), "misdirected") << spawn.body;
  EXPECT_EQ(spawn.error_message().rfind("session agent:research:subagent:", 0), 0u) << spawn.body;
  // Nothing changed: no event took a sequence, no run, no child, no transcript.
  auto next = Record(*http_, HumanMessage(kOwn));
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0], 4u);
  HttpResult children = Tool(*http_, "subagents", kOwn, json::object{{"action", "list"}});
  ASSERT_EQ(children.status, 200) << children.body;
  EXPECT_TRUE(children.json().at("active").as_array().empty()) << children.body;
  EXPECT_TRUE(children.json().at("recent").as_array().empty()) << children.body;
  HttpResult history =
      Tool(*http_, "sessions_history", kOwn, json::object{{"sessionKey", "current"}});
  ASSERT_EQ(history.status, 200) << history.body;
  EXPECT_TRUE(history.json().at("messages").as_array().empty()) << history.body;
}

}  // namespace
}  // namespace statewatch::testing

// Reads across partitions through a node's port (docs/cluster-internals.md,
// "Reads across partitions"), on three ClusterNodes and a real etcd: sessions_list lists
// every partition's sessions, a cursor pages through them with no skip or repeat, a sandboxed
// caller sees what it would on one node (itself and its children, one of them in another
// partition), and session_status of another partition's session answers from any node.
#include <algorithm>
#include <set>
#include <vector>

#include "cluster_nodes_fixture.h"

namespace statewatch::control {
namespace {

using statewatch::testing::PutSession;
using statewatch::testing::Tool;
namespace json = boost::json;

// Every test reads across the three nodes n1, n2 and n3, started ready by SetUp.
class ClusterReadsTest : public ClusterNodesFixture {
 protected:
  void SetUp() override {
    ClusterNodesFixture::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    StartThreeNodes();
  }

  static std::string AgentOf(uint32_t p) {
    const std::string s = SessionOf(p);
    return s.substr(6, s.find(':', 6) - 6);
  }
  // The session `name` of partition p's agent: "agent:<agent>:<name>".
  static std::string KeyIn(uint32_t p, const std::string& name) {
    return "agent:" + AgentOf(p) + ":" + name;
  }
  // `r` is refused with `status` and a body that says `text`.
  static void ExpectRefused(const statewatch::testing::HttpResult& r, int status,
                            const std::string& text) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_NE(r.body.find(text), std::string::npos) << r.body;
  }
  static std::vector<std::string> Keys(const json::object& answer) {
    std::vector<std::string> keys;
    for (const json::value& row : answer.at("sessions").as_array()) {
      keys.emplace_back(row.at("key").as_string());
    }
    return keys;
  }
};

TEST_F(ClusterReadsTest, ListPagesEveryPartitionAndStatusReadsAnother) {
  HttpClient any(nodes_.at("n2")->port());
  std::vector<std::string> keys;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    for (int i = 0; i < 3; ++i) {
      keys.push_back(KeyIn(p, "s" + std::to_string(i)));
      PutSession(any, keys.back(), json::object{{"label", "l" + std::to_string(i)}});
    }
  }
  const std::string caller = keys.front();
  auto whole = Tool(any, "sessions_list", caller, json::object{{"limit", 200}});
  ASSERT_EQ(whole.status, 200) << whole.body;
  const std::vector<std::string> all = Keys(json::parse(whole.body).as_object());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()),
            std::set<std::string>(keys.begin(), keys.end()));
  // Equal activity: the single node's order is by key then agent.
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end())) << whole.body;

  std::vector<std::string> paged;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {  // 9 rows, 4 a page: 3 pages
    json::object params{{"limit", 4}};
    if (!cursor.empty()) params["cursor"] = cursor;
    HttpClient at(nodes_.at(page % 2 ? "n1" : "n3")->port());  // any node continues a cursor
    auto r = Tool(at, "sessions_list", caller, params);
    ASSERT_EQ(r.status, 200) << r.body;
    json::object o = json::parse(r.body).as_object();
    for (const std::string& k : Keys(o)) paged.push_back(k);
    if (!o.at("hasMore").as_bool()) break;
    EXPECT_EQ(o.at("nextOffset").as_int64(), static_cast<int64_t>(paged.size()));
    cursor = std::string(o.at("nextCursor").as_string());
  }
  EXPECT_EQ(paged, all);

  auto status = Tool(any, "session_status", caller, json::object{{"sessionKey", keys.back()}});
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_NE(status.body.find("\"sessionKey\":\"" + keys.back() + "\""), std::string::npos);
  ExpectRefused(Tool(any, "sessions_list", caller, json::object{{"cursor", "zz"}}), 400, "cursor");
}

// A single node finds a session by its session id among all its sessions; through a node,
// the caller's home does not know an id of another partition's session, so every partition
// is asked (docs/cluster-internals.md, "Reads across partitions").
TEST_F(ClusterReadsTest, ASessionIdOfAnotherPartitionIsFoundFromAnyNode) {
  HttpClient any(nodes_.at("n3")->port());
  const std::string caller = SessionOf(0);
  const std::string remote = KeyIn(2, "held");
  PutSession(any, caller, json::object{{"label", "caller"}});
  PutSession(any, remote, json::object{{"sessionId", "4be1c0de-0000-4000-8000-000000000002"}});
  for (const char* tool : {"session_status", "sessions_history"}) {
    auto r = Tool(any, tool, caller,
                  json::object{{"sessionKey", "4be1c0de-0000-4000-8000-000000000002"}});
    ASSERT_EQ(r.status, 200) << tool << ": " << r.body;
    EXPECT_NE(r.body.find(remote), std::string::npos) << tool << ": " << r.body;
  }
  // A send naming the id: looked up, then sent by key, as one node does.
  auto sent = Tool(any, "sessions_send", caller,
                   json::object{{"sessionKey", "4be1c0de-0000-4000-8000-000000000002"},
                                {"message", "hi"},
                                {"timeoutSeconds", 0}});
  ASSERT_EQ(sent.status, 200) << sent.body;
  EXPECT_EQ(json::parse(sent.body).at("sessionKey"), json::value(remote)) << sent.body;
  // Under an X-Request-Id, a retry (the answer was lost) gets the first answer, not a 422 for
  // the id reused: the home saw the id with two bodies, the one naming the id and the one by
  // key (a short id, and one so long that the second call's id is derived from its digest).
  for (const std::string id : {std::string("send-by-id-1"), std::string(120, 'r')}) {
    statewatch::testing::Headers with_id = statewatch::testing::As(caller);
    with_id.emplace_back("X-Request-Id", id);
    const json::object params{{"sessionKey", "4be1c0de-0000-4000-8000-000000000002"},
                              {"message", "once"},
                              {"timeoutSeconds", 0}};
    auto first = any.Post("/v1/tools/sessions_send", params, with_id);
    ASSERT_EQ(first.status, 200) << first.body;
    auto retried = any.Post("/v1/tools/sessions_send", params, with_id);
    EXPECT_EQ(retried.status, 200) << retried.body;
    EXPECT_EQ(retried.body, first.body);
  }
  const std::string unknown_id = "4be1c0de-0000-4000-8000-00000000dead";
  // The home's answer, as on one node.
  ExpectRefused(Tool(any, "session_status", caller, json::object{{"sessionKey", unknown_id}}),
                404, "Unknown sessionKey: " + unknown_id);
  ExpectRefused(Tool(any, "sessions_send", caller,
                     json::object{{"sessionKey", unknown_id}, {"message", "hi"}}),
                404, "Session not found");
}

// sessions_send by label in an agent of another partition finds the session there and
// answers as a send by its key does (the access checks run after the lookup, as on one node).
TEST_F(ClusterReadsTest, ASendByLabelFindsTheSessionInItsAgentsPartition) {
  HttpClient any(nodes_.at("n2")->port());
  const std::string caller = SessionOf(0);
  const std::string scout = KeyIn(1, "scout");
  PutSession(any, scout, json::object{{"label", "scout"}});
  auto r = Tool(any, "sessions_send", caller,
                json::object{{"label", "scout"}, {"agentId", AgentOf(1)}, {"message", "hi"},
                             {"timeoutSeconds", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  json::object o = json::parse(r.body).as_object();
  EXPECT_EQ(o.at("sessionKey"), json::value(scout)) << r.body;
  auto by_key = Tool(any, "sessions_send", caller,
                     json::object{{"sessionKey", scout}, {"message", "hi"}, {"timeoutSeconds", 0}});
  ASSERT_EQ(by_key.status, 200) << by_key.body;
  EXPECT_EQ(o.at("status"), json::parse(by_key.body).at("status")) << r.body << by_key.body;
  ExpectRefused(Tool(any, "sessions_send", caller,
                     json::object{{"label", "nobody"}, {"agentId", AgentOf(1)}, {"message", "hi"}}),
                404, "No session found with label: nobody");
}

TEST_F(ClusterReadsTest, ASandboxedCallerSeesOnlyItsTreeAcrossPartitions) {
  HttpClient any(nodes_.at("n1")->port());
  const std::string caller = SessionOf(0);
  const std::string child = KeyIn(1, "child");
  const std::string stranger = KeyIn(2, "other");
  PutSession(any, caller, json::object{{"sandboxed", true}});
  PutSession(any, child, json::object{{"parentSessionKey", caller}});
  PutSession(any, stranger, json::object{{"label", "x"}});
  auto r = Tool(any, "sessions_list", caller, json::object{});
  ASSERT_EQ(r.status, 200) << r.body;
  json::object o = json::parse(r.body).as_object();
  std::vector<std::string> seen = Keys(o);
  EXPECT_EQ(std::set<std::string>(seen.begin(), seen.end()),
            (std::set<std::string>{caller, child}))
      << r.body;
  EXPECT_EQ(o.at("visibility").at("mode"), "tree") << r.body;
  // The stranger of another partition is refused as on one node.
  auto status = Tool(any, "session_status", caller, json::object{{"sessionKey", stranger}});
  EXPECT_EQ(status.status, 403) << status.body;
  auto mine = Tool(any, "session_status", caller, json::object{{"sessionKey", child}});
  EXPECT_EQ(mine.status, 200) << mine.body;
}

}  // namespace
}  // namespace statewatch::control

// Reads across partitions through PartitionRouter (docs/cluster-internals.md,
// "Reads across partitions"), against fake partitions that check the X-Statewatch-Internal
// signature: sessions_list merged from every partition in the single node's order and paged
// with a cursor without a skip or a repeat, a bad cursor refused, a client's internal
// header never forwarded, and session_status of another partition's session answered there
// under the context the caller's home resolved.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/agent_partition.h"
#include "server/internal_call.h"
#include "server/partition_router.h"
#include "status_matchers.h"
#include "tools/sessions_list_window.h"

namespace statewatch::server {
namespace {
namespace json = boost::json;

constexpr uint32_t kPartitions = 3;
constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

std::string AgentOf(uint32_t p, int nth = 0) {
  for (int i = 0;; ++i) {
    std::string agent = "worker" + std::to_string(i);
    if (engine::PartitionOfAgent(agent, kPartitions) == p && nth-- == 0) return agent;
  }
}

std::string HeaderOf(const net::HttpRequestOptions& o, std::string_view name) {
  for (const auto& [n, v] : o.headers) {
    if (n == name) return v;
  }
  return "";
}

class RouterReadsTest : public ::testing::Test {
 protected:
  RouterReadsTest() {
    // Four sessions per partition; partition 1 ties on updatedAt with partition 0.
    for (uint32_t p = 0; p < kPartitions; ++p) {
      for (int i = 0; i < 4; ++i) {
        const std::string agent = AgentOf(p);
        const int64_t at = p == 1 ? 1000 - 10 * i : 1000 - 10 * i - 3 * static_cast<int64_t>(p);
        rows_[p].push_back(json::object{{"key", "agent:" + agent + ":s" + std::to_string(i)},
                                        {"agentId", agent},
                                        {"updatedAt", at}});
      }
    }
  }

  PartitionRouter Router() {
    PartitionRouterOptions o;
    o.partitions = kPartitions;
    o.secret = kSecret;
    o.owner = [](uint32_t p, bool) -> std::optional<OwnerAddress> {
      return OwnerAddress{"n" + std::to_string(p), "http://owner" + std::to_string(p)};
    };
    o.send = [this](const std::string& url, const std::string& method, const std::string& target,
                    const std::string& body,
                    const net::HttpRequestOptions& options) -> Result<net::HttpAnswer> {
      *options.sent = true;
      const uint32_t p = static_cast<uint32_t>(url.back() - '0');
      std::lock_guard lock(mu_);
      calls_.push_back(std::to_string(p) + " " + target);
      bodies_.push_back(body);
      net::HttpAnswer a;
      a.status = 200;
      if (IsInternalPath(target)) {
        Status ok = CheckInternal(kSecret, method, target, body,
                                  HeaderOf(options, kInternalHeader));
        if (!ok.ok()) {
          a.status = 403;
          a.body = ok.message();
          return a;
        }
      }
      if (auto it = scripted_.find(std::to_string(p) + " " + target); it != scripted_.end()) {
        a.status = it->second.first;
        a.body = it->second.second;
      } else if (target == "/v1/internal/caller-context") {
        a.body = R"({"caller":{"sessionKey":"agent:)" + AgentOf(0) +
                 R"(:main","agentId":")" + AgentOf(0) +
                 R"("},"visibility":"tree","agentToAgent":{"enabled":false,"allow":[]}})";
      } else if (target == "/v1/internal/tools/sessions_list") {
        json::object in = json::parse(body).as_object();
        contexts_.push_back(json::serialize(in["context"]));
        const json::object& window = in["window"].as_object();
        std::vector<json::object> rows = rows_[p];
        std::sort(rows.begin(), rows.end(), [](const json::object& x, const json::object& y) {
          return tools::ListsBefore(tools::ListSortKeyOf(x), tools::ListSortKeyOf(y));
        });
        if (const json::value* after = window.if_contains("after")) {
          const tools::ListSortKey k = tools::ListSortKeyOf(after->as_object());
          rows.erase(rows.begin(),
                     std::find_if(rows.begin(), rows.end(), [&](const json::object& r) {
                       return tools::ListsBefore(k, tools::ListSortKeyOf(r));
                     }));
        }
        json::array page;
        const auto take = static_cast<std::size_t>(window.at("take").as_int64());
        for (std::size_t i = 0; i < rows.size() && i < take; ++i) page.push_back(rows[i]);
        a.body = json::serialize(json::object{{"rows", page},
                                              {"kept", rows.size()},
                                              {"childLinks", json::array()},
                                              {"limitApplied", 5},
                                              {"visibility", json::object{{"mode", "tree"}}}});
      } else {
        a.body = R"({"partition":)" + std::to_string(p) + R"(,"target":")" + target + "\"}";
      }
      return a;
    };
    o.sleep = [](std::chrono::milliseconds) {};
    o.retry_for = std::chrono::milliseconds(0);
    return PartitionRouter(std::move(o));
  }

  net::ListenerRequest Tool(const std::string& tool, const std::string& body) {
    net::ListenerRequest r;
    r.method = "POST";
    r.target = "/v1/tools/" + tool;
    r.body = body;
    r.headers = {{"x-session-key", "agent:" + AgentOf(0) + ":main"},
                 {"x-statewatch-internal", "v1=forged"}};
    return r;
  }

  // Every row of every partition in the single node's order.
  std::vector<std::string> AllKeys() {
    std::vector<json::object> all;
    for (auto& [p, rows] : rows_) all.insert(all.end(), rows.begin(), rows.end());
    std::sort(all.begin(), all.end(), [](const json::object& x, const json::object& y) {
      return tools::ListsBefore(tools::ListSortKeyOf(x), tools::ListSortKeyOf(y));
    });
    std::vector<std::string> keys;
    for (const auto& r : all) keys.emplace_back(r.at("key").as_string());
    return keys;
  }

  std::mutex mu_;
  std::map<uint32_t, std::vector<json::object>> rows_;
  std::vector<std::string> calls_;
  std::vector<std::string> contexts_;
  std::vector<std::string> bodies_;  // of calls_, in the same order
  // "<partition> <target>" -> the status and body that partition answers.
  std::map<std::string, std::pair<int, std::string>> scripted_;
};

TEST_F(RouterReadsTest, ListPagesThroughEveryPartitionWithACursor) {
  PartitionRouter router = Router();
  std::vector<std::string> seen;
  std::string cursor;
  for (int page = 0; page < 10; ++page) {  // 12 rows, 5 a page: 3 pages
    json::object params{{"limit", 5}};
    if (!cursor.empty()) params["cursor"] = cursor;
    net::ListenerAnswer a = router.Route(Tool("sessions_list", json::serialize(params)));
    ASSERT_EQ(a.status, 200) << a.body;
    json::object out = json::parse(a.body).as_object();
    for (const json::value& row : out["sessions"].as_array()) {
      seen.emplace_back(row.at("key").as_string());
    }
    EXPECT_EQ(out["count"].as_int64(), static_cast<int64_t>(out["sessions"].as_array().size()));
    EXPECT_EQ(out["visibility"].as_object().at("mode"), "tree");
    if (!out["hasMore"].as_bool()) {
      EXPECT_FALSE(out.contains("nextCursor"));
      break;
    }
    EXPECT_EQ(out["nextOffset"].as_int64(), static_cast<int64_t>(seen.size()));
    cursor = std::string(out["nextCursor"].as_string());
  }
  EXPECT_EQ(seen, AllKeys());  // no row skipped, none repeated, the single node's order
  // Every partition listed under the context the caller's home resolved.
  ASSERT_FALSE(contexts_.empty());
  for (const std::string& c : contexts_) EXPECT_NE(c.find("\"visibility\":\"tree\""), std::string::npos);
}

TEST_F(RouterReadsTest, OffsetPagingMatchesTheCursor) {
  PartitionRouter router = Router();
  net::ListenerAnswer a = router.Route(Tool("sessions_list", R"({"limit":5,"offset":5})"));
  ASSERT_EQ(a.status, 200) << a.body;
  json::object out = json::parse(a.body).as_object();
  std::vector<std::string> keys;
  for (const json::value& row : out["sessions"].as_array()) keys.emplace_back(row.at("key").as_string());
  std::vector<std::string> all = AllKeys();
  EXPECT_EQ(keys, std::vector<std::string>(all.begin() + 5, all.begin() + 10));
  EXPECT_EQ(out["nextOffset"].as_int64(), 10);
}

TEST_F(RouterReadsTest, ABadCursorIsRefusedNamingIt) {
  PartitionRouter router = Router();
  for (const char* body : {R"({"cursor":"not a token"})", R"({"cursor":"e30"})", R"({"cursor":7})"}) {
    net::ListenerAnswer a = router.Route(Tool("sessions_list", body));
    EXPECT_EQ(a.status, 400) << body;
    EXPECT_NE(a.body.find("cursor must be the nextCursor"), std::string::npos) << a.body;
  }
  std::lock_guard lock(mu_);
  EXPECT_TRUE(calls_.empty());  // refused before any partition was asked
}

TEST_F(RouterReadsTest, InternalRoutesAreRefusedToClients) {
  PartitionRouter router = Router();
  net::ListenerRequest r = Tool("x", "{}");
  r.target = "/v1/internal/caller-context";
  net::ListenerAnswer a = router.Route(r);
  EXPECT_EQ(a.status, 403);
  EXPECT_NE(a.body.find("cluster's own processes"), std::string::npos) << a.body;
}

TEST_F(RouterReadsTest, StatusOfAnotherPartitionsSessionIsAnsweredThere) {
  PartitionRouter router = Router();
  const std::string remote = "agent:" + AgentOf(2) + ":main";
  net::ListenerAnswer a =
      router.Route(Tool("session_status", R"({"sessionKey":")" + remote + "\"}"));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(a.body.find("\"partition\":2,\"target\":\"/v1/internal/tools/session_status\""),
            std::string::npos) << a.body;
  std::lock_guard lock(mu_);
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_[0], "0 /v1/internal/caller-context");  // the caller's home first
  // A session of the caller's own partition goes there as before, unsigned.
  calls_.clear();
}

TEST_F(RouterReadsTest, ASessionIdUnknownAtHomeIsAskedOfEveryPartition) {
  const std::string not_found =
      R"j({"error":{"code":"unknown_session","message":"Session not found: 5f0c (use the full )j"
      R"j(sessionKey from sessions_list)"}})j";
  scripted_["0 /v1/tools/session_status"] = {404, not_found};
  scripted_["1 /v1/internal/tools/session_status"] = {421, R"({"error":{"code":"misdirected"}})"};
  scripted_["2 /v1/internal/tools/session_status"] = {200, R"({"sessionKey":"found at 2"})"};
  PartitionRouter router = Router();
  net::ListenerAnswer a = router.Route(Tool("session_status", R"({"sessionKey":"5f0c"})"));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, R"({"sessionKey":"found at 2"})");
  {
    std::lock_guard lock(mu_);
    ASSERT_EQ(calls_.size(), 4u);
    EXPECT_EQ(calls_[0], "0 /v1/tools/session_status");  // the home first, as before
    EXPECT_EQ(calls_[1], "0 /v1/internal/caller-context");
    calls_.clear();
  }
  // Nowhere: the home's answer. Found at home: nobody else is asked.
  scripted_["2 /v1/internal/tools/session_status"] = {404, not_found};
  a = router.Route(Tool("session_status", R"({"sessionKey":"5f0c"})"));
  EXPECT_EQ(a.status, 404);
  EXPECT_EQ(a.body, not_found);
  scripted_.erase("0 /v1/tools/session_status");
  {
    std::lock_guard lock(mu_);
    calls_.clear();
  }
  a = router.Route(Tool("sessions_history", R"({"sessionKey":"5f0c"})"));
  ASSERT_EQ(a.status, 200) << a.body;
  std::lock_guard lock(mu_);
  EXPECT_EQ(calls_, std::vector<std::string>{"0 /v1/tools/sessions_history"});
}

TEST_F(RouterReadsTest, ASendByLabelInAnotherPartitionsAgentIsLookedUpThere) {
  const std::string agent = AgentOf(1);
  scripted_["1 /v1/internal/tools/sessions_list"] = {
      200, R"({"rows":[{"key":"agent:)" + agent + R"(:found","agentId":")" + agent + R"("}]})"};
  PartitionRouter router = Router();
  net::ListenerAnswer a = router.Route(Tool(
      "sessions_send",
      R"({"label":"scout","agentId":")" + agent + R"(","message":"hi","timeoutSeconds":0})"));
  ASSERT_EQ(a.status, 200) << a.body;
  {
    std::lock_guard lock(mu_);
    ASSERT_EQ(calls_.size(), 3u);
    EXPECT_EQ(calls_[0], "0 /v1/internal/caller-context");
    EXPECT_EQ(calls_[1], "1 /v1/internal/tools/sessions_list");
    // The lookup is not narrowed by the caller's visibility: the send checks access after.
    json::object lookup = json::parse(bodies_[1]).as_object();
    EXPECT_EQ(lookup["context"].as_object()["visibility"], "all");
    EXPECT_EQ(lookup["params"].as_object()["label"], "scout");
    EXPECT_EQ(calls_[2], "0 /v1/tools/sessions_send");  // the home, by key
    json::object sent = json::parse(bodies_[2]).as_object();
    EXPECT_EQ(sent["sessionKey"], json::value("agent:" + agent + ":found"));
    EXPECT_FALSE(sent.contains("label"));
    EXPECT_EQ(sent["message"], "hi");
    calls_.clear();
    bodies_.clear();
  }
  // Two rows: refused as one node refuses them; none: the home answers as it came.
  scripted_["1 /v1/internal/tools/sessions_list"] = {
      200, R"({"rows":[{"key":"agent:)" + agent + R"(:a"},{"key":"agent:)" + agent + R"(:b"}]})"};
  a = router.Route(Tool("sessions_send",
                        R"({"label":"scout","agentId":")" + agent + R"(","message":"hi"})"));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("Multiple sessions found with label: scout"), std::string::npos) << a.body;
  scripted_["1 /v1/internal/tools/sessions_list"] = {200, R"({"rows":[]})"};
  {
    std::lock_guard lock(mu_);
    calls_.clear();
    bodies_.clear();
  }
  a = router.Route(Tool("sessions_send",
                        R"({"label":"scout","agentId":")" + agent + R"(","message":"hi"})"));
  std::lock_guard lock(mu_);
  ASSERT_EQ(calls_.size(), 3u);
  EXPECT_EQ(calls_[2], "0 /v1/tools/sessions_send");
  EXPECT_NE(bodies_[2].find("\"label\":\"scout\""), std::string::npos) << bodies_[2];
}

TEST_F(RouterReadsTest, OwnPartitionAndNoSecretKeepTheOldRouting) {
  PartitionRouter router = Router();
  net::ListenerAnswer a = router.Route(
      Tool("session_status", R"({"sessionKey":"agent:)" + AgentOf(0, 1) + ":main\"}"));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(a.body.find("\"target\":\"/v1/tools/session_status\""), std::string::npos);
}

TEST(InternalCallTest, SignsMethodTargetAndBody) {
  const std::string sig = InternalSignature(kSecret, "POST", "/v1/internal/x", "{}");
  EXPECT_EQ(sig.size(), 67u);
  EXPECT_OK(CheckInternal(kSecret, "POST", "/v1/internal/x", "{}", sig));
  EXPECT_FALSE(CheckInternal(kSecret, "POST", "/v1/internal/x", "{ }", sig).ok());
  EXPECT_FALSE(CheckInternal(kSecret, "GET", "/v1/internal/x", "{}", sig).ok());
  EXPECT_FALSE(CheckInternal(kSecret, "POST", "/v1/internal/y", "{}", sig).ok());
  EXPECT_FALSE(CheckInternal("another secret of 32 bytes......", "POST", "/v1/internal/x", "{}", sig).ok());
  Status none = CheckInternal(kSecret, "POST", "/v1/internal/x", "{}", "");
  EXPECT_EQ(none.code(), Status::Code::kPermissionDenied);
  EXPECT_NE(none.message().find("X-Statewatch-Internal"), std::string::npos);
  EXPECT_FALSE(CheckInternal("", "POST", "/v1/internal/x", "{}", sig).ok());
  auto secret = GenerateClusterSecret();
  ASSERT_OK(secret);
  EXPECT_EQ(secret->size(), 64u);
}

}  // namespace
}  // namespace statewatch::server

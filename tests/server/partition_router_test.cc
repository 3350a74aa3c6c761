// PartitionRouter against a fake directory and a fake HTTP exchange: which partition each
// route reaches, what travels with it, and what a client is told when an owner refuses,
// cannot be reached, or loses the answer — with a manual clock (no sleeps).
#include "server/partition_router.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "engine/agent_partition.h"

namespace statewatch::server {
namespace {

namespace json = boost::json;

constexpr uint32_t kPartitions = 3;

std::string SessionOf(uint32_t p) {
  for (int i = 0;; ++i) {
    std::string agent = "worker" + std::to_string(i);
    if (engine::PartitionOfAgent(agent, kPartitions) == p) return "agent:" + agent + ":main";
  }
}

struct Call {
  std::string url, method, target, body;
  net::HttpRequestOptions options;
};

class PartitionRouterTest : public ::testing::Test {
 protected:
  PartitionRouterTest() {
    for (uint32_t p = 0; p < kPartitions; ++p) {
      owners_[p] = OwnerAddress{"n" + std::to_string(p), "http://owner" + std::to_string(p)};
    }
  }

  PartitionRouter Router() {
    PartitionRouterOptions o;
    o.partitions = kPartitions;
    o.owner = [this](uint32_t p, bool refresh) -> std::optional<OwnerAddress> {
      std::lock_guard lock(mu_);
      if (refresh) {
        ++refreshes_;
        unread_.erase(p);
      }
      if (unread_.count(p) != 0) return std::nullopt;
      auto it = owners_.find(p);
      if (it == owners_.end()) return std::nullopt;
      return it->second;
    };
    o.send = [this](const std::string& url, const std::string& method, const std::string& target,
                    const std::string& body,
                    const net::HttpRequestOptions& options) -> Result<net::HttpAnswer> {
      std::lock_guard lock(mu_);
      calls_.push_back({url, method, target, body, options});
      if (auto it = script_.find(url); it != script_.end() && !it->second.empty()) {
        auto next = it->second.front();
        it->second.erase(it->second.begin());
        if (next.status == -1) return Status::IOError("connection refused");
        if (next.status == -2) {
          *options.sent = true;
          return Status::IOError("no complete answer before the timeout");
        }
        return next;
      }
      *options.sent = true;
      net::HttpAnswer a;
      a.status = 200;
      a.headers = {{"Content-Type", "application/json"}, {"Connection", "close"}};
      const std::string p = url.substr(url.size() - 1);
      if (target.rfind("/v1/notices", 0) == 0) {
        a.body = R"({"notices":[{"targetSessionKey":"from)" + p + R"("}]})";
      } else {
        a.body = R"({"from":)" + p + "}";
      }
      return a;
    };
    o.sleep = [this](std::chrono::milliseconds d) { slept_ += d; };
    o.retry_for = std::chrono::milliseconds(1000);
    o.retry_wait = std::chrono::milliseconds(100);
    o.fanout_timeout = fanout_timeout_;
    return PartitionRouter(std::move(o));
  }

  static net::ListenerRequest Request(std::string method, std::string target, std::string body = "",
                                      std::vector<std::pair<std::string, std::string>> headers = {}) {
    net::ListenerRequest r;
    r.method = std::move(method);
    r.target = std::move(target);
    r.body = std::move(body);
    r.headers = std::move(headers);
    return r;
  }

  static std::string HeaderOf(const net::ListenerAnswer& a, const std::string& name) {
    for (const auto& [n, v] : a.headers) {
      if (n == name) return v;
    }
    return "";
  }

  std::mutex mu_;
  std::map<uint32_t, OwnerAddress> owners_;
  std::set<uint32_t> unread_;  // owners the node has not read yet: known after a refresh
  std::map<std::string, std::vector<net::HttpAnswer>> script_;  // status -1: refused, -2: lost
  std::vector<Call> calls_;
  int refreshes_ = 0;
  std::chrono::milliseconds slept_{0};
  std::chrono::milliseconds fanout_timeout_{1000};

  // The calls made to `url`, and the X-Request-Id each carried ("" without one).
  std::vector<std::string> RequestIdsSentTo(const std::string& url) {
    std::lock_guard lock(mu_);
    std::vector<std::string> out;
    for (const Call& c : calls_) {
      if (c.url != url) continue;
      std::string id;
      for (const auto& [name, value] : c.options.headers) {
        if (name == "x-request-id") id = value;
      }
      out.push_back(id);
    }
    return out;
  }
};

net::HttpAnswer Answer(int status, std::string body) {
  net::HttpAnswer a;
  a.status = status;
  a.body = std::move(body);
  return a;
}

TEST_F(PartitionRouterTest, ASessionsRoutesReachItsPartitionsOwnerWithTheHeadersKept) {
  PartitionRouter router = Router();
  for (uint32_t p = 0; p < kPartitions; ++p) {
    calls_.clear();
    auto a = router.Route(Request("GET", "/v1/sessions/" + SessionOf(p) + "/state?changesSince=3",
                                  "", {{"x-request-id", "r1"}, {"host", "node:1"}}));
    EXPECT_EQ(a.status, 200);
    EXPECT_EQ(HeaderOf(a, "X-Statewatch-Partition"), std::to_string(p));
    EXPECT_EQ(HeaderOf(a, "X-Statewatch-Owner"), "n" + std::to_string(p));
    EXPECT_EQ(HeaderOf(a, "Content-Type"), "application/json");
    EXPECT_EQ(HeaderOf(a, "Connection"), "");  // framing stays hop-by-hop
    ASSERT_EQ(calls_.size(), 1u);
    EXPECT_EQ(calls_[0].url, "http://owner" + std::to_string(p));
    EXPECT_EQ(calls_[0].target, "/v1/sessions/" + SessionOf(p) + "/state?changesSince=3");
    ASSERT_EQ(calls_[0].options.headers.size(), 1u);  // the Host is the owner's, not ours
    EXPECT_EQ(calls_[0].options.headers[0].first, "x-request-id");
  }
  // A bare key takes ?agentId= (then X-Agent-Id) for its agent.
  const std::string agent2 = SessionOf(2).substr(6, SessionOf(2).rfind(':') - 6);
  calls_.clear();
  router.Route(Request("PUT", "/v1/sessions/main?agentId=" + agent2, "{}"));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].url, "http://owner2");
  // Tools go to the caller's partition.
  calls_.clear();
  router.Route(Request("POST", "/v1/tools/sessions_list", "{}", {{"x-session-key", SessionOf(1)}}));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].url, "http://owner1");
  // A watch goes where its cursor lives: the target's partition.
  calls_.clear();
  router.Route(Request("POST", "/v1/watches",
                       R"({"watcher":")" + SessionOf(0) + R"(","target":")" + SessionOf(2) + R"("})"));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].url, "http://owner2");
}

TEST_F(PartitionRouterTest, ABatchSpanningPartitionsIsRefusedAndNothingIsSent) {
  PartitionRouter router = Router();
  const std::string batch = R"([{"sessionKey":")" + SessionOf(1) + R"("},{"sessionKey":")" +
                            SessionOf(1) + R"("},{"sessionKey":")" + SessionOf(2) + R"("}])";
  auto a = router.Route(Request("POST", "/v1/events", batch));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("cross_partition_batch"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("events[0] belongs to partition 1 and events[2] to partition 2"),
            std::string::npos)
      << a.body;
  EXPECT_TRUE(calls_.empty());
}

// An array of watches goes, like an array of events, to its targets' one partition, or is
// refused whole when the targets span partitions.
TEST_F(PartitionRouterTest, AnArrayOfWatchesGoesToItsTargetsPartitionOrIsRefusedWhole) {
  PartitionRouter router = Router();
  auto watch = [](const std::string& target) {
    return R"({"watcher":")" + SessionOf(0) + R"(","target":")" + target + R"("})";
  };
  router.Route(Request("POST", "/v1/watches",
                       "[" + watch(SessionOf(2)) + "," + watch(SessionOf(2) + ":thread:1") + "]"));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].url, "http://owner2");
  calls_.clear();
  auto a = router.Route(Request("POST", "/v1/watches",
                                "[" + watch(SessionOf(2)) + "," + watch(SessionOf(1)) + "]"));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("cross_partition_batch"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("watches[0] belongs to partition 2 and watches[1] to partition 1"),
            std::string::npos)
      << a.body;
  EXPECT_TRUE(calls_.empty());
}

// A removal of watches is routed as their registration: to the targets' one partition.
TEST_F(PartitionRouterTest, ARemovalOfWatchesGoesToItsTargetsPartitionOrIsRefusedWhole) {
  PartitionRouter router = Router();
  auto watch = [](const std::string& target) {
    return R"({"watcher":")" + SessionOf(0) + R"(","target":")" + target + R"("})";
  };
  router.Route(Request("POST", "/v1/watches/remove", watch(SessionOf(2))));
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_[0].url, "http://owner2");
  calls_.clear();
  auto a = router.Route(Request("POST", "/v1/watches/remove",
                                "[" + watch(SessionOf(2)) + "," + watch(SessionOf(1)) + "]"));
  EXPECT_EQ(a.status, 400);
  EXPECT_NE(a.body.find("watches[0] belongs to partition 2 and watches[1] to partition 1"),
            std::string::npos)
      << a.body;
  EXPECT_TRUE(calls_.empty());
}

TEST_F(PartitionRouterTest, ARefusalBeforeLandingIsRetriedAtTheRefreshedOwner) {
  script_["http://owner1"] = {Answer(-1, ""),
                              Answer(503, R"({"error":{"code":"standby","message":"x"}})"),
                              Answer(503, R"({"error":{"code":"partition_moved","message":"y"}})")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/events", R"({"sessionKey":")" + SessionOf(1) + R"("})"));
  EXPECT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(calls_.size(), 4u);
  EXPECT_EQ(refreshes_, 3);
  EXPECT_EQ(slept_, std::chrono::milliseconds(300));
}

TEST_F(PartitionRouterTest, AnEngines503IsRelayedNotRetried) {
  script_["http://owner1"] = {Answer(503, R"({"error":{"code":"unavailable","message":"busy"}})")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/events", R"({"sessionKey":")" + SessionOf(1) + R"("})"));
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(calls_.size(), 1u);
}

TEST_F(PartitionRouterTest, NoOwnerForTheRetryTimeIs503WithRetryAfter) {
  owners_.erase(2);
  PartitionRouter router = Router();
  auto a = router.Route(Request("GET", "/v1/sessions/" + SessionOf(2) + "/state"));
  EXPECT_EQ(a.status, 503);
  EXPECT_EQ(HeaderOf(a, "Retry-After"), "1");
  EXPECT_NE(a.body.find("partition 2 has no serving owner after 1000 ms"), std::string::npos)
      << a.body;
  EXPECT_EQ(slept_, std::chrono::milliseconds(1000));  // bounded: retry_for, not forever
}

TEST_F(PartitionRouterTest, AnAnswerLostAfterSendingIs502AndNotRetried) {
  script_["http://owner0"] = {Answer(-2, "")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/events", R"({"sessionKey":")" + SessionOf(0) + R"("})"));
  EXPECT_EQ(a.status, 502);
  EXPECT_NE(a.body.find("answer_lost"), std::string::npos) << a.body;
  EXPECT_NE(a.body.find("retry with the same dedupeKey"), std::string::npos) << a.body;
  EXPECT_EQ(calls_.size(), 1u);
}

TEST_F(PartitionRouterTest, ADrainAsksEveryPartitionAndSaysWhichDidNotAnswer) {
  script_["http://owner1"] = {Answer(-1, "")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})"));
  EXPECT_EQ(a.status, 200);
  const json::object body = json::parse(a.body).as_object();
  EXPECT_EQ(json::serialize(body.at("notices")),
            R"([{"targetSessionKey":"from0"},{"targetSessionKey":"from2"}])");
  EXPECT_EQ(body.at("incomplete"), true);
  EXPECT_EQ(json::serialize(body.at("missingPartitions")), "[1]");
  const json::object& why = body.at("partitionErrors").as_array().at(0).as_object();
  EXPECT_EQ(why.at("partition"), 1);
  EXPECT_EQ(why.at("status"), 503);
  EXPECT_EQ(why.at("error").at("code"), "unavailable") << a.body;
  EXPECT_EQ(calls_.size(), 3u);  // one attempt each: no retry holds a fan-out up
  EXPECT_EQ(HeaderOf(a, "X-Statewatch-Owners"), "0=n0,2=n2");  // who answered
  auto all = router.Route(Request("GET", "/v1/notices?watcher=agent:w:main"));
  EXPECT_EQ(all.body, R"({"notices":[{"targetSessionKey":"from0"},{"targetSessionKey":"from1"},)"
                      R"({"targetSessionKey":"from2"}]})");
}

// Issue 37: a refusal from one partition (here 422 request_id_reused) is that partition's
// part of the answer. The other partitions acknowledged their notices; answering the refusal
// alone would have lost them for good.
TEST_F(PartitionRouterTest, ADrainRefusedByOnePartitionStillAnswersWhatTheOthersAcknowledged) {
  const std::string refusal =
      R"({"error":{"code":"request_id_reused","message":"X-Request-Id \"d1\" was used by another request"}})";
  script_["http://owner1"] = {Answer(422, refusal)};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})",
                                {{"X-Request-Id", "d1"}}));
  ASSERT_EQ(a.status, 200) << a.body;
  const json::object body = json::parse(a.body).as_object();
  EXPECT_EQ(json::serialize(body.at("notices")),
            R"([{"targetSessionKey":"from0"},{"targetSessionKey":"from2"}])");
  EXPECT_EQ(body.at("incomplete"), true);
  EXPECT_EQ(json::serialize(body.at("missingPartitions")), "[1]");
  EXPECT_EQ(json::serialize(body.at("partitionErrors")),
            R"([{"partition":1,"status":422,"error":)" +
                json::serialize(json::parse(refusal).at("error")) + "}]");
  EXPECT_EQ(HeaderOf(a, "X-Statewatch-Owners"), "0=n0,2=n2");
}

TEST_F(PartitionRouterTest, ADrainEveryPartitionRefusesIsThatRefusal) {
  const std::string refusal = R"({"error":{"code":"invalid_argument","message":"bad watcher"}})";
  for (uint32_t p = 0; p < kPartitions; ++p) {
    script_["http://owner" + std::to_string(p)] = {Answer(400, refusal)};
  }
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"nope"})"));
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.body, refusal);  // nothing was acknowledged anywhere: the answer of one node
}

TEST_F(PartitionRouterTest, APartitionThatAnswersWithoutANoticesListIsMissingAndSaysWhat) {
  script_["http://owner2"] = {Answer(200, R"({"surprise":true})")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})"));
  ASSERT_EQ(a.status, 200) << a.body;
  const json::object body = json::parse(a.body).as_object();
  EXPECT_EQ(json::serialize(body.at("missingPartitions")), "[2]");
  const json::object& why = body.at("partitionErrors").as_array().at(0).as_object();
  EXPECT_EQ(why.at("error").at("code"), "bad_gateway");
  EXPECT_EQ(why.at("error").at("message"),
            R"(partition 2 answered 200 without a notices list: {"surprise":true})");
}

// A partition whose drain answer was lost after the request was sent may have acknowledged
// notices that only its recorded answer holds: the node asks it again under the same
// X-Request-Id (minted here when the client sent none, and named in the answer).
TEST_F(PartitionRouterTest, ADrainWhoseAnswerWasLostIsAskedAgainUnderTheSameId) {
  fanout_timeout_ = std::chrono::milliseconds(100);  // re-asks within retry_for: 1000/(100+100)
  script_["http://owner1"] = {Answer(-2, "")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})"));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body, R"({"notices":[{"targetSessionKey":"from0"},{"targetSessionKey":"from1"},)"
                    R"({"targetSessionKey":"from2"}]})");
  const std::vector<std::string> ids = RequestIdsSentTo("http://owner1");
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(ids[0].size(), 32u) << "minted: " << ids[0];
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(RequestIdsSentTo("http://owner0"), std::vector<std::string>{ids[0]});
  EXPECT_EQ(HeaderOf(a, "X-Request-Id"), ids[0]);
  EXPECT_EQ(slept_, std::chrono::milliseconds(100));
}

TEST_F(PartitionRouterTest, ADrainStillInProgressAtAPartitionIsAskedAgainUnderTheClientsId) {
  fanout_timeout_ = std::chrono::milliseconds(100);
  script_["http://owner2"] = {
      Answer(409, R"({"error":{"code":"request_in_progress","message":"still running"}})"),
      Answer(409, R"({"error":{"code":"request_in_progress","message":"still running"}})")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})",
                                {{"x-request-id", "c-1"}}));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_EQ(a.body.find("incomplete"), std::string::npos) << a.body;
  EXPECT_EQ(RequestIdsSentTo("http://owner2"), (std::vector<std::string>{"c-1", "c-1", "c-1"}));
  EXPECT_EQ(HeaderOf(a, "X-Request-Id"), "") << "the client's own id is not repeated back";
}

TEST_F(PartitionRouterTest, ADrainsReAsksStopAfterRetryForAndThePartitionIsMissing) {
  fanout_timeout_ = std::chrono::milliseconds(100);
  script_["http://owner1"] = std::vector<net::HttpAnswer>(20, Answer(-2, ""));
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})"));
  ASSERT_EQ(a.status, 200) << a.body;
  const json::object body = json::parse(a.body).as_object();
  EXPECT_EQ(json::serialize(body.at("missingPartitions")), "[1]");
  EXPECT_EQ(body.at("partitionErrors").at(0).at("error").at("code"), "answer_lost");
  EXPECT_EQ(RequestIdsSentTo("http://owner1").size(), 1u + 5u);  // the ask and 5 re-asks
  EXPECT_FALSE(HeaderOf(a, "X-Request-Id").empty()) << "the id to retry the drain with";
}

TEST_F(PartitionRouterTest, APeekIsAskedOnceAndCarriesNoId) {
  fanout_timeout_ = std::chrono::milliseconds(100);
  script_["http://owner1"] = {Answer(-2, "")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("GET", "/v1/notices?watcher=agent:w:main"));
  ASSERT_EQ(a.status, 200) << a.body;
  EXPECT_NE(a.body.find(R"("missingPartitions":[1])"), std::string::npos) << a.body;
  EXPECT_EQ(RequestIdsSentTo("http://owner1"), std::vector<std::string>{""});
}

TEST_F(PartitionRouterTest, AFanOutReadsAnOwnerTheNodeHasNotReadYetBeforeItsOneAttempt) {
  unread_ = {0, 1, 2};  // a node that started a moment ago
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/notices/drain", R"({"watcher":"agent:w:main"})"));
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(a.body, R"({"notices":[{"targetSessionKey":"from0"},{"targetSessionKey":"from1"},)"
                    R"({"targetSessionKey":"from2"}]})");
  EXPECT_EQ(refreshes_, 3);
  EXPECT_EQ(calls_.size(), 3u);
  EXPECT_EQ(slept_, std::chrono::milliseconds(0));  // read at once, no wait
}

TEST_F(PartitionRouterTest, WholeEngineRoutesNeedAPartitionAndAWrongOneIs421) {
  PartitionRouter router = Router();
  EXPECT_EQ(router.Route(Request("GET", "/v1/export")).status, 400);
  auto a = router.Route(Request("GET", "/v1/export?partition=2"));
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(calls_.back().url, "http://owner2");
  EXPECT_EQ(router.Route(Request("GET", "/v1/export?partition=3")).status, 421);
  EXPECT_EQ(router.Route(Request("GET", "/v1/sessions/" + SessionOf(1) + "/state?partition=0")).status,
            421);
  EXPECT_EQ(router.Route(Request("GET", "/v1/wakes")).status, 426);
}

TEST_F(PartitionRouterTest, ARunIsLookedForPartitionByPartition) {
  script_["http://owner0"] = {Answer(404, R"({"error":{"code":"not_found","message":"no run"}})")};
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/runs/abc/finish", R"({"status":"ok"})"));
  EXPECT_EQ(a.status, 200);
  EXPECT_EQ(HeaderOf(a, "X-Statewatch-Partition"), "1");
  EXPECT_EQ(calls_.size(), 2u);
}

// Delivery ids are n * P + p: the id alone names the partition. Probing partition 0 first
// would acknowledge its delivery of the same number — another agent's, never delivered.
TEST_F(PartitionRouterTest, ADeliveryAckGoesToThePartitionItsIdNames) {
  PartitionRouter router = Router();
  auto a = router.Route(Request("POST", "/v1/deliveries/7/ack", "{}"));
  EXPECT_EQ(a.status, 200);
  ASSERT_EQ(calls_.size(), 1u);
  EXPECT_EQ(calls_.back().url, "http://owner1");  // 7 = 2 * 3 + 1
  // One numbered before ids named their partition: the caller names it.
  auto b = router.Route(Request("POST", "/v1/deliveries/7/ack?partition=0", "{}"));
  EXPECT_EQ(b.status, 200);
  ASSERT_EQ(calls_.size(), 2u);
  EXPECT_EQ(calls_.back().url, "http://owner0");
}

}  // namespace
}  // namespace statewatch::server

// The watcher directory and the watcher-removal sagas (server/watcher_sagas.h) over three
// in-process partitions: each a real engine in a directory of its own, reached through a fake
// HTTP exchange that calls the internal routes on it (AnswerWatcherRoute) and can take a
// partition down. The router's side is pinned with a fake exchange too. No sleeps: waits go
// to a counter.
#include "server/watcher_sagas.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "engine/agent_partition.h"
#include "statewatch/engine.h"
#include "statewatch/request_ids.h"
#include "statewatch/watcher_directory.h"
#include "status_matchers.h"
#include "test_server.h"

namespace statewatch::server {
namespace {
namespace json = boost::json;

constexpr uint32_t kPartitions = 3;

// The n-th session key of an agent that lives in partition p.
std::string KeyIn(uint32_t p, int n, const char* what = "main") {
  int found = 0;
  for (int i = 0;; ++i) {
    std::string agent = "a" + std::to_string(i);
    if (engine::PartitionOfAgent(agent, kPartitions) != p) continue;
    if (found++ == n) return "agent:" + agent + ":" + what;
  }
}

uint32_t PartitionOfKey(const std::string& key) {
  const std::size_t colon = key.find(':', 6);
  return engine::PartitionOfAgent(key.substr(6, colon - 6), kPartitions);
}

class WatcherSagasTest : public statewatch::testing::TempDirTest {
 protected:
  WatcherSagasTest() : TempDirTest("statewatch-watcher-sagas") {}
  void SetUp() override {
    TempDirTest::SetUp();
    for (uint32_t p = 0; p < kPartitions; ++p) Open(p);
    coordinator_ = Coordinator();
  }
  void TearDown() override {
    coordinator_.reset();
    for (auto& e : engines_) e.reset();
    TempDirTest::TearDown();
  }

  void Open(uint32_t p) {
    engines_[p].reset();
    EngineOptions eo;
    eo.clock = clock_;
    eo.durability = Durability::kBuffered;
    auto e = Engine::Open(eo, root_ + "/p" + std::to_string(p));
    ASSERT_OK(e);
    engines_[p] = std::move(*e);
  }

  std::unique_ptr<WatcherCoordinator> Coordinator() {
    WatcherCoordinatorOptions o;
    o.partitions = kPartitions;
    o.owner = [](uint32_t p, bool) -> std::optional<OwnerAddress> {
      return OwnerAddress{"n" + std::to_string(p), "http://slot" + std::to_string(p)};
    };
    o.send = [this](const std::string& url, const std::string& method, const std::string& target,
                    const std::string& body,
                    const net::HttpRequestOptions&) -> Result<net::HttpAnswer> {
      const uint32_t p = static_cast<uint32_t>(url.back() - '0');
      asked_.push_back(p);
      if (down_.count(p) != 0) return Status::IOError("connection refused");
      if (target == "/v1/internal/watchers/clear") clears_.emplace_back(p, body);
      ApiRequest r;
      r.method = method;
      r.target = target;
      r.body = body;
      ApiResponse a = AnswerWatcherRoute(*engines_[p], r);
      net::HttpAnswer out;
      out.status = a.status;
      out.body = a.body;
      return out;
    };
    o.sleep = [this](std::chrono::milliseconds d) { slept_ += d; };
    o.retry_for = std::chrono::milliseconds(300);
    o.retry_wait = std::chrono::milliseconds(100);
    return std::make_unique<WatcherCoordinator>(std::move(o));
  }

  // A watch through a node: the directory first, then the cursor at the target's partition
  // (the router's forwarding, here a direct call; refused when that partition is down).
  bool Watch(const std::string& watcher, const std::string& target) {
    net::ListenerRequest r;
    r.method = "POST";
    r.target = "/v1/watches";
    r.body = json::serialize(json::object{{"watcher", watcher}, {"target", target}});
    if (coordinator_->BeforeForward(r)) return false;
    const uint32_t p = PartitionOfKey(target);
    if (down_.count(p) != 0) return false;
    auto watched = engines_[p]->Watch(watcher, SessionName{"", target});
    EXPECT_OK(watched);
    return watched.ok() && *watched;
  }

  // A reset through a node; the answer's X-Statewatch-Saga. With `request_id`, the home
  // answers it as its X-Request-Id ledger does: the first time it resets and keeps a record,
  // after that it replays the record and applies nothing.
  std::string Reset(const std::string& watcher, const std::string& request_id = "") {
    net::ListenerRequest r;
    r.method = "POST";
    r.target = "/v1/sessions/" + watcher + "/reset";
    // The listener lowercases header names.
    if (!request_id.empty()) r.headers.emplace_back("x-request-id", request_id);
    const uint32_t home = PartitionOfKey(watcher);
    net::ListenerAnswer a = coordinator_->Remove(r, [&] {
      if (down_.count(home) != 0) return net::ListenerAnswer(503, "{}");
      net::ListenerAnswer reset(200, R"({"reset":true})");
      if (!request_id.empty()) {
        RequestIds ids(*engines_[home]);
        auto record = ids.Get(request_id);
        EXPECT_OK(record);
        if (record.ok() && record->has_value()) return reset;  // replayed
        RequestRecord first;
        first.digest = "reset " + watcher;
        first.status = reset.status;
        first.body = reset.body;
        EXPECT_OK(ids.PutAnswer(request_id, first));
      }
      EXPECT_OK(engines_[home]->ResetWatcher(watcher));
      return reset;
    });
    for (const auto& [name, value] : a.headers) {
      if (name == "X-Statewatch-Saga") return value;
    }
    return "none:" + std::to_string(a.status);
  }

  bool HasCursor(const std::string& watcher, const std::string& target) {
    auto c = engines_[PartitionOfKey(target)]->Cursor(watcher, SessionName{"", target});
    EXPECT_OK(c);
    return c.ok() && c->has_value();
  }

  std::set<uint32_t> Listed(const std::string& watcher) {
    const uint32_t home = PartitionOfKey(watcher);
    auto l = WatcherDirectory(*engines_[home]).Lookup(watcher);
    EXPECT_OK(l);
    std::set<uint32_t> out{home};
    if (l.ok()) out.insert(l->partitions.begin(), l->partitions.end());
    return out;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(statewatch::testing::kStartMs);
  std::unique_ptr<Engine> engines_[kPartitions];
  std::unique_ptr<WatcherCoordinator> coordinator_;
  std::set<uint32_t> down_;
  std::vector<uint32_t> asked_;
  std::vector<std::pair<uint32_t, std::string>> clears_;  // (partition, body) of each clear
  std::chrono::milliseconds slept_{0};
};

TEST_F(WatcherSagasTest, TheDirectoryIsASupersetUnderRandomWatchesResetsDeletesAndOutages) {
  std::vector<std::string> watchers, targets;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    watchers.push_back(KeyIn(p, 0, "boss"));
    targets.push_back(KeyIn(p, 1, "t1"));
    targets.push_back(KeyIn(p, 2, "t2"));
  }
  std::mt19937 rng(20261203);
  int watches = 0, resets = 0, pending = 0;
  for (int step = 0; step < 300; ++step) {
    const std::string& w = watchers[rng() % watchers.size()];
    const std::string& t = targets[rng() % targets.size()];
    const int op = static_cast<int>(rng() % 10);
    if (op < 6) {
      watches += Watch(w, t) ? 1 : 0;
    } else if (op < 8) {
      ++resets;
      pending += Reset(w) == "pending" ? 1 : 0;
    } else if (op < 9) {  // the target's session goes, and with it every cursor on it
      const uint32_t p = PartitionOfKey(t);
      if (down_.count(p) == 0) {
        ASSERT_OK(engines_[p]->DeleteSession(SessionName{"", t}));
      }
    } else {  // one partition goes down, or all come back
      if (down_.empty()) {
        down_.insert(static_cast<uint32_t>(rng() % kPartitions));
      } else {
        down_.clear();
      }
    }
    // The property: every partition holding a cursor of W is listed at W's home.
    for (const std::string& watcher : watchers) {
      const std::set<uint32_t> listed = Listed(watcher);
      for (const std::string& target : targets) {
        if (HasCursor(watcher, target)) {
          EXPECT_EQ(listed.count(PartitionOfKey(target)), 1u)
              << "step " << step << ": " << watcher << " has a cursor on " << target
              << " but its home does not list partition " << PartitionOfKey(target);
        }
      }
    }
  }
  EXPECT_GT(watches, 50);
  EXPECT_GT(resets, 20);
  EXPECT_GT(pending, 0);  // some resets met an outage and finished later
  // Every partition back: the owners resume what is pending, and a reset then leaves nothing.
  down_.clear();
  coordinator_->ResumeOnce([](uint32_t) { return true; });
  for (uint32_t p = 0; p < kPartitions; ++p) {
    auto sagas = WatcherDirectory(*engines_[p]).Sagas();
    ASSERT_OK(sagas);
    EXPECT_TRUE(sagas->empty()) << "partition " << p;
  }
  for (const std::string& watcher : watchers) {
    EXPECT_EQ(Reset(watcher), "done");
    for (const std::string& target : targets) EXPECT_FALSE(HasCursor(watcher, target));
    EXPECT_EQ(Listed(watcher), std::set<uint32_t>{PartitionOfKey(watcher)}) << watcher;
  }
}

TEST_F(WatcherSagasTest, ASagaResumesAfterTheHomeRestartsBetweenSteps) {
  const std::string w = KeyIn(0, 0, "boss");
  const std::string t1 = KeyIn(1, 0, "t"), t2 = KeyIn(2, 0, "t"), t0 = KeyIn(0, 1, "t");
  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t1));
  ASSERT_TRUE(Watch(w, t2));
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0, 1, 2}));

  down_ = {2};  // the reset clears partitions 0 and 1, then cannot reach 2
  EXPECT_EQ(Reset(w), "pending");
  EXPECT_FALSE(HasCursor(w, t0));
  EXPECT_FALSE(HasCursor(w, t1));
  auto sagas = WatcherDirectory(*engines_[0]).Sagas();
  ASSERT_OK(sagas);
  ASSERT_EQ(sagas->size(), 1u);
  EXPECT_EQ((*sagas)[0].partitions, std::vector<uint32_t>{2});
  EXPECT_EQ((*sagas)[0].kind, WatcherSagaKind::kReset);

  // The node crashes; the home's engine reopens from its directory; partition 2 is back.
  coordinator_ = Coordinator();
  Open(0);
  down_.clear();
  EXPECT_TRUE(HasCursor(w, t2));
  // Only the home's owner resumes it: a node owning 1 and 2 finds nothing to do.
  EXPECT_EQ(coordinator_->ResumeOnce([](uint32_t p) { return p != 0; }), 0);
  EXPECT_TRUE(HasCursor(w, t2));
  EXPECT_EQ(coordinator_->ResumeOnce([](uint32_t p) { return p == 0; }), 1);
  EXPECT_FALSE(HasCursor(w, t2));
  sagas = WatcherDirectory(*engines_[0]).Sagas();
  ASSERT_OK(sagas);
  EXPECT_TRUE(sagas->empty());
  EXPECT_EQ(Listed(w), std::set<uint32_t>{0});
}

TEST_F(WatcherSagasTest, AWatchWhileASagaIsPendingWaitsForItAndIsNotUndone) {
  const std::string w = KeyIn(1, 0, "boss");
  const std::string t0 = KeyIn(0, 0, "t"), t2 = KeyIn(2, 0, "t");
  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t2));
  down_ = {2};
  EXPECT_EQ(Reset(w), "pending");
  // Partition 2 still down: the pending removal cannot finish, so the watch is refused.
  EXPECT_FALSE(Watch(w, t0));
  EXPECT_FALSE(HasCursor(w, t0));
  down_.clear();
  // Back: the watch finishes the removal first, then counts; a later resume keeps it.
  ASSERT_TRUE(Watch(w, t0));
  EXPECT_FALSE(HasCursor(w, t2));
  coordinator_->ResumeOnce([](uint32_t) { return true; });
  EXPECT_TRUE(HasCursor(w, t0));
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0, 1}));
}

TEST_F(WatcherSagasTest, ALateCopyOfASagasClearDoesNotUndoAWatchMadeAfterIt) {
  const std::string w = KeyIn(0, 0, "boss");
  const std::string t0 = KeyIn(0, 1, "t"), t1 = KeyIn(1, 0, "t");
  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t1));
  clears_.clear();
  EXPECT_EQ(Reset(w), "done");
  EXPECT_FALSE(HasCursor(w, t0));
  EXPECT_FALSE(HasCursor(w, t1));
  ASSERT_EQ(clears_.size(), 2u);  // the home's and partition 1's

  // Watches acknowledged after the reset answered, at the home and elsewhere...
  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t1));
  // ...then a second driver's copy of each clear arrives (it was slow, or its node retried).
  for (const auto& [p, body] : clears_) {
    ApiRequest r;
    r.method = "POST";
    r.target = "/v1/internal/watchers/clear";
    r.body = body;
    ApiResponse a = AnswerWatcherRoute(*engines_[p], r);
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_NE(a.body.find(R"("late":true)"), std::string::npos) << "partition " << p << ": "
                                                                  << a.body;
  }
  EXPECT_TRUE(HasCursor(w, t0));
  EXPECT_TRUE(HasCursor(w, t1));

  // A later reset is a saga of a higher number: it removes them.
  EXPECT_EQ(Reset(w), "done");
  EXPECT_FALSE(HasCursor(w, t0));
  EXPECT_FALSE(HasCursor(w, t1));
}

TEST_F(WatcherSagasTest, ARetriedResetUnderItsRequestIdDoesNotRunItsSagaAgain) {
  const std::string w = KeyIn(0, 0, "boss");
  const std::string t0 = KeyIn(0, 1, "t"), t1 = KeyIn(1, 0, "t");
  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t1));
  EXPECT_EQ(Reset(w, "reset-1"), "done");
  EXPECT_FALSE(HasCursor(w, t1));

  ASSERT_TRUE(Watch(w, t0));
  ASSERT_TRUE(Watch(w, t1));
  // The client lost the answer and retries under the same id: the home replays it, and no
  // saga clears what was watched since.
  EXPECT_EQ(Reset(w, "reset-1"), "replayed");
  EXPECT_TRUE(HasCursor(w, t0));
  EXPECT_TRUE(HasCursor(w, t1));
  auto sagas = WatcherDirectory(*engines_[0]).Sagas();
  ASSERT_OK(sagas);
  EXPECT_TRUE(sagas->empty());

  EXPECT_EQ(Reset(w, "reset-2"), "done");  // a new request removes them
  EXPECT_FALSE(HasCursor(w, t0));
  EXPECT_FALSE(HasCursor(w, t1));
}

TEST_F(WatcherSagasTest, NoticePartitionsAreTheHomeAndTheListedOnesElseNone) {
  const std::string w = KeyIn(2, 0, "boss");
  EXPECT_EQ(coordinator_->NoticePartitions(w), std::vector<uint32_t>{2});
  ASSERT_TRUE(Watch(w, KeyIn(0, 0, "t")));
  EXPECT_EQ(coordinator_->NoticePartitions(w), (std::vector<uint32_t>{2, 0}));
  down_ = {2};  // the home cannot be read: the router asks every partition
  EXPECT_EQ(coordinator_->NoticePartitions(w), std::nullopt);
  EXPECT_EQ(slept_, std::chrono::milliseconds(0));  // one try, no wait
  EXPECT_EQ(coordinator_->NoticePartitions("main"), std::nullopt);  // not agent-scoped
}

TEST_F(WatcherSagasTest, EventsNamingAWatcherRegisterTheirPartitionFirst) {
  const std::string w = KeyIn(0, 0, "boss");
  net::ListenerRequest r;
  r.method = "POST";
  r.target = "/v1/events";
  json::object event{{"sessionKey", KeyIn(1, 0, "t")},
                     {"kind", "x"},
                     {"actorType", "human"},
                     {"watchers", json::array{w}}};
  // A batch the owner refuses (a misspelt field in one event) lists nothing.
  json::object misspelt = event;
  misspelt["sessionKy"] = KeyIn(2, 0, "t");
  r.body = json::serialize(json::array{event, misspelt});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0}));  // the home alone
  r.body = json::serialize(json::array{event});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0, 1}));
  down_ = {0};
  auto refused = coordinator_->BeforeForward(r);
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 503);
}

// An array of watches lists each watcher's target partitions before it is forwarded; an
// array the owner refuses (one item watches itself) lists nothing, as a refused watch.
TEST_F(WatcherSagasTest, AnArrayOfWatchesListsEveryWatcherOrNothing) {
  const std::string w = KeyIn(0, 0, "boss");
  const std::string v = KeyIn(2, 0, "lead");
  net::ListenerRequest r;
  r.method = "POST";
  r.target = "/v1/watches";
  const json::object ok{{"watcher", w}, {"target", KeyIn(1, 0, "t")}};
  r.body = json::serialize(json::array{ok, json::object{{"watcher", v}, {"target", v}}});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0}));  // the home alone
  r.body = json::serialize(json::object{{"watcher", v}, {"target", v}});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(v), (std::set<uint32_t>{2}));
  r.body = json::serialize(
      json::array{ok, json::object{{"watcher", v}, {"target", KeyIn(1, 1, "t")}}});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(w), (std::set<uint32_t>{0, 1}));
  EXPECT_EQ(Listed(v), (std::set<uint32_t>{2, 1}));
  // Targets on two partitions: the router refuses the array whole, so nothing is listed.
  const std::string u = KeyIn(0, 1, "other");
  r.body = json::serialize(json::array{json::object{{"watcher", u}, {"target", KeyIn(1, 0, "t")}},
                                       json::object{{"watcher", u}, {"target", KeyIn(2, 0, "t")}}});
  EXPECT_EQ(coordinator_->BeforeForward(r), std::nullopt);
  EXPECT_EQ(Listed(u), (std::set<uint32_t>{0}));
}

TEST(WatcherDirectoryCodec, RoundTripsAndRefusesDamage) {
  WatcherListing l{"agent:a:main", {1, 4}, 7};
  auto back = DecodeWatcherListing(EncodeWatcherListing(l));
  ASSERT_OK(back);
  EXPECT_EQ(back->partitions, l.partitions);
  EXPECT_EQ(back->version, 7u);
  WatcherSaga s{"agent:a:main", WatcherSagaKind::kDelete, {0, 2}, 5, 9};
  auto saga = DecodeWatcherSaga(EncodeWatcherSaga(s));
  ASSERT_OK(saga);
  EXPECT_EQ(saga->kind, WatcherSagaKind::kDelete);
  EXPECT_EQ(saga->partitions, s.partitions);
  EXPECT_EQ(saga->number, 9u);
  EXPECT_FALSE(DecodeWatcherListing("not a record").ok());
  EXPECT_FALSE(DecodeWatcherSaga("").ok());
}

// The router asks only what the directory names for a peek or a drain.
TEST(PartitionRouterWatcherDirectory, APeekAsksOnlyTheListedPartitions) {
  std::vector<std::string> urls;
  std::optional<std::vector<uint32_t>> listed = std::vector<uint32_t>{2, 0};
  PartitionRouterOptions o;
  o.partitions = kPartitions;
  o.owner = [](uint32_t p, bool) -> std::optional<OwnerAddress> {
    return OwnerAddress{"n" + std::to_string(p), "http://owner" + std::to_string(p)};
  };
  std::mutex mu;
  o.send = [&](const std::string& url, const std::string&, const std::string&,
               const std::string&, const net::HttpRequestOptions& options)
      -> Result<net::HttpAnswer> {
    std::lock_guard lock(mu);
    urls.push_back(url);
    *options.sent = true;
    net::HttpAnswer a;
    a.status = 200;
    a.body = R"({"notices":[{"from":)" + url.substr(url.size() - 1) + "}]}";
    return a;
  };
  std::string seen;
  o.watcher_partitions = [&](const std::string& watcher) {
    seen = watcher;
    return listed;
  };
  o.sleep = [](std::chrono::milliseconds) {};
  PartitionRouter router(std::move(o));
  net::ListenerRequest peek;
  peek.method = "GET";
  peek.target = "/v1/notices?watcher=agent%3Aboss%3Amain";
  net::ListenerAnswer a = router.Route(peek);
  EXPECT_EQ(seen, "agent:boss:main");
  EXPECT_EQ(a.body, R"({"notices":[{"from":0},{"from":2}]})");
  std::sort(urls.begin(), urls.end());
  EXPECT_EQ(urls, (std::vector<std::string>{"http://owner0", "http://owner2"}));
  bool owners = false;
  for (const auto& [name, value] : a.headers) {
    if (name == "X-Statewatch-Owners") owners = value == "0=n0,2=n2";
  }
  EXPECT_TRUE(owners);

  urls.clear();
  listed = std::nullopt;  // the home could not be read: every partition
  net::ListenerRequest drain;
  drain.method = "POST";
  drain.target = "/v1/notices/drain";
  drain.body = R"({"watcher":"agent:boss:main"})";
  router.Route(drain);
  EXPECT_EQ(urls.size(), kPartitions);
}

}  // namespace
}  // namespace statewatch::server

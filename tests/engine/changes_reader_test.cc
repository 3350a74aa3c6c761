// ReadChanges (the lean page) and the row cache behind it, through the engine: the page
// equals the uncached one whatever was pruned, deleted or capped in between, and a cached
// page is actually served from the cache.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "engine/engine_fixture.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

std::string Describe(const ChangesPage& p) {
  std::string s = "v=" + std::to_string(p.state_version) + " t=" + std::to_string(p.truncated) +
                  " e=" + std::to_string(p.earliest_available_sequence) +
                  " g=" + std::to_string(p.history_gap) + " [";
  for (const Event& e : p.events) {
    s += std::to_string(e.sequence) + ":" + e.kind + ":" + e.summary + ":" + e.payload_json + ",";
  }
  return s + "]";
}

ChangesPage Lean(const Engine& engine, const SessionName& s, Sequence after, int limit,
                 ChangesView* view) {
  Status st = engine.ReadChanges(s, after, limit, nullptr, view);
  EXPECT_OK(st);
  return view->ToPage();
}

class ChangesReaderTest : public EngineTest {};

TEST_F(ChangesReaderTest, LeanPageEqualsChangesSince) {
  const std::string key = "agent:main:subagent:lean";
  for (int i = 0; i < 30; ++i) {
    EventInput in = Input(key, i % 2 ? "human_direct_message" : "goal_changed");
    in.run_id = "run-" + std::to_string(i);
    in.payload_json = R"({"channel":"telegram","turns":)" + std::to_string(i) + "}";
    Rec(in);
  }
  ChangesView view;
  for (Sequence after : {Sequence{0}, Sequence{5}, Sequence{29}, Sequence{30}, Sequence{99}}) {
    for (int limit : {1, 7, 200}) {
      auto want = engine_->ChangesSince(Name(key), after, limit);
      ASSERT_OK(want);
      EXPECT_EQ(Describe(Lean(*engine_, Name(key), after, limit, &view)), Describe(*want))
          << "after " << after << " limit " << limit;
    }
  }
}

TEST_F(ChangesReaderTest, SecondReadComesFromTheCache) {
  const std::string key = "agent:main:subagent:cached";
  for (int i = 0; i < 50; ++i) Human(key);
  ChangesView view;
  ASSERT_OK(engine_->ReadChanges(Name(key), 10, 20, nullptr, &view));
  EXPECT_EQ(view.cached_rows(), 0u);
  ASSERT_OK(engine_->ReadChanges(Name(key), 10, 20, nullptr, &view));
  EXPECT_EQ(view.events().size(), 20u);
  EXPECT_EQ(view.cached_rows(), 20u);
  // New rows extend the cached run: the old part still comes from the cache.
  Human(key);
  ASSERT_OK(engine_->ReadChanges(Name(key), 40, 200, nullptr, &view));
  EXPECT_EQ(view.events().size(), 11u);
  EXPECT_EQ(view.events().back().sequence, view.state_version);
}

// Regression: a read starting above the session's cached run replaced it, so session_status
// (a lagging page plus a read of the latest event) missed the cache on every request.
TEST_F(ChangesReaderTest, ATailReadExtendsTheCachedRunInsteadOfReplacingIt) {
  const std::string key = "agent:main:subagent:tail";
  for (int i = 0; i < 300; ++i) Human(key);
  ChangesView view;
  ASSERT_OK(engine_->ReadChanges(Name(key), 50, 200, nullptr, &view));
  EXPECT_EQ(view.cached_rows(), 0u);
  // The latest event, 49 rows above the run's end: read through the gap into the run.
  auto want = engine_->ChangesSince(Name(key), 299, 1);
  ASSERT_OK(want);
  EXPECT_EQ(Describe(Lean(*engine_, Name(key), 299, 1, &view)), Describe(*want));
  for (int round = 0; round < 2; ++round) {
    ASSERT_OK(engine_->ReadChanges(Name(key), 50, 200, nullptr, &view));
    EXPECT_EQ(view.events().size(), 200u);
    EXPECT_TRUE(view.truncated);
    EXPECT_EQ(view.cached_rows(), 200u) << "round " << round;
    ASSERT_OK(engine_->ReadChanges(Name(key), 299, 1, nullptr, &view));
    ASSERT_EQ(view.events().size(), 1u);
    EXPECT_EQ(view.events()[0].sequence, view.state_version);
    EXPECT_EQ(view.cached_rows(), 1u) << "round " << round;
  }
  // A page with more rows above it than it holds, starting inside the gap it read through.
  auto mid = engine_->ChangesSince(Name(key), 260, 20);
  ASSERT_OK(mid);
  EXPECT_EQ(Describe(Lean(*engine_, Name(key), 260, 20, &view)), Describe(*mid));
  EXPECT_EQ(view.cached_rows(), 20u);
}

void Upper(const EventView& e, std::string* out) { *out = "#" + std::to_string(e.sequence); }

TEST_F(ChangesReaderTest, RenderingsAreMemoizedWithCachedRows) {
  const std::string key = "agent:main:subagent:render";
  for (int i = 0; i < 5; ++i) Human(key);
  ChangesView first, second;
  ASSERT_OK(engine_->ReadChanges(Name(key), 0, 200, &Upper, &first));
  ASSERT_OK(engine_->ReadChanges(Name(key), 0, 200, &Upper, &second));
  ASSERT_EQ(second.events().size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(second.rendered(i), "#" + std::to_string(second.events()[i].sequence));
    // One rendering per row, shared by both pages.
    EXPECT_EQ(second.rendered(i).data(), first.rendered(i).data());
  }
}

TEST_F(ChangesReaderTest, ViewsOutliveEvictionAndDeletion) {
  const std::string key = "agent:main:subagent:outlive";
  for (int i = 0; i < 5; ++i) Human(key);
  ChangesView view;
  ASSERT_OK(engine_->ReadChanges(Name(key), 0, 200, nullptr, &view));
  ASSERT_OK(engine_->DeleteSession(Name(key)));
  ASSERT_EQ(view.events().size(), 5u);
  EXPECT_EQ(view.events()[4].kind, "human_direct_message");
  auto after = engine_->ChangesSince(Name(key), 0);
  ASSERT_OK(after);
  EXPECT_TRUE(after->events.empty());
  EXPECT_EQ(after->state_version, 0u);
}

// The differential test: one engine with a small row cache (so that runs are evicted too)
// and one without, driven through the same random operations — records on a few sessions,
// clock jumps with age pruning, a row cap, session deletions — compare every page.
class CacheDifferentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>(int64_t{1764460800000});  // as EngineTest
    for (int i = 0; i < 2; ++i) {
      dirs_[i] = NewTempDir("cache-diff");
      EngineOptions o;
      o.clock = clock_;
      o.durability = Durability::kBuffered;
      o.max_rows = 300;
      o.retention_ms = 10'000;
      o.prune_interval_ms = 1'000;
      o.row_cache_bytes = i == 0 ? 0 : 48 << 10;
      auto e = Engine::Open(o, dirs_[i]);
      ASSERT_OK(e);
      engines_[i] = std::move(*e);
    }
  }
  void TearDown() override {
    for (int i = 0; i < 2; ++i) {
      engines_[i].reset();
      std::filesystem::remove_all(dirs_[i]);
    }
  }

  std::shared_ptr<ManualClock> clock_;
  std::string dirs_[2];
  std::unique_ptr<Engine> engines_[2];
};

TEST_F(CacheDifferentialTest, CachedPagesEqualUncachedPagesThroughPruningAndDeletion) {
  std::mt19937_64 rng(20251130);
  auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };
  auto name = [](uint64_t s) {
    return SessionName{"main", "agent:main:subagent:s" + std::to_string(s)};
  };
  ChangesView views[2];
  for (int step = 0; step < 1500; ++step) {
    uint64_t op = pick(100);
    SessionName s = name(pick(6));
    if (op < 55) {
      std::vector<EventInput> batch(1 + pick(8));
      for (auto& in : batch) {
        in.session_key = s.session_key;
        in.kind = pick(2) ? "human_direct_message" : "run_completed";
        in.actor_type = ActorType::kHuman;
        in.summary = "summary " + std::to_string(step);
        // Some events are back-dated so that age pruning removes rows out of order.
        if (pick(4) == 0) in.occurred_at_ms = clock_->NowMs() - 9'000;
      }
      for (auto& e : engines_) ASSERT_OK(e->RecordMany(batch));
    } else if (op < 60) {
      for (auto& e : engines_) ASSERT_OK(e->DeleteSession(s));
    } else if (op < 65) {
      clock_->Advance(static_cast<int64_t>(1'000 + pick(4'000)));
      for (auto& e : engines_) ASSERT_OK(e->Prune());
    } else {
      auto head = engines_[0]->StateVersion(s);
      ASSERT_OK(head);
      Sequence after = *head == 0 ? pick(3) : pick(*head + 2);
      int limit = pick(3) == 0 ? 200 : static_cast<int>(1 + pick(40));
      // Twice: the second read of the cached engine tends to come from its cache.
      for (int round = 0; round < 2; ++round) {
        std::string want = Describe(Lean(*engines_[0], s, after, limit, &views[0]));
        ASSERT_EQ(Describe(Lean(*engines_[1], s, after, limit, &views[1])), want)
            << "step " << step << " session " << s.session_key << " after " << after << " limit "
            << limit << " round " << round;
      }
    }
  }
}

}  // namespace
}  // namespace statewatch::testing

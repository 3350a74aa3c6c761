// The model test (docs/design.md): seeded random operations over a small universe of
// sessions, applied both to the engine and to the ReferenceModel written from
// semantics.md; every answer is compared. Every so often the engine is reopened (with and
// without pruning at open, with and without the restart sweep) and the whole observable
// state is compared again; Verify() must stay clean.
//
// Reproduce one run: STATEWATCH_MODEL_SEED=<seed> [STATEWATCH_MODEL_STEPS=<n>]
//   ./build/tests/engine_tests --gtest_filter='ModelTest.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "engine/model/ops.h"
#include "engine/model/scratch_dir.h"
#include "engine/model/state_check.h"
#include "engine/random_run_config.h"
#include "engine/reference_model.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::model {
namespace {

constexpr int64_t kStart = 1764460800000;  // 2025-11-30T00:00:00Z
constexpr int kDefaultSteps = 3000;
constexpr uint64_t kDefaultSeeds[] = {0x5eed0001, 0x5eed0002, 0x5eed0003, 0x5eed0004, 0x5eed0005};

std::optional<uint64_t> EnvNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::strtoull(v, nullptr, 0);
}

// How often the interesting paths were taken, printed per run so that a passing run is
// known to have exercised them.
struct Coverage {
  uint64_t events = 0, deduplicated = 0, refused = 0, notices_drained = 0, reopened = 0,
           rows_pruned = 0, cursors_expired = 0, sweeps_changed = 0, gap_reads = 0,
           truncated_reads = 0, reopens = 0;
  std::string ToString() const {
    return "events=" + std::to_string(events) + " deduplicated=" + std::to_string(deduplicated) +
           " refused=" + std::to_string(refused) +
           " notices_drained=" + std::to_string(notices_drained) +
           " reopened_by_ack=" + std::to_string(reopened) +
           " rows_pruned=" + std::to_string(rows_pruned) +
           " cursors_expired=" + std::to_string(cursors_expired) +
           " sweeps_changed=" + std::to_string(sweeps_changed) +
           " gap_reads=" + std::to_string(gap_reads) +
           " truncated_reads=" + std::to_string(truncated_reads) +
           " reopens=" + std::to_string(reopens);
  }
};

// One seeded run: its own database, clock, model and generator.
class ModelRun {
 public:
  ModelRun(uint64_t seed, int steps) : seed_(seed), steps_(steps), config_rng_(seed) {
    RandomRunConfig config =
        DrawRunConfig(config_rng_, clock_, seed ^ 0x9e3779b97f4a7c15ULL, kStart);
    options_ = config.options;
    model_ = ReferenceModel(config.model);
    gen_ = std::move(config.generator);
    reopen_every_ = 250 + static_cast<int>(config_rng_() % 250);
  }
  ~ModelRun() {
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Config() const {
    return DescribeRunConfig(seed_, steps_, options_) +
           " reopen_every=" + std::to_string(reopen_every_);
  }

  ::testing::AssertionResult Run() {
    options_.prune_on_open = false;
    if (auto r = Open(); !r) return r;
    for (step_ = 0; step_ < steps_; ++step_) {
      if (auto r = Step(); !r) return Fail(r);
      if (step_ % 200 == 199) {
        if (auto r = SameState(*engine_, model_, gen_->universe()); !r) return Fail(r);
      }
      if (step_ % reopen_every_ == reopen_every_ - 1) {
        if (auto r = Reopen(); !r) return Fail(r);
      }
    }
    if (auto r = SameState(*engine_, model_, gen_->universe()); !r) return Fail(r);
    return Fail(CheckVerify());
  }

 private:
  // Adds the configuration, the step and the last operations to a failure.
  ::testing::AssertionResult Fail(::testing::AssertionResult r) {
    if (r) return r;
    r << "\n" << Config() << "\nat step " << step_ << "; last operations:\n";
    for (const std::string& h : history_) r << "  " << h << "\n";
    return r;
  }

  ::testing::AssertionResult Open() {
    auto e = Engine::Open(options_, dir_);
    if (!e.ok()) return ::testing::AssertionFailure() << "open: " << e.status().ToString();
    engine_ = std::move(*e);
    return ::testing::AssertionSuccess();
  }

  // Destroys the engine and opens the directory again, sometimes pruning at open and
  // sometimes running the restart sweep (Start), then compares everything.
  ::testing::AssertionResult Reopen() {
    engine_.reset();
    ++coverage_.reopens;
    options_.prune_on_open = gen_->Chance(50);
    Remember("reopen prune_on_open=" + std::to_string(options_.prune_on_open));
    if (auto r = Open(); !r) return r;
    if (options_.prune_on_open) model_.Prune(clock_->NowMs());
    if (auto r = SameState(*engine_, model_, gen_->universe()); !r) {
      return r << "(right after reopening)";
    }
    if (gen_->Chance(50)) {
      Remember("start (restart sweep)");
      Status st = engine_->Start();
      if (!st.ok()) return ::testing::AssertionFailure() << "Start: " << st.ToString();
      model_.Sweep(clock_->NowMs());
      if (auto r = SameState(*engine_, model_, gen_->universe()); !r) {
        return r << "(after the restart sweep)";
      }
    }
    return CheckVerify();
  }

  ::testing::AssertionResult CheckVerify() {
    auto v = engine_->Verify();
    if (!v.ok()) return ::testing::AssertionFailure() << "Verify: " << v.status().ToString();
    if (!v->ok || !v->differences.empty()) {
      auto r = ::testing::AssertionFailure() << "Verify found differences:";
      for (const std::string& d : v->differences) r << "\n  " << d;
      return r;
    }
    return ::testing::AssertionSuccess();
  }

  void Remember(const std::string& line) {
    history_.push_back(std::to_string(step_) + ": " + line);
    if (history_.size() > 25) history_.pop_front();
  }

  ::testing::AssertionResult Step() {
    Op op = gen_->Next();
    clock_->Set(op.now_ms);
    Remember(DescribeOp(op));
    OpResult got = ApplyToEngine(*engine_, op);
    Sequence before = model_.last_sequence();
    uint64_t pending_before = model_.pending_count();
    OpResult want = ApplyToModel(model_, op);
    Count(op, want, before, pending_before);
    std::string g = DescribeResult(got), w = DescribeResult(want);
    if (g != w) {
      return ::testing::AssertionFailure()
             << "answer of " << OpName(op.type) << " differs\n  engine: " << g << " " << got.message
             << "\n  model:  " << w;
    }
    Differences d;
    CompareTotals(*engine_, model_, d);
    for (int i = 0; i < 2; ++i) RandomRead(d);
    return d.Result();
  }

  void Count(const Op& op, const OpResult& r, Sequence seq_before, uint64_t pending_before) {
    if (!r.ok()) ++coverage_.refused;
    for (const RecordResult& rr : r.records)
      ++(rr.deduplicated ? coverage_.deduplicated : coverage_.events);
    coverage_.notices_drained += r.notices.size();
    if (op.type == Op::Type::kDrain && model_.pending_count() > pending_before - r.notices.size()) {
      coverage_.reopened += model_.pending_count() - (pending_before - r.notices.size());
    }
    coverage_.rows_pruned += r.prune.rows_deleted;
    coverage_.cursors_expired += r.prune.cursors_expired;
    if (op.type == Op::Type::kSweep && model_.last_sequence() > seq_before)
      ++coverage_.sweeps_changed;
  }

 public:
  const Coverage& coverage() const { return coverage_; }

 private:
  // One read the operations do not already check, chosen at random.
  void RandomRead(Differences& d) {
    switch (gen_->Below(5)) {
      case 0: {
        SessionName s = gen_->RandomTarget();
        auto v = engine_->StateVersion(s);
        if (!v.ok()) return d.Add("StateVersion", v.status().ToString(), "OK");
        d.Expect("state version of " + DescribeName(s), *v, model_.StateVersion(s));
        break;
      }
      case 1:
        return ReadVersions(d);
      case 2:
        return ReadChanges(d);
      case 3: {
        std::string w = gen_->RandomWatcherKey();
        SessionName t = gen_->RandomTarget();
        auto c = engine_->Cursor(w, t);
        auto want = model_.Cursor(w, t);
        d.Expect("Cursor status " + w, static_cast<int>(c.status().code()),
                 static_cast<int>(want.status().code()));
        if (c.ok() && want.ok()) {
          d.Expect("cursor " + w + " -> " + DescribeName(t), DescribeCursor(*c),
                   DescribeCursor(*want));
        }
        break;
      }
      case 4: {
        std::string w = gen_->RandomWatcherKey();
        auto n = engine_->PendingNotices(w);
        auto want = model_.PendingNotices(w);
        d.Expect("PendingNotices status " + w, static_cast<int>(n.status().code()),
                 static_cast<int>(want.status().code()));
        if (n.ok() && want.ok()) {
          std::string a, b;
          for (const Notice& x : *n) a += " {" + DescribeNotice(x) + "}";
          for (const Notice& x : *want) b += " {" + DescribeNotice(x) + "}";
          d.Expect("pending notices of " + w, a, b);
        }
        break;
      }
    }
  }

  void ReadVersions(Differences& d) {
    std::vector<SessionName> names;
    for (int i = gen_->Below(5); i >= 0; --i) names.push_back(gen_->RandomTarget());
    if (gen_->Chance(20)) names.push_back(SessionName{"nobody", "agent:nobody:main"});
    auto v = engine_->StateVersions(names);
    if (!v.ok()) return d.Add("StateVersions", v.status().ToString(), "OK");
    if (v->size() != names.size()) return d.Add("StateVersions size", "", "");
    for (std::size_t i = 0; i < names.size(); ++i) {
      d.Expect("state versions[" + DescribeName(names[i]) + "]", (*v)[i],
               model_.StateVersion(names[i]));
    }
  }

  // ChangesSince with `after` around the interesting marks and a random limit.
  void ReadChanges(Differences& d) {
    SessionName s = gen_->RandomTarget();
    Sequence head = model_.StateVersion(s), mark = model_.Watermark(s);
    Sequence choices[] = {
        0,
        head,
        head + 1,
        head > 0 ? head - 1 : 0,
        mark,
        mark + 1,
        mark > 0 ? mark - 1 : 0,
        static_cast<Sequence>(gen_->Below(static_cast<int>(model_.last_sequence() + 3))),
        UINT64_MAX};
    Sequence after = choices[gen_->Below(9)];
    int limits[] = {-3, 0, 1, 2, 5, 200, 201, 1000};
    int limit = gen_->Chance(50) ? limits[gen_->Below(8)] : 1 + gen_->Below(12);
    auto page = engine_->ChangesSince(s, after, limit);
    if (!page.ok()) return d.Add("ChangesSince", page.status().ToString(), "OK");
    coverage_.gap_reads += page->history_gap;
    coverage_.truncated_reads += page->truncated;
    d.Expect("ChangesSince(" + DescribeName(s) + ", after=" + std::to_string(after) +
                 ", limit=" + std::to_string(limit) + ")",
             DescribePage(*page), DescribePage(model_.ChangesSince(s, after, limit)));
  }

  uint64_t seed_;
  int steps_;
  std::mt19937_64 config_rng_;
  std::string dir_ = NewScratchDir("model");
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kStart);
  EngineOptions options_;
  ReferenceModel model_;
  std::unique_ptr<OpGenerator> gen_;
  std::unique_ptr<Engine> engine_;
  int reopen_every_ = 200;
  int step_ = 0;
  std::deque<std::string> history_;
  Coverage coverage_;
};

TEST(ModelTest, RandomOperationsMatchTheModel) {
  std::vector<uint64_t> seeds(std::begin(kDefaultSeeds), std::end(kDefaultSeeds));
  if (auto s = EnvNumber("STATEWATCH_MODEL_SEED")) seeds = {*s};
  int steps = static_cast<int>(EnvNumber("STATEWATCH_MODEL_STEPS").value_or(kDefaultSteps));
  for (uint64_t seed : seeds) {
    ModelRun run(seed, steps);
    std::cout << "[ model    ] " << run.Config() << std::endl;
    EXPECT_TRUE(run.Run()) << "reproduce with STATEWATCH_MODEL_SEED=" << seed;
    std::cout << "[ model    ]   " << run.coverage().ToString() << std::endl;
  }
}

// ---- the model itself, checked by hand against the spec's rows ---------------------------------

constexpr char kP[] = "agent:main:main";
constexpr char kC[] = "agent:main:subagent:a1";
constexpr char kX[] = "agent:ops:main";
const SessionName kParent{"main", kP};
const SessionName kChildName{"main", kC};

EventInput In(const std::string& key, const std::string& kind, const std::string& actor = "",
              std::vector<std::string> watchers = {}, const std::string& dedupe = "") {
  EventInput in;
  in.session_key = key;
  in.kind = kind;
  in.actor_id = actor;
  in.watchers = std::move(watchers);
  in.dedupe_key = dedupe;
  return in;
}

Sequence Rec(ReferenceModel& m, const EventInput& in, int64_t now = kStart) {
  auto r = m.RecordMany({in}, now);
  return r.ok() ? r->at(0).event.sequence : 0;
}

std::string CursorOf(const ReferenceModel& m, const std::string& w, const SessionName& t) {
  return DescribeCursor(*m.Cursor(w, t));
}

std::string Cur(Sequence l, Sequence n, Sequence mm, int64_t at = kStart) {
  return DescribeCursor(CursorState{l, n, mm, at});
}

TEST(ReferenceModelTest, CursorTransitionTable) {
  ReferenceModel m;
  Sequence s = Rec(m, In(kC, "child_spawned", kP, {kP}));  // spawn seed
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(s, s, s));
  EXPECT_TRUE(m.PendingNotices(kP)->empty());
  Sequence e1 = Rec(m, In(kC, "human_direct_message", "user:bob"));  // opens one
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(s, e1, e1));
  Sequence e2 = Rec(m, In(kC, "goal_changed", kX));  // pending: only M moves
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(s, e1, e2));
  Rec(m, In(kC, "goal_changed", kP));           // self-suppression
  Rec(m, In(kC, "run_completed", "user:bob"));  // journal-only
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(s, e1, e2));
  auto notices = *m.PendingNotices(kP);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].text,
            "Session \"agent:main:subagent:a1\" changed (other actor). Reconcile "
            "before acting: session_status sessionKey \"agent:main:subagent:a1\" "
            "changesSince " +
                std::to_string(s) + ".");
  EXPECT_EQ(notices[0].context_key, "session-state:6167656e743a6d61696e3a7375626167656e743a6131");
  Sequence before = m.last_sequence();
  EXPECT_EQ(m.Drain(kP, kStart)->size(), 1u);  // M > N: L = N, one new notice since old N
  EXPECT_EQ(m.last_sequence(), before + 1);
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(e1, e2, e2));
  EXPECT_EQ(m.PendingNotices(kP)->at(0).since, e1);
  EXPECT_EQ(m.Drain(kP, kStart)->size(), 1u);  // M <= N: idle
  EXPECT_EQ(CursorOf(m, kP, kChildName), Cur(e2, e2, e2));
  EXPECT_TRUE(m.Drain(kP, kStart)->empty());
}

TEST(ReferenceModelTest, RegistrationProducerWatchersAndSweep) {
  ReferenceModel m;
  EXPECT_TRUE(m.Watch(kX, kParent, kStart));  // no head: L = N = M = 0, one sequence
  EXPECT_EQ(m.last_sequence(), 1u);
  EXPECT_EQ(CursorOf(m, kX, kParent), Cur(0, 0, 0));
  EXPECT_FALSE(m.Watch(kP, kParent, kStart));                        // itself
  EXPECT_FALSE(m.Watch("global", kParent, kStart));                  // bare watcher
  EXPECT_FALSE(m.Watch(kX, SessionName{"main", "global"}, kStart));  // bare target
  EXPECT_FALSE(m.Watch("agent::x", kParent, kStart));                // malformed
  Sequence e = Rec(m, In(kP, "human_direct_message", "", {kC}));     // producer-passed watcher
  EXPECT_EQ(CursorOf(m, kC, kParent), Cur(0, e, e));
  EXPECT_EQ(CursorOf(m, kX, kParent), Cur(0, e, e));
  EXPECT_TRUE(m.Watch(kX, kParent, kStart + 5));  // existing cursor kept, no sequence
  EXPECT_EQ(CursorOf(m, kX, kParent), Cur(0, e, e));
  EXPECT_EQ(m.last_sequence(), e);
  Sequence e2 = Rec(m, In(kP, "upstream_missing", "", {}), kStart + 7);
  EXPECT_EQ(m.Sweep(kStart + 9), 2u);  // M > L: N = M
  EXPECT_EQ(CursorOf(m, kX, kParent), Cur(0, e2, e2, kStart + 9));
  EXPECT_EQ(m.last_sequence(), e2 + 1);
  EXPECT_EQ(m.Sweep(kStart + 10), 2u);  // nothing to move: no sequence
  EXPECT_EQ(m.last_sequence(), e2 + 1);
  EXPECT_OK(m.ResetWatcher(kX));
  EXPECT_FALSE(m.Cursor(kX, kParent)->has_value());
}

TEST(ReferenceModelTest, RetentionWatermarkDedupeAndDelete) {
  ModelOptions o;
  o.max_rows = 3;
  o.retention_ms = 10 * kDayMs;
  ReferenceModel m(o);
  Sequence a = Rec(m, In(kP, "created", "", {}, "k1"));
  Sequence b = Rec(m, In(kP, "created"));
  EXPECT_EQ(Rec(m, In(kP, "created", "", {}, "k1")), a);  // dedupe: the existing event
  EXPECT_TRUE(m.Watch(kX, kParent, kStart));
  Rec(m, In(kC, "created"));
  Rec(m, In(kC, "created"));  // four rows: the row cap drops the oldest (a), one sequence
  EXPECT_FALSE(m.Retains(kParent, a));
  EXPECT_EQ(m.Watermark(kParent), a);
  EXPECT_TRUE(m.ChangesSince(kParent, a - 1, 200).history_gap);
  EXPECT_FALSE(m.ChangesSince(kParent, a, 200).history_gap);  // after == watermark
  EXPECT_NE(Rec(m, In(kP, "created", "", {}, "k1")), a);      // its dedupe key is free again
  PruneStats st = m.Prune(kStart + 11 * kDayMs);  // everything aged; the idle cursor expires
  EXPECT_EQ(st.cursors_expired, 1u);
  EXPECT_EQ(m.journal_rows(), 0u);
  ChangesPage p = m.ChangesSince(kParent, 0, 0);
  EXPECT_EQ(p.earliest_available_sequence, p.state_version + 1);
  EXPECT_GT(p.state_version, b);  // heads never go backwards
  EXPECT_OK(m.DeleteSession(kParent));
  EXPECT_EQ(m.StateVersion(kParent), 0u);
  EXPECT_FALSE(m.ChangesSince(kParent, 0, 200).history_gap);  // the watermark went with it
}

// Regression: Acknowledge() with a target named twice (or in two spellings) acknowledged the
// notice that reopened for intervening changes too, so that notice was lost unseen.
TEST(ModelTest, AcknowledgeRepeatedTargetKeepsReopenedNotice) {
  struct Dir {
    std::string path = NewScratchDir("ack-repeat");
    ~Dir() { std::filesystem::remove_all(path); }
  } dir;
  EngineOptions options;
  options.clock = std::make_shared<ManualClock>(kStart);
  options.durability = Durability::kBuffered;
  auto engine = Engine::Open(options, dir.path);
  ASSERT_OK(engine);
  Engine& e = **engine;
  ASSERT_TRUE(*e.Watch(kP, kChildName));                       // L = N = M = 0
  ASSERT_OK(e.Record(In(kC, "human_direct_message")));         // #2: opens, N = 2
  ASSERT_OK(e.Record(In(kC, "human_direct_message")));         // #3: M = 3
  ASSERT_OK(e.Acknowledge(kP, {kChildName, SessionName{"", "AGENT:main:subagent:a1"}}));
  auto pending = e.PendingNotices(kP);
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 1u) << "the notice reopened for #3 was acknowledged unseen";
  EXPECT_EQ(pending->at(0).since, 2u);
  auto cursor = e.Cursor(kP, kChildName);
  EXPECT_EQ(DescribeCursor(*cursor), Cur(2, 3, 3));
}

}  // namespace
}  // namespace statewatch::model

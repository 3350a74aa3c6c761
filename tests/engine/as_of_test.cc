// Engine::StatusAt and Engine::ReplayUntil: the status as of a past sequence equals the
// status of a database that stopped at that sequence.
//
// The oracle of the random test is the model test's ReferenceModel (written from
// semantics.md): seeded random operations (events, watches, drains, acks, resets, deletes,
// prunes, sweeps) go to the engine and the model alike; after every k-th operation the
// model's answers for every session of the universe are kept with the engine's last
// sequence, and a few operations later StatusAt(that sequence) must give them back — or,
// once a checkpoint has passed it, refuse naming the earliest sequence it can rebuild. Every
// eighth rebuilt one is also written by ReplayUntil, and the new database's live answers
// must be the same (and verify).
//
// Reproduce one run: STATEWATCH_ASOF_SEED=<seed> ./build/tests/engine_tests
//   --gtest_filter='AsOf*'
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

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
constexpr int kPageLimit = 7;              // small, so that paging is exercised

bool ByKey(const SessionName& a, const SessionName& b) {
  return std::tie(a.session_key, a.agent_id) < std::tie(b.session_key, b.agent_id);
}

// What a session's status says, in one comparable form (events apart).
struct StatusText {
  Sequence version = 0;
  Sequence watermark = 0;
  bool gap_from_zero = false;
  std::vector<Event> events;  // all of them, page by page
  std::string cursors;        // watching and watchers
  std::string notices;
};

std::string CursorLine(const std::string& who, const CursorState& c) {
  return who + " L=" + std::to_string(c.last_seen) + " N=" + std::to_string(c.notified) +
         " M=" + std::to_string(c.material) + " at=" + std::to_string(c.updated_at_ms) + ";";
}

// The model's answers for `s`.
StatusText ModelStatus(const ReferenceModel& model, const Universe& u, const SessionName& s) {
  StatusText t;
  t.version = model.StateVersion(s);
  t.watermark = model.Watermark(s);
  t.gap_from_zero = model.ChangesSince(s, 0, kPageLimit).history_gap;
  t.events = AllEvents(model, s);
  std::vector<SessionName> targets = u.sessions;
  std::sort(targets.begin(), targets.end(), ByKey);
  t.cursors = "watching:";
  for (const SessionName& target : targets) {
    auto c = model.Cursor(s.session_key, target);
    if (c.ok() && c->has_value()) t.cursors += CursorLine(DescribeName(target), **c);
  }
  t.cursors += " watchers:";
  std::vector<std::string> watchers = u.watcher_keys;
  std::sort(watchers.begin(), watchers.end());
  for (const std::string& w : watchers) {
    auto c = model.Cursor(w, s);
    if (c.ok() && c->has_value()) t.cursors += CursorLine(w, **c);
  }
  auto pending = model.PendingNotices(s.session_key);
  if (pending.ok()) {
    for (const Notice& n : *pending) t.notices += "{" + DescribeNotice(n) + "}";
  }
  return t;
}

// The engine's StatusAt for `s` (every page), in the same form.
Result<StatusText> EngineStatus(const Engine& engine, const SessionName& s,
                                std::optional<Sequence> as_of, SessionStatusAt* first = nullptr) {
  StatusText t;
  Sequence after = 0;
  for (int pages = 0; pages < 1000; ++pages) {
    auto st = engine.StatusAt(s, as_of, after, kPageLimit);
    if (!st.ok()) return st.status();
    if (pages == 0) {
      t.version = st->state_version;
      t.watermark = st->watermark;
      t.gap_from_zero = st->changes.history_gap;
      t.cursors = "watching:";
      for (const CursorEntry& e : st->watching) {
        t.cursors += CursorLine(DescribeName(e.target), e.cursor);
      }
      t.cursors += " watchers:";
      for (const CursorEntry& e : st->watchers)
        t.cursors += CursorLine(e.watcher.session_key, e.cursor);
      for (const Notice& n : st->pending) t.notices += "{" + DescribeNotice(n) + "}";
      if (first != nullptr) *first = *st;
    }
    if (st->changes.state_version != t.version) {
      return Status::Corruption("page states version " + std::to_string(st->changes.state_version));
    }
    for (const Event& e : st->changes.events) t.events.push_back(e);
    if (!st->changes.truncated || st->changes.events.empty()) return t;
    after = st->changes.events.back().sequence;
  }
  return Status::Corruption("more than 1000 pages");
}

// The model's answers kept after an operation, to be asked of StatusAt later.
struct Snapshot {
  Sequence sequence = 0;
  int due_step = 0;
  std::vector<StatusText> sessions;  // in universe order
  std::vector<bool> deleted_since;   // a delete of the session ran after it
};

std::optional<uint64_t> EnvNumber(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  return std::strtoull(v, nullptr, 0);
}

class AsOfRun {
 public:
  AsOfRun(uint64_t seed, int steps) : seed_(seed), steps_(steps), rng_(seed) {
    RandomRunConfig config = DrawRunConfig(rng_, clock_, seed ^ 0x51ed270b27f1a3c5ULL, kStart);
    options_ = config.options;
    model_ = ReferenceModel(config.model);
    gen_ = std::move(config.generator);
  }
  ~AsOfRun() {
    engine_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::string Config() const { return DescribeRunConfig(seed_, steps_, options_); }

  ::testing::AssertionResult Run() {
    auto e = Engine::Open(options_, dir_);
    if (!e.ok()) return ::testing::AssertionFailure() << "open: " << e.status().ToString();
    engine_ = std::move(*e);
    for (step_ = 0; step_ < steps_; ++step_) {
      Op op = gen_->Next();
      clock_->Set(op.now_ms);
      ApplyToEngine(*engine_, op);
      ApplyToModel(model_, op);
      if (op.type == Op::Type::kDelete) NoteDelete(op.target);
      if (step_ % 3 == 0) {
        if (auto r = Capture(); !r) return r;
      }
      if (auto r = CheckDue(false); !r) return r;
    }
    if (auto r = CheckDue(true); !r) return r;
    if (rebuilt_ == 0 || replays_ok_ == 0) {
      return ::testing::AssertionFailure()
             << "no snapshot was rebuilt or replayed (" << Config() << ")";
    }
    return ::testing::AssertionSuccess();
  }

  uint64_t rebuilt() const { return rebuilt_; }
  uint64_t replays() const { return replays_ok_; }
  uint64_t refused() const { return refused_; }

 private:
  void NoteDelete(const SessionName& target) {
    const Universe& u = gen_->universe();
    for (Snapshot& snap : pending_) {
      for (std::size_t i = 0; i < u.sessions.size(); ++i) {
        // Spellings differ (AGENT:Main:...): compare case-insensitively, as keys are.
        auto lower = [](std::string s) {
          for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
          return s;
        };
        if (lower(u.sessions[i].session_key) == lower(target.session_key)) {
          snap.deleted_since[i] = true;
        }
      }
    }
  }

  // Keeps the model's answers, and checks the live StatusAt against them at once.
  ::testing::AssertionResult Capture() {
    const Universe& u = gen_->universe();
    Snapshot snap;
    snap.sequence = model_.last_sequence();
    snap.due_step = step_ + static_cast<int>(rng_() % 40);
    snap.deleted_since.assign(u.sessions.size(), false);
    for (const SessionName& s : u.sessions) {
      StatusText want = ModelStatus(model_, u, s);
      auto live = EngineStatus(*engine_, s, std::nullopt);
      if (!live.ok()) return Failure("live StatusAt of " + DescribeName(s), live.status());
      if (auto r = Same(*live, want, s, "live", nullptr, false); !r) return r;
      snap.sessions.push_back(std::move(want));
    }
    pending_.push_back(std::move(snap));
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult CheckDue(bool all) {
    const Universe& u = gen_->universe();
    while (!pending_.empty() && (all || pending_.front().due_step <= step_)) {
      Snapshot snap = std::move(pending_.front());
      pending_.pop_front();
      bool first = true;
      for (std::size_t i = 0; i < u.sessions.size(); ++i) {
        const SessionName& s = u.sessions[i];
        SessionStatusAt head;
        auto got = EngineStatus(*engine_, s, snap.sequence, &head);
        if (!got.ok()) {
          if (got.status().code() != Status::Code::kFailedPrecondition) {
            return Failure("StatusAt(" + std::to_string(snap.sequence) + ") of " + DescribeName(s),
                           got.status());
          }
          // Refused: a checkpoint passed it. The message names the earliest sequence, and
          // that one is past the snapshot and rebuilds.
          auto stats = engine_->Stats();
          if (!stats.ok()) return Failure("Stats", stats.status());
          auto live = engine_->StatusAt(s, std::nullopt, 0, 1);
          if (!live.ok()) return Failure("live StatusAt", live.status());
          Sequence earliest = live->earliest_as_of;
          if (!(earliest > snap.sequence) ||
              got.status().message().find(", " + std::to_string(earliest) + " ") ==
                  std::string::npos) {
            return ::testing::AssertionFailure()
                   << "StatusAt(" << snap.sequence << ") refused with \"" << got.status().message()
                   << "\" but the earliest is " << earliest << "\n"
                   << Config();
          }
          if (first) ++refused_;
          break;
        }
        if (auto r = Same(*got, snap.sessions[i], s, "as of " + std::to_string(snap.sequence),
                          &head, snap.deleted_since[i]);
            !r) {
          return r;
        }
        if (first) ++rebuilt_;
        first = false;
      }
      if (!first && rebuilt_ % 8 == 1) {
        if (auto r = CheckReplay(snap); !r) return r;
      }
    }
    return ::testing::AssertionSuccess();
  }

  // ReplayUntil(snapshot) writes a database whose live answers are the snapshot's.
  ::testing::AssertionResult CheckReplay(const Snapshot& snap) {
    const Universe& u = gen_->universe();
    const std::string out = dir_ + "-replay" + std::to_string(++replays_);
    Status st = engine_->ReplayUntil(snap.sequence, out);
    if (!st.ok()) return Failure("ReplayUntil(" + std::to_string(snap.sequence) + ")", st);
    EngineOptions o = options_;
    o.read_only = true;
    auto replayed = Engine::Open(o, out);
    if (!replayed.ok()) return Failure("opening the replay", replayed.status());
    ::testing::AssertionResult result = ::testing::AssertionSuccess();
    for (std::size_t i = 0; i < u.sessions.size() && result; ++i) {
      SessionStatusAt head;
      auto got = EngineStatus(**replayed, u.sessions[i], std::nullopt, &head);
      if (!got.ok())
        return Failure("replayed status of " + DescribeName(u.sessions[i]), got.status());
      result = Same(*got, snap.sessions[i], u.sessions[i],
                    "in the replay until " + std::to_string(snap.sequence), &head,
                    snap.deleted_since[i]);
    }
    if (result) {
      auto v = (*replayed)->Verify();
      if (!v.ok()) return Failure("Verify of the replay", v.status());
      if (!v->ok)
        result = ::testing::AssertionFailure()
                 << "the replay does not verify: " << v->differences.front();
    }
    replayed->reset();
    std::error_code ec;
    std::filesystem::remove_all(out, ec);
    if (result) ++replays_ok_;
    return result;
  }

  // `got` against `want`; for a past sequence (`head` given), the events pruned or deleted
  // since are gone: they must be missing from `got`, and the watermark must say so.
  ::testing::AssertionResult Same(const StatusText& got, const StatusText& want,
                                  const SessionName& s, const std::string& when,
                                  const SessionStatusAt* head, bool deleted_since) {
    std::vector<Event> expected;
    bool lost = false;
    for (const Event& e : want.events) {
      if (head == nullptr || model_.Retains(s, e.sequence)) {
        expected.push_back(e);
      } else {
        lost = true;
      }
    }
    auto fail = [&](const std::string& what, const std::string& g, const std::string& w) {
      return ::testing::AssertionFailure() << what << " of " << DescribeName(s) << " " << when
                                           << " differs\n  got:  " << g << "\n  want: " << w << "\n"
                                           << Config() << " at step " << step_;
    };
    if (got.version != want.version) {
      return fail("state version", std::to_string(got.version), std::to_string(want.version));
    }
    if (DescribeEvents(got.events) != DescribeEvents(expected)) {
      return fail("events", DescribeEvents(got.events), DescribeEvents(expected));
    }
    if (got.cursors != want.cursors) return fail("cursors", got.cursors, want.cursors);
    if (got.notices != want.notices) return fail("pending notices", got.notices, want.notices);
    if (!lost) {
      if (got.watermark != want.watermark && !deleted_since) {
        return fail("watermark", std::to_string(got.watermark), std::to_string(want.watermark));
      }
      if (got.gap_from_zero != want.gap_from_zero && !deleted_since) {
        return fail("historyGap from 0", std::to_string(got.gap_from_zero),
                    std::to_string(want.gap_from_zero));
      }
    } else if (!deleted_since && !got.gap_from_zero) {
      return fail("historyGap from 0 (events pruned since)", "false", "true");
    }
    if (head != nullptr) {
      Sequence earliest =
          expected.empty() ? (want.version > 0 ? want.version + 1 : 0) : expected.front().sequence;
      if (head->changes.earliest_available_sequence != earliest) {
        return fail("earliestAvailableSequence",
                    std::to_string(head->changes.earliest_available_sequence),
                    std::to_string(earliest));
      }
      if (head->deleted_at != 0 && (!deleted_since || head->deleted_at <= head->as_of)) {
        return fail("deletedAt", std::to_string(head->deleted_at), "0 or past asOf");
      }
    }
    return ::testing::AssertionSuccess();
  }

  ::testing::AssertionResult Failure(const std::string& what, const Status& st) {
    return ::testing::AssertionFailure() << what << ": " << st.ToString() << "\n"
                                         << Config() << " at step " << step_;
  }

  uint64_t seed_;
  int steps_;
  std::mt19937_64 rng_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kStart);
  EngineOptions options_;
  ReferenceModel model_{ModelOptions{}};
  std::unique_ptr<OpGenerator> gen_;
  std::string dir_ = NewScratchDir("asof");
  std::unique_ptr<Engine> engine_;
  std::deque<Snapshot> pending_;
  int step_ = 0;
  uint64_t rebuilt_ = 0, refused_ = 0, replays_ = 0, replays_ok_ = 0;
};

TEST(AsOfModelTest, StatusAsOfEveryThirdOperationEqualsTheModelStoppedThere) {
  std::vector<uint64_t> seeds = {0xa50f0001, 0xa50f0002, 0xa50f0003, 0xa50f0004};
  if (auto s = EnvNumber("STATEWATCH_ASOF_SEED")) seeds = {*s};
  const int steps = static_cast<int>(EnvNumber("STATEWATCH_ASOF_STEPS").value_or(400));
  for (uint64_t seed : seeds) {
    AsOfRun run(seed, steps);
    ASSERT_TRUE(run.Run());
    std::cout << "[ asof ] " << run.Config() << " rebuilt=" << run.rebuilt()
              << " refused=" << run.refused() << " replays=" << run.replays() << "\n";
  }
}

// ---- targeted cases ----------------------------------------------------------------------

class AsOfTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = ModelRunOptions(clock_, Durability::kBuffered);
    Open();
  }
  void TearDown() override {
    engine_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    std::filesystem::remove_all(out_, ec);
  }
  void Open() {
    auto e = Engine::Open(options_, dir_);
    ASSERT_OK(e.status());
    engine_ = std::move(*e);
  }
  Sequence Put(const std::string& key, const std::string& kind, const std::string& summary) {
    EventInput in;
    in.session_key = key;
    in.kind = kind;
    in.actor_type = ActorType::kHuman;
    in.summary = summary;
    auto r = engine_->Record(in);
    EXPECT_OK(r.status());
    clock_->Advance(1000);
    return r.ok() ? r->event.sequence : 0;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kStart);
  EngineOptions options_;
  std::string dir_ = NewScratchDir("asof-case");
  std::string out_ = dir_ + "-replayed";
  std::unique_ptr<Engine> engine_;
  const SessionName boss_{"main", "agent:main:main"};
  const SessionName child_{"main", "agent:main:subagent:c1"};
};

TEST_F(AsOfTest, NoticeTextCursorsAndEventsAsTheyWere) {
  ASSERT_OK(engine_->Watch(boss_.session_key, child_).status());
  Sequence first = Put(child_.session_key, "goal_changed", "goal one");
  auto then = engine_->StatusAt(boss_, first);
  ASSERT_OK(then.status());
  auto pending_then = engine_->PendingNotices(boss_.session_key);
  ASSERT_OK(pending_then.status());
  ASSERT_OK(engine_->Drain(boss_.session_key).status());
  Put(child_.session_key, "goal_changed", "goal two");
  Put(child_.session_key, "run_failed", "failed");

  auto again = engine_->StatusAt(boss_, first);
  ASSERT_OK(again.status());
  ASSERT_EQ(again->pending.size(), 1u);
  ASSERT_EQ(pending_then->size(), 1u);
  EXPECT_EQ(again->pending[0].text, (*pending_then)[0].text);
  EXPECT_EQ(again->as_of, first);
  EXPECT_EQ(again->last_sequence, first + 3);
  ASSERT_EQ(again->watching.size(), 1u);
  EXPECT_EQ(again->watching[0].target, child_);
  EXPECT_EQ(again->watching[0].cursor.last_seen, 0u);
  EXPECT_EQ(again->watching[0].cursor.notified, first);

  auto child_then = engine_->StatusAt(child_, first);
  ASSERT_OK(child_then.status());
  EXPECT_EQ(child_then->state_version, first);
  ASSERT_EQ(child_then->changes.events.size(), 1u);
  EXPECT_EQ(child_then->changes.events[0].summary, "goal one");
  ASSERT_EQ(child_then->watchers.size(), 1u);
  EXPECT_EQ(child_then->watchers[0].watcher, boss_);

  // Now: drained, then a new notice at the second goal.
  auto now = engine_->StatusAt(child_, std::nullopt);
  ASSERT_OK(now.status());
  EXPECT_EQ(now->changes.events.size(), 3u);
  EXPECT_EQ(now->as_of, now->last_sequence);
}

TEST_F(AsOfTest, InsideACommitGroup) {
  std::vector<EventInput> batch(3);
  for (int i = 0; i < 3; ++i) {
    batch[i].session_key = child_.session_key;
    batch[i].kind = "goal_changed";
    batch[i].actor_type = ActorType::kHuman;
    batch[i].summary = "batch " + std::to_string(i);
  }
  ASSERT_OK(engine_->Watch(boss_.session_key, child_).status());
  auto r = engine_->RecordMany(batch);
  ASSERT_OK(r.status());
  Sequence middle = (*r)[1].event.sequence;
  auto st = engine_->StatusAt(child_, middle);
  ASSERT_OK(st.status());
  EXPECT_EQ(st->state_version, middle);
  ASSERT_EQ(st->changes.events.size(), 2u);
  EXPECT_EQ(st->changes.events.back().summary, "batch 1");
  ASSERT_EQ(st->watchers.size(), 1u);
  EXPECT_EQ(st->watchers[0].cursor.material, middle);
}

// The row cap prunes without a checkpoint, so the sequence before it still rebuilds.
TEST_F(AsOfTest, PrunedSinceAnswersHistoryGapAsChangesSince) {
  engine_.reset();
  options_.max_rows = 2;
  Open();
  Sequence a = Put(child_.session_key, "goal_changed", "first");
  Sequence b = Put(child_.session_key, "goal_changed", "second");
  Put(child_.session_key, "goal_changed", "third");  // the row cap drops "first"
  auto live = engine_->ChangesSince(child_, 0);
  ASSERT_OK(live.status());
  ASSERT_TRUE(live->history_gap);

  auto st = engine_->StatusAt(child_, b, 0);
  ASSERT_OK(st.status());
  EXPECT_EQ(st->state_version, b);
  EXPECT_EQ(st->watermark, a);
  EXPECT_TRUE(st->changes.history_gap);
  ASSERT_EQ(st->changes.events.size(), 1u);
  EXPECT_EQ(st->changes.events[0].summary, "second");
  EXPECT_EQ(st->changes.earliest_available_sequence, b);
  auto from_a = engine_->StatusAt(child_, b, a);
  ASSERT_OK(from_a.status());
  EXPECT_FALSE(from_a->changes.history_gap);
  // Before the prune, at a: the row is gone now, and the answer says so.
  auto at_a = engine_->StatusAt(child_, a, 0);
  ASSERT_OK(at_a.status());
  EXPECT_EQ(at_a->state_version, a);
  EXPECT_TRUE(at_a->changes.events.empty());
  EXPECT_TRUE(at_a->changes.history_gap);
  EXPECT_EQ(at_a->changes.earliest_available_sequence, a + 1);
}

TEST_F(AsOfTest, ErrorsNameTheValues) {
  Put(child_.session_key, "goal_changed", "one");
  auto beyond = engine_->StatusAt(child_, 99);
  EXPECT_EQ(beyond.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(beyond.status().message().find("99"), std::string::npos);
  EXPECT_NE(beyond.status().message().find("last sequence, 1"), std::string::npos);
  EXPECT_EQ(engine_->ReplayUntil(99, out_).code(), Status::Code::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(out_));

  std::filesystem::create_directories(out_);
  Status exists = engine_->ReplayUntil(1, out_);
  EXPECT_EQ(exists.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(exists.message().find("exists"), std::string::npos);
  std::filesystem::remove_all(out_);
}

TEST_F(AsOfTest, BeforeTheCheckpointIsRefusedNamingTheEarliest) {
  engine_.reset();
  options_.checkpoint_min_records = 4;
  Open();
  for (int i = 0; i < 12; ++i) Put(child_.session_key, "goal_changed", "e" + std::to_string(i));
  auto live = engine_->StatusAt(child_, std::nullopt);
  ASSERT_OK(live.status());
  ASSERT_GT(live->earliest_as_of, 1u);
  auto before = engine_->StatusAt(child_, live->earliest_as_of - 1);
  EXPECT_EQ(before.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(before.status().message().find(std::to_string(live->earliest_as_of)), std::string::npos)
      << before.status().ToString();
  auto at = engine_->StatusAt(child_, live->earliest_as_of);
  ASSERT_OK(at.status());
  EXPECT_EQ(at->state_version, live->earliest_as_of);
  EXPECT_EQ(engine_->ReplayUntil(live->earliest_as_of - 1, out_).code(),
            Status::Code::kFailedPrecondition);
}

// The replayed directory opens as any database and answers what StatusAt answered; the
// live one is unchanged.
TEST_F(AsOfTest, ReplayUntilWritesADatabaseThatStoppedThere) {
  ASSERT_OK(engine_->Watch(boss_.session_key, child_).status());
  Sequence first = Put(child_.session_key, "goal_changed", "goal one");
  Put(child_.session_key, "human_direct_message", "hello");
  ASSERT_OK(engine_->Drain(boss_.session_key).status());
  Put(child_.session_key, "goal_changed", "goal two");
  auto before_stats = engine_->Stats();
  ASSERT_OK(before_stats.status());

  auto want_boss = engine_->StatusAt(boss_, first + 1);
  auto want_child = engine_->StatusAt(child_, first + 1);
  ASSERT_OK(want_boss.status());
  ASSERT_OK(want_child.status());
  ASSERT_OK(engine_->ReplayUntil(first + 1, out_));

  auto after_stats = engine_->Stats();
  ASSERT_OK(after_stats.status());
  EXPECT_EQ(after_stats->last_sequence, before_stats->last_sequence);
  EXPECT_EQ(after_stats->pending_notices, before_stats->pending_notices);

  EngineOptions o = options_;
  auto replayed = Engine::Open(o, out_);
  ASSERT_OK(replayed.status());
  Engine& r = **replayed;
  auto stats = r.Stats();
  ASSERT_OK(stats.status());
  EXPECT_EQ(stats->last_sequence, first + 1);
  EXPECT_EQ(stats->journal_rows, 2u);
  auto notices = r.PendingNotices(boss_.session_key);
  ASSERT_OK(notices.status());
  ASSERT_EQ(notices->size(), 1u);
  ASSERT_EQ(want_boss->pending.size(), 1u);
  EXPECT_EQ((*notices)[0].text, want_boss->pending[0].text);
  auto got_child = r.StatusAt(child_, std::nullopt);
  ASSERT_OK(got_child.status());
  EXPECT_EQ(DescribeEvents(got_child->changes.events), DescribeEvents(want_child->changes.events));
  EXPECT_EQ(got_child->state_version, want_child->state_version);
  auto verify = r.Verify();
  ASSERT_OK(verify.status());
  EXPECT_TRUE(verify->ok) << (verify->differences.empty() ? "" : verify->differences[0]);
  // It takes writes after the replayed sequence.
  EventInput in;
  in.session_key = child_.session_key;
  in.kind = "goal_changed";
  in.actor_type = ActorType::kHuman;
  auto next = r.Record(in);
  ASSERT_OK(next.status());
  EXPECT_EQ(next->event.sequence, first + 2);
}

}  // namespace
}  // namespace statewatch::model

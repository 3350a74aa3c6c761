// Scenario tests: every row of the cursor transition table (docs/semantics.md,
// "The transition table") and every bullet of "One notice, not many" (one notice, pinned
// mark, drain, self-suppression, restart recovery).
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/engine_fixture.h"
#include "statewatch/session_key.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

constexpr char kParent[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:c1";

class NoticesTest : public EngineTest {};

TEST_F(NoticesTest, SpawnSeedsTheSpawnersCursorWithoutANotice) {
  Sequence s = Spawn(kParent, kChild);
  CursorState c = CursorOf(kParent, kChild);
  EXPECT_EQ(c.last_seen, s);
  EXPECT_EQ(c.notified, s);
  EXPECT_EQ(c.material, s);
  EXPECT_TRUE(Pending(kParent).empty());
}

TEST_F(NoticesTest, TwentyRapidChangesLeaveOneByteExactNotice) {
  Sequence s = Spawn(kParent, kChild);
  Sequence first = Human(kChild);
  std::vector<Notice> after_first = Pending(kParent);
  Sequence last = 0;
  for (int i = 0; i < 19; ++i) last = Human(kChild);
  std::vector<Notice> notices = Pending(kParent);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].text, after_first[0].text);  // byte-for-byte identical while pending
  EXPECT_EQ(notices[0].text,
            "Session \"agent:main:subagent:c1\" changed (other actor). Reconcile before acting: "
            "session_status sessionKey \"agent:main:subagent:c1\" changesSince " +
                std::to_string(s) + ".");
  EXPECT_EQ(notices[0].context_key, EncodeContextKey(kChild));
  CursorState c = CursorOf(kParent, kChild);
  EXPECT_EQ(c.last_seen, s);
  EXPECT_EQ(c.notified, first);  // pinned when the notice opened
  EXPECT_EQ(c.material, last);   // only M moves
}

TEST_F(NoticesTest, DrainAcknowledgesTheFrozenMarkAndReopensOnceForInterveningChanges) {
  Spawn(kParent, kChild);
  Sequence first = Human(kChild);
  Sequence second = Human(kChild);
  auto drained = engine_->Drain(kParent);
  ASSERT_OK(drained);
  ASSERT_EQ(drained->size(), 1u);
  // L advances to N (the frozen mark, not the head); the intervening change reopens one.
  CursorState c = CursorOf(kParent, kChild);
  EXPECT_EQ(c.last_seen, first);
  EXPECT_EQ(c.notified, second);
  std::vector<Notice> next = Pending(kParent);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].since, first);
  // Draining again with nothing new leaves nothing pending.
  ASSERT_OK(engine_->Drain(kParent));
  EXPECT_TRUE(Pending(kParent).empty());
  c = CursorOf(kParent, kChild);
  EXPECT_EQ(c.last_seen, second);
  EXPECT_EQ(c.notified, second);
}

TEST_F(NoticesTest, DrainWithoutInterveningChangesOpensNothing) {
  Spawn(kParent, kChild);
  Human(kChild);
  ASSERT_OK(engine_->Drain(kParent));
  EXPECT_TRUE(Pending(kParent).empty());
}

TEST_F(NoticesTest, SelfSuppression) {
  Spawn(kParent, kChild);
  Rec(Input(kChild, "goal_changed", ActorType::kAgent, kParent));
  EXPECT_TRUE(Pending(kParent).empty());
  // Another actor's change still notifies, and M ignores the watcher's own events.
  Sequence other = Human(kChild);
  Rec(Input(kChild, "goal_changed", ActorType::kAgent, kParent));
  EXPECT_EQ(Pending(kParent).size(), 1u);
  EXPECT_EQ(CursorOf(kParent, kChild).material, other);
}

TEST_F(NoticesTest, JournalOnlyKindsNeverNotify) {
  Spawn(kParent, kChild);
  for (const char* kind : {"run_completed", "run_failed", "compacted", "adopted", "created"}) {
    Rec(Input(kChild, kind, ActorType::kSystem));
  }
  EXPECT_TRUE(Pending(kParent).empty());
}

TEST_F(NoticesTest, ExplicitRegistrationStartsAtHeadAndKeepsAnExistingCursor) {
  const char* target = "agent:ops:telegram:group:-1001";
  Sequence h = Human(target);
  auto w = engine_->Watch(kParent, Name(target));
  ASSERT_OK(w);
  EXPECT_TRUE(*w);
  CursorState c = CursorOf(kParent, target);
  EXPECT_EQ(c.last_seen, h);
  EXPECT_TRUE(Pending(kParent).empty());  // prior history never produces a notice
  Sequence n = Human(target);
  ASSERT_TRUE(*engine_->Watch(kParent, Name(target)));
  EXPECT_EQ(CursorOf(kParent, target).notified, n);  // positions kept
}

TEST_F(NoticesTest, WatchersOfListsCursorHolders) {
  Spawn(kParent, kChild);
  ASSERT_TRUE(*engine_->Watch("agent:ops:main", Name(kChild)));
  auto w = engine_->WatchersOf(Name(kChild));
  ASSERT_OK(w);
  std::sort(w->begin(), w->end());
  EXPECT_EQ(*w, (std::vector<std::string>{"agent:main:main", "agent:ops:main"}));
  EXPECT_TRUE(engine_->WatchersOf(Name(kParent))->empty());
}

TEST_F(NoticesTest, RegistrationRefusals) {
  EXPECT_FALSE(*engine_->Watch(kParent, Name(kParent)));
  EXPECT_FALSE(*engine_->Watch("global", Name(kChild)));
  EXPECT_FALSE(*engine_->Watch(kParent, SessionName{"main", "global"}));
  EXPECT_FALSE(*engine_->Watch("agent::x", Name(kChild)));
  EXPECT_FALSE(*engine_->Watch(kParent, SessionName{"main", "agent:main:"}));
}

// Watches in bulk (Engine::WatchMany): every pair in one commit group, a pair given twice
// once, an existing cursor's positions kept; the registrations survive a restart.
TEST_F(NoticesTest, WatchManyRegistersEveryPairInOneGroupAndKeepsExistingCursors) {
  const char* a = "agent:ops:telegram:group:-1001";
  const char* b = "agent:ops:main";
  Human(a);
  ASSERT_TRUE(*engine_->Watch(kParent, Name(a)));
  Sequence na = Human(a);
  Sequence hb = Human(b);
  const uint64_t groups = engine_->Stats()->commit_groups;
  auto r = engine_->WatchMany({{kParent, Name(a)},
                               {kParent, Name(b)},
                               {"agent:main:other", Name(a)},
                               {kParent, Name(b)}});
  ASSERT_OK(r);
  EXPECT_EQ(r->watched, 3u);
  EXPECT_EQ(r->created, 2u);
  EXPECT_EQ(engine_->Stats()->commit_groups, groups + 1);
  EXPECT_EQ(CursorOf(kParent, a).notified, na);  // positions kept
  EXPECT_EQ(CursorOf(kParent, b).last_seen, hb);  // from the target's head
  EXPECT_EQ(CursorOf("agent:main:other", a).last_seen, na);
  const Sequence before = Human(b);
  auto again = engine_->WatchMany({{kParent, Name(b)}});
  ASSERT_OK(again);
  EXPECT_EQ(again->watched, 1u);
  EXPECT_EQ(again->created, 0u);
  EXPECT_EQ(Human(b), before + 1) << "a registration that changes nothing takes no sequence";
  Reopen();
  EXPECT_EQ(CursorOf(kParent, b).last_seen, hb);
  EXPECT_EQ(CursorOf("agent:main:other", a).last_seen, na);
  auto none = engine_->WatchMany({});
  ASSERT_OK(none);
  EXPECT_EQ(none->watched, 0u);
}

// A pair Watch would refuse refuses the whole list, named by its index and why; nothing of
// the list is registered.
TEST_F(NoticesTest, WatchManyRefusesTheWholeListForOneRefusedPair) {
  Human(kChild);
  const std::vector<std::pair<WatchSpec, std::string>> refused = {
      {{kParent, Name(kParent)}, "watches[1]: watcher \"agent:main:main\" is its own target"},
      {{"global", Name(kChild)}, "watches[1]: watcher \"global\" is not agent-scoped"},
      {{kParent, SessionName{"main", "global"}}, "watches[1]: target \"global\" is not agent-"},
      {{"agent::x", Name(kChild)}, "watches[1]: watcher \"agent::x\" is malformed"},
      {{kParent, SessionName{"main", "agent:main:"}}, "watches[1]: target \"agent:main:\" is "
                                                     "malformed"},
      {{kParent, SessionName{"ops", "agent:main:x"}}, "watches[1]: target \"agent:main:x\": "},
  };
  for (const auto& [spec, message] : refused) {
    auto r = engine_->WatchMany({{"agent:main:w", Name(kChild)}, spec});
    ASSERT_FALSE(r.ok()) << message;
    EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
    EXPECT_EQ(r.status().message().rfind(message, 0), 0u) << r.status().message();
    EXPECT_FALSE(engine_->Cursor("agent:main:w", Name(kChild))->has_value()) << message;
  }
}

// Watches removed (Engine::Unwatch): every named cursor goes with its pending notice in one
// commit group, a sequence for each; a pair without a cursor is counted and takes nothing;
// other cursors keep their positions; the removal survives a restart; a later watch starts
// again from the target's head.
TEST_F(NoticesTest, UnwatchRemovesTheNamedCursorsAndTheirNoticesInOneGroup) {
  const char* a = "agent:ops:telegram:group:-1001";
  const char* b = "agent:ops:main";
  ASSERT_OK(engine_->WatchMany({{kParent, Name(a)}, {kParent, Name(b)}, {"agent:main:x", Name(a)}})
                .status());
  Human(a);
  const Sequence hb = Human(b);
  ASSERT_EQ(Pending(kParent).size(), 2u);
  const uint64_t groups = engine_->Stats()->commit_groups;
  auto r = engine_->Unwatch({{kParent, Name(a)},
                             {kParent, Name(a)},
                             {kParent, Name(kChild)},  // never watched
                             {"agent:main:x", Name(a)}});
  ASSERT_OK(r);
  EXPECT_EQ(r->watches, 3u);
  EXPECT_EQ(r->removed, 2u);
  EXPECT_EQ(engine_->Stats()->commit_groups, groups + 1);
  EXPECT_FALSE(engine_->Cursor(kParent, Name(a))->has_value());
  EXPECT_FALSE(engine_->Cursor("agent:main:x", Name(a))->has_value());
  ASSERT_EQ(Pending(kParent).size(), 1u);
  EXPECT_EQ(Pending(kParent)[0].target, Name(b));
  EXPECT_EQ(CursorOf(kParent, b).notified, hb);
  // Two cursors removed took two sequences; an unwatch that removes nothing takes none.
  const Sequence next = Human(b);
  EXPECT_EQ(next, hb + 3);
  auto again = engine_->Unwatch({{kParent, Name(a)}});
  ASSERT_OK(again);
  EXPECT_EQ(again->removed, 0u);
  EXPECT_EQ(Human(b), next + 1);
  Reopen();
  EXPECT_FALSE(engine_->Cursor(kParent, Name(a))->has_value());
  EXPECT_EQ(Pending(kParent).size(), 1u);
  const Sequence ha = Human(a);
  EXPECT_TRUE(Pending("agent:main:x").empty()) << "an unwatched target notifies no one";
  ASSERT_TRUE(*engine_->Watch(kParent, Name(a)));
  EXPECT_EQ(CursorOf(kParent, a).last_seen, ha);
  EXPECT_EQ(engine_->Unwatch({})->watches, 0u);
}

// A pair WatchMany would refuse refuses the whole removal, named by its index when the list
// holds more than one; nothing is removed.
TEST_F(NoticesTest, UnwatchRefusesTheWholeListForOneRefusedPair) {
  Human(kChild);
  ASSERT_TRUE(*engine_->Watch("agent:main:w", Name(kChild)));
  auto many = engine_->Unwatch({{"agent:main:w", Name(kChild)}, {"global", Name(kChild)}});
  ASSERT_FALSE(many.ok());
  EXPECT_TRUE(many.status().IsInvalidArgument()) << many.status().ToString();
  EXPECT_EQ(many.status().message(),
            "watches[1]: watcher \"global\" is not agent-scoped (agent:<agentId>:<rest>)");
  EXPECT_TRUE(engine_->Cursor("agent:main:w", Name(kChild))->has_value());
  auto one = engine_->Unwatch({{"agent:main:w", Name("agent:main:w")}});
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.status().message(), "watcher \"agent:main:w\" is its own target");
}

TEST_F(NoticesTest, ProducerWatcherWithoutCursorGetsLZero) {
  EventInput in = Input(kChild, "human_direct_message");
  in.watchers = {kParent, "global"};  // bare keys are dropped
  Sequence e = Rec(in);
  CursorState c = CursorOf(kParent, kChild);
  EXPECT_EQ(c.last_seen, 0u);
  EXPECT_EQ(c.notified, e);
  EXPECT_EQ(c.material, e);
  ASSERT_EQ(Pending(kParent).size(), 1u);
  EXPECT_EQ(Pending(kParent)[0].since, 0u);
  EXPECT_TRUE(Pending("global").empty());
}

TEST_F(NoticesTest, RestartRecreatesPendingNoticesAndSweepReopens) {
  Sequence s = Spawn(kParent, kChild);
  Human(kChild);
  Reopen();
  ASSERT_EQ(Pending(kParent).size(), 1u);  // pending notices survive a restart
  std::vector<Wake> wakes;
  engine_->SubscribeWakes([&](const Wake& w) { wakes.push_back(w); });
  ASSERT_OK(engine_->Start());
  ASSERT_EQ(wakes.size(), 1u);
  EXPECT_EQ(wakes[0].watcher_key, kParent);
  EXPECT_EQ(Pending(kParent)[0].since, s);
}

TEST_F(NoticesTest, SweepMovesNToMaterial) {
  Spawn(kParent, kChild);
  Human(kChild);
  Sequence last = Human(kChild);
  auto n = engine_->Sweep();
  ASSERT_OK(n);
  EXPECT_EQ(*n, 1u);
  EXPECT_EQ(CursorOf(kParent, kChild).notified, last);
}

TEST_F(NoticesTest, ResetRemovesOnlyTheWatchersCursors) {
  const char* other = "agent:ops:main";
  Spawn(kParent, kChild);
  Spawn(other, kChild);
  ASSERT_OK(engine_->ResetWatcher(kParent));
  EXPECT_FALSE(engine_->Cursor(kParent, Name(kChild))->has_value());
  EXPECT_TRUE(engine_->Cursor(other, Name(kChild))->has_value());
}

TEST_F(NoticesTest, DeletingASessionRemovesCursorsOnBothSides) {
  const char* grandchild = "agent:main:subagent:c1:subagent:g1";
  Spawn(kParent, kChild);
  Spawn(kChild, grandchild);
  ASSERT_OK(engine_->DeleteSession(Name(kChild)));
  EXPECT_FALSE(engine_->Cursor(kParent, Name(kChild))->has_value());
  EXPECT_FALSE(engine_->Cursor(kChild, Name(grandchild))->has_value());
  EXPECT_EQ(*engine_->StateVersion(Name(kChild)), 0u);
}

TEST_F(NoticesTest, IdleCursorsExpireAfterRetention) {
  Spawn(kParent, kChild);
  clock_->Advance(options_.retention_ms + 1);
  auto p = engine_->Prune();
  ASSERT_OK(p);
  EXPECT_EQ(p->cursors_expired, 1u);
  EXPECT_FALSE(engine_->Cursor(kParent, Name(kChild))->has_value());
}

TEST_F(NoticesTest, CoalescedMaterialKeepsACursorAlive) {
  Spawn(kParent, kChild);
  Human(kChild);
  clock_->Advance(options_.retention_ms - 1000);
  Human(kChild);  // material update refreshes updatedAt
  clock_->Advance(2000);
  ASSERT_OK(engine_->Prune());
  EXPECT_TRUE(engine_->Cursor(kParent, Name(kChild))->has_value());
}

TEST_F(NoticesTest, WakesCoalescePerWatcherWithinTheWindow) {
  const char* child2 = "agent:main:subagent:c2";
  Spawn(kParent, kChild);
  Spawn(kParent, child2);
  std::vector<Wake> wakes;
  engine_->SubscribeWakes([&](const Wake& w) { wakes.push_back(w); }, kParent);
  Human(kChild);
  ASSERT_EQ(wakes.size(), 1u);  // the first fires at once
  EXPECT_EQ(wakes[0].reason, std::string("session-state:") + kChild);
  Human(child2);
  ASSERT_OK(engine_->Drain(kParent));
  Human(kChild);
  EXPECT_EQ(wakes.size(), 1u);  // merged into the window's end
  ASSERT_TRUE(engine_->NextWakeDueMs().has_value());
  EXPECT_EQ(*engine_->NextWakeDueMs(), kStart + options_.wake_window_ms);
  clock_->Advance(options_.wake_window_ms);
  engine_->RunDueWakes();
  EXPECT_EQ(wakes.size(), 2u);
  engine_->RunDueWakes();
  EXPECT_EQ(wakes.size(), 2u);
}

TEST_F(NoticesTest, NestedSubagentWatchersGetNoWake) {
  const char* grandchild = "agent:main:subagent:c1:subagent:g1";
  Spawn(kChild, grandchild);
  std::vector<Wake> wakes;
  engine_->SubscribeWakes([&](const Wake& w) { wakes.push_back(w); });
  Human(grandchild);
  EXPECT_TRUE(wakes.empty());
  EXPECT_EQ(Pending(kChild).size(), 1u);  // the notice is there for its next turn
}

TEST_F(NoticesTest, BareKeysNeverHoldCursors) {
  EventInput in = Input("global", "child_spawned", ActorType::kAgent);
  in.watchers = {"global"};
  Rec(in);
  EXPECT_TRUE(Pending("global").empty());
  EXPECT_FALSE(engine_->Cursor("global", SessionName{"main", "global"})->has_value());
}

// Regression: a producer-passed watcher and a child_spawned seed gave an agent-scoped watcher
// a cursor (and a notice) on the bare target `global`, although Watch() refuses one.
TEST_F(NoticesTest, BareTargetGetsNoCursorThroughTheProducersWatchers) {
  const SessionName global{"worker", "global"};
  EventInput human = Input("global", "human_direct_message", ActorType::kHuman);
  human.agent_id = "worker";
  human.watchers = {kParent};
  Sequence s = Rec(human);
  EXPECT_TRUE(Pending(kParent).empty());
  EXPECT_FALSE(engine_->Cursor(kParent, global)->has_value());

  EventInput spawned = Input("global", "child_spawned", ActorType::kAgent, kParent);
  spawned.agent_id = "worker";
  spawned.watchers = {kParent};
  Rec(spawned);
  EXPECT_FALSE(engine_->Cursor(kParent, global)->has_value());
  EXPECT_TRUE(engine_->WatchersOf(global)->empty());

  // The bare key still has its journal, state version and changesSince.
  auto page = engine_->ChangesSince(global, 0);
  ASSERT_OK(page);
  EXPECT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[0].sequence, s);
  EXPECT_GT(*engine_->StateVersion(global), s);
  // A malformed watcher is still refused for a bare target.
  human.watchers = {"agent:x"};
  EXPECT_TRUE(engine_->Record(human).status().IsInvalidArgument());
}

TEST_F(NoticesTest, AcknowledgeOnlyTheNamedTargets) {
  const char* child2 = "agent:main:subagent:c2";
  Spawn(kParent, kChild);
  Spawn(kParent, child2);
  Human(kChild);
  Human(child2);
  ASSERT_OK(engine_->Acknowledge(kParent, {Name(kChild)}));
  std::vector<Notice> left = Pending(kParent);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].target.session_key, child2);
}

TEST_F(NoticesTest, StatsCountWhatHappened) {
  std::vector<Wake> wakes;
  engine_->SubscribeWakes([&](const Wake& w) { wakes.push_back(w); });
  Spawn(kParent, kChild);
  Human(kChild);
  Human(kChild);
  auto s = engine_->Stats();
  ASSERT_OK(s);
  EXPECT_EQ(s->events_recorded, 3u);
  EXPECT_EQ(s->notices_opened, 1u);  // the second change coalesced
  EXPECT_EQ(s->wakes_sent, 1u);
  EXPECT_EQ(s->pending_notices, 1u);
  EXPECT_EQ(s->commit_groups, 3u);
}

TEST_F(NoticesTest, VerifyIsCleanAfterEveryKindOfChange) {
  Spawn(kParent, kChild);
  for (int i = 0; i < 5; ++i) Human(kChild);
  ASSERT_OK(engine_->Drain(kParent));
  ASSERT_OK(engine_->Watch("agent:ops:main", Name(kChild)));
  ASSERT_OK(engine_->Sweep());
  ASSERT_OK(engine_->ResetWatcher("agent:ops:main"));
  auto v = engine_->Verify();
  ASSERT_OK(v);
  EXPECT_TRUE(v->ok) << (v->differences.empty() ? "" : v->differences[0]);
  EXPECT_GT(v->records_replayed, 0u);
  EXPECT_EQ(v->rows_checked, engine_->Stats()->journal_rows);
}

}  // namespace
}  // namespace statewatch::testing

namespace statewatch::testing {
namespace {

// Regression: a target named twice in one Acknowledge was acknowledged twice, so the notice
// that reopened for intervening changes was acknowledged unseen.
TEST_F(NoticesTest, AcknowledgingATargetTwiceKeepsTheReopenedNotice) {
  Sequence s = Spawn(kParent, kChild);
  Sequence first = Human(kChild);
  Human(kChild);
  ASSERT_OK(engine_->Acknowledge(kParent, {Name(kChild), Name("AGENT:main:subagent:c1")}));
  std::vector<Notice> left = Pending(kParent);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].since, first);
  EXPECT_GT(first, s);
}

}  // namespace
}  // namespace statewatch::testing

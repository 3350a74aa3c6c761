// The folds without RocksDB: coalescing does no per-watcher work, replay equals live.
#include <gtest/gtest.h>

#include "projections/projection_state.h"

namespace statewatch::projections {
namespace {

constexpr SessionRef kTarget{1};
constexpr SessionRef kActor{2};

EventFold Notifying(SessionRef actor = SessionRef{}) {
  return EventFold{kTarget, /*notifying=*/true, /*seeds_cursor=*/false, actor, {}};
}

TEST(ProjectionStateTest, FirstEventOpensEveryIdleCursorAndCoalescedOnesTouchOnlyTheHead) {
  ProjectionState s;
  for (uint64_t w = 100; w < 1100; ++w) s.ApplyRegister(w, 0, SessionRef{w}, kTarget, nullptr);
  FoldEffects fx;
  s.ApplyEvent(2000, 5, Notifying(), &fx);
  EXPECT_EQ(fx.opened.size(), 1000u);
  EXPECT_EQ(s.pending_count(), 1000u);
  EXPECT_EQ(s.dirty_count(), 1001u);  // each opened cursor once, and the head
  fx.Clear();
  s.ClearDirty();
  s.ApplyEvent(2001, 6, Notifying(), &fx);
  EXPECT_TRUE(fx.opened.empty());
  EXPECT_EQ(s.dirty_count(), 1u);  // coalesced: only the head changes, no cursor
  const CursorRec* c = s.FindCursor(SessionRef{100}, kTarget);
  EXPECT_EQ(s.EffectiveMaterial(*c, SessionRef{100}, kTarget), 2001u);
  EXPECT_EQ(s.EffectiveUpdatedAt(*c, SessionRef{100}, kTarget), 6);
}

TEST(ProjectionStateTest, EffectiveMaterialSkipsTheWatchersOwnEvents) {
  ProjectionState s;
  s.ApplyRegister(1, 0, kActor, kTarget, nullptr);
  s.ApplyEvent(2, 0, Notifying(SessionRef{9}), nullptr);  // by another actor: opens
  s.ApplyEvent(3, 0, Notifying(kActor), nullptr);         // by the watcher itself
  const CursorRec* c = s.FindCursor(kActor, kTarget);
  EXPECT_EQ(s.EffectiveMaterial(*c, kActor, kTarget), 2u);
  EXPECT_EQ(s.EffectiveMaterial(*c, SessionRef{50}, kTarget), 3u);
}

TEST(ProjectionStateTest, ReplayingTheSameRecordsGivesTheSameState) {
  auto run = [](ProjectionState& s) {
    SessionRef watchers[] = {SessionRef{10}};
    s.ApplyEvent(1, 1, EventFold{kTarget, false, true, SessionRef{10}, watchers}, nullptr);
    s.ApplyEvent(2, 2, Notifying(), nullptr);
    s.ApplyEvent(3, 3, Notifying(), nullptr);
    SessionRef targets[] = {kTarget};
    s.ApplyAck(4, 4, SessionRef{10}, targets, nullptr);
    s.ApplySweep(5, 5, nullptr);
    WatermarkRaise raises[] = {{kTarget, 2}};
    s.ApplyPrune(6, 0, raises, nullptr);
  };
  ProjectionState a, b;
  run(a);
  run(b);
  EXPECT_TRUE(a.Diff(b, 10).empty());
  EXPECT_EQ(a.FindHead(kTarget)->watermark, 2u);
  EXPECT_EQ(a.FindCursor(SessionRef{10}, kTarget)->last_seen, 2u);
  EXPECT_EQ(a.FindCursor(SessionRef{10}, kTarget)->notified, 3u);
}

TEST(ProjectionStateTest, PruneNeverCreatesAHead) {
  ProjectionState s;
  WatermarkRaise raises[] = {{SessionRef{77}, 5}};
  s.ApplyPrune(1, 0, raises, nullptr);
  EXPECT_EQ(s.FindHead(SessionRef{77}), nullptr);
}

TEST(ProjectionStateTest, DeleteRemovesCursorsOnBothSidesAndIdleListsStayConsistent) {
  ProjectionState s;
  s.ApplyRegister(1, 0, SessionRef{5}, kTarget, nullptr);
  s.ApplyRegister(2, 0, kTarget, SessionRef{6}, nullptr);
  s.ApplyDelete(3, kTarget, nullptr);
  EXPECT_EQ(s.cursor_count(), 0u);
  s.ApplyRegister(4, 0, SessionRef{5}, kTarget, nullptr);  // re-created after a stale entry
  FoldEffects fx;
  s.ApplyEvent(5, 0, Notifying(), &fx);
  EXPECT_EQ(fx.opened.size(), 1u);  // exactly once despite the stale idle entry
}

}  // namespace
}  // namespace statewatch::projections

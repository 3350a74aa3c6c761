// WakeScheduler (engine/wake_scheduler.h): NextDue names the earliest merged wake of all the
// watchers, and nothing once they have fired, whichever way a pending wake ends (RunDue, or a
// notice after the window that fires at once).
#include "engine/wake_scheduler.h"

#include <gtest/gtest.h>

#include <vector>

namespace statewatch::engine {
namespace {

constexpr int64_t kWindow = 20'000;

TEST(WakeSchedulerTest, NextDueIsTheEarliestPendingWakeAcrossWatchers) {
  WakeScheduler s(kWindow);
  std::vector<Wake> sent;
  s.Subscribe([&](const Wake& w) { sent.push_back(w); }, "");
  EXPECT_FALSE(s.NextDue());
  s.Notify("a", "t1", 1'000);  // fires at once
  s.Notify("b", "t1", 3'000);  // fires at once
  EXPECT_FALSE(s.NextDue());
  s.Notify("b", "t2", 4'000);  // merged: due at 23,000
  EXPECT_EQ(s.NextDue(), 23'000);
  s.Notify("a", "t2", 5'000);  // merged: due at 21,000
  s.Notify("a", "t3", 6'000);  // the same pending wake: still 21,000
  EXPECT_EQ(s.NextDue(), 21'000);
  s.RunDue(21'000);
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[2].watcher_key, "a");
  EXPECT_EQ(sent[2].reason, "session-state:t3");
  EXPECT_EQ(s.NextDue(), 23'000);
  s.RunDue(23'000);
  ASSERT_EQ(sent.size(), 4u);
  EXPECT_EQ(sent[3].watcher_key, "b");
  EXPECT_FALSE(s.NextDue());
}

TEST(WakeSchedulerTest, APendingWakeOverdueWhenTheNextNoticeComesFiresAndLeavesNothingDue) {
  WakeScheduler s(kWindow);
  std::vector<Wake> sent;
  s.Subscribe([&](const Wake& w) { sent.push_back(w); }, "");
  s.Notify("a", "t1", 1'000);
  s.Notify("a", "t2", 2'000);  // merged: due at 21,000
  EXPECT_EQ(s.NextDue(), 21'000);
  s.Notify("a", "t3", 30'000);  // RunDue never ran: this one fires at once
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_EQ(sent[1].reason, "session-state:t3");
  EXPECT_FALSE(s.NextDue());
  s.Notify("a", "t4", 31'000);  // merged into the new window
  EXPECT_EQ(s.NextDue(), 50'000);
}

}  // namespace
}  // namespace statewatch::engine

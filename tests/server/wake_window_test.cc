// WakeWindow (server/wake_window.h): one wake per window per watcher at the relaying node,
// the newest held wake sent when the window ends, nothing dropped; on a manual clock.
#include "server/wake_window.h"

#include <gtest/gtest.h>

namespace statewatch::server {
namespace {

TEST(WakeWindowTest, TheFirstWakeGoesOutAndLaterOnesWaitForTheWindowsEnd) {
  WakeWindow w(20'000);
  EXPECT_EQ(w.Offer("a", 1'000), "a");
  EXPECT_FALSE(w.NextDueMs());
  EXPECT_FALSE(w.Offer("b", 5'000));  // another partition's wake, same window: held
  EXPECT_FALSE(w.Offer("c", 9'000));  // the newest held one replaces it
  EXPECT_EQ(w.NextDueMs(), 21'000);
  EXPECT_FALSE(w.Due(20'999));
  EXPECT_EQ(w.Due(21'000), "c");
  EXPECT_FALSE(w.Due(50'000));  // nothing held any more
  // The held wake's sending opened a new window.
  EXPECT_FALSE(w.Offer("d", 30'000));
  EXPECT_EQ(w.Due(41'000), "d");
  // A wake after a quiet window goes out at once.
  EXPECT_EQ(w.Offer("e", 70'000), "e");
}

TEST(WakeWindowTest, NoWindowPassesEveryWake) {
  WakeWindow w(0);
  EXPECT_EQ(w.Offer("a", 1), "a");
  EXPECT_EQ(w.Offer("b", 2), "b");
  EXPECT_FALSE(w.NextDueMs());
  EXPECT_FALSE(w.Due(3));
}

}  // namespace
}  // namespace statewatch::server

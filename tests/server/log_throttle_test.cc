// LogThrottle: one line per interval, carrying the count of what it stands for.
#include "server/log_throttle.h"

#include <gtest/gtest.h>

namespace statewatch::server {
namespace {

TEST(LogThrottleTest, OneLineASecondWithTheCount) {
  LogThrottle throttle(1000);
  EXPECT_EQ(throttle.Count(5000), 1u);  // the first occurrence is logged at once
  uint64_t logged = 0;
  for (int i = 0; i < 100000; ++i) logged += throttle.Count(5000 + i / 100) > 0;
  EXPECT_EQ(logged, 0u);                     // 100,000 occurrences within the second
  EXPECT_EQ(throttle.Count(6000), 100001u);  // the next line counts them all
  EXPECT_EQ(throttle.Count(6999), 0u);
  EXPECT_EQ(throttle.Count(7000), 2u);
  EXPECT_EQ(throttle.Count(60000), 1u);
}

}  // namespace
}  // namespace statewatch::server

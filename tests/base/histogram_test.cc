// Histogram: values land in the first bucket whose bound they do not pass; the snapshot's
// count is the sum of its buckets.
#include "base/histogram.h"

#include <gtest/gtest.h>

namespace statewatch {
namespace {

TEST(HistogramTest, ValuesLandInTheFirstBoundTheyDoNotPass) {
  constexpr double kBounds[] = {1, 10};
  Histogram h(kBounds);
  h.Observe(0.5);
  h.Observe(1);  // bounds are inclusive
  h.Observe(5);
  h.Observe(100);
  HistogramData d = h.Snapshot();
  EXPECT_EQ(d.bounds, (std::vector<double>{1, 10}));
  EXPECT_EQ(d.counts, (std::vector<uint64_t>{2, 1, 1}));
  EXPECT_EQ(d.count, 4u);
  EXPECT_DOUBLE_EQ(d.sum, 106.5);
}

TEST(HistogramTest, EmptyHasZeroCountsForEveryBucket) {
  Histogram h(kLatencyBounds);
  HistogramData d = h.Snapshot();
  EXPECT_EQ(d.counts.size(), std::size(kLatencyBounds) + 1);
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.sum, 0);
}

}  // namespace
}  // namespace statewatch

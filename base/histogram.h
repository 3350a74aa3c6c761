// Histogram: a fixed-bucket distribution recorded with relaxed atomics, for metrics. Recording
// costs a scan of the (few) bounds and two uncontended increments; no lock, no allocation.
//
// Thread-safe. A Snapshot taken during Observe may miss that one observation, never half of
// it in the counts: `count` is summed from the buckets, so it always matches them.
#ifndef STATEWATCH_BASE_HISTOGRAM_H_
#define STATEWATCH_BASE_HISTOGRAM_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "statewatch/types.h"

namespace statewatch {

class Histogram {
 public:
  // REQUIRES: `bounds` ascending (inclusive upper bounds; a last +Inf bucket is implied).
  explicit Histogram(std::span<const double> bounds)
      : bounds_(bounds.begin(), bounds.end()),
        counts_(new std::atomic<uint64_t>[bounds.size() + 1]) {
    for (std::size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
  }
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double value) {
    std::size_t i = 0;
    while (i < bounds_.size() && value > bounds_[i]) ++i;
    counts_[i].fetch_add(1, std::memory_order_relaxed);
    sum_.fetch_add(value, std::memory_order_relaxed);
  }

  HistogramData Snapshot() const {
    HistogramData d;
    d.bounds = bounds_;
    d.counts.resize(bounds_.size() + 1);
    for (std::size_t i = 0; i <= bounds_.size(); ++i) {
      d.counts[i] = counts_[i].load(std::memory_order_relaxed);
      d.count += d.counts[i];
    }
    d.sum = sum_.load(std::memory_order_relaxed);
    return d;
  }

 private:
  const std::vector<double> bounds_;
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Bucket bounds shared by the latency histograms, in seconds: 50 µs to 10 s (an fsync is
// ~0.2 ms on an SSD; a write stall or a slow disk shows in the upper buckets).
inline constexpr double kLatencyBounds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                            0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                            0.5,     1.0,    2.5,     10.0};
// Bounds for sizes (write calls or events per commit group).
inline constexpr double kSizeBounds[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096};

}  // namespace statewatch

#endif  // STATEWATCH_BASE_HISTOGRAM_H_

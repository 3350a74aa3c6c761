#include "webhooks/backoff.h"

#include <algorithm>
#include <chrono>

namespace statewatch::webhooks {

Backoff::Backoff(int64_t initial_ms, int64_t max_ms, uint64_t seed)
    : initial_ms_(std::max<int64_t>(1, initial_ms)),
      max_ms_(std::max(initial_ms_, max_ms)),
      random_(seed != 0 ? seed
                        : static_cast<uint64_t>(
                              std::chrono::steady_clock::now().time_since_epoch().count())) {}

int64_t Backoff::Cap(uint32_t failed_attempts) const {
  uint32_t n = std::max<uint32_t>(1, failed_attempts);
  int64_t cap = initial_ms_;
  for (uint32_t i = 1; i < n && cap < max_ms_; ++i) cap *= 2;
  return std::min(cap, max_ms_);
}

int64_t Backoff::Delay(uint32_t failed_attempts) {
  int64_t cap = Cap(failed_attempts);
  std::lock_guard<std::mutex> lock(mu_);
  std::uniform_int_distribution<int64_t> jitter(0, cap / 2);
  return cap - jitter(random_);
}

}  // namespace statewatch::webhooks

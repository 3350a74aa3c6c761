// Exponential back-off with jitter for webhook retries. After the n-th failed attempt
// (n >= 1) the next one is due after
//   cap = min(max_ms, initial_ms * 2^(n-1));   delay = cap - uniform[0, cap/2]
// ("equal jitter": never less than half the cap, so receivers that fail together do not
// retry together). The random numbers come from a seeded generator: the same seed gives
// the same delays (tests), seed 0 seeds from the time.
//
// Thread-safe.
#ifndef STATEWATCH_WEBHOOKS_BACKOFF_H_
#define STATEWATCH_WEBHOOKS_BACKOFF_H_

#include <cstdint>
#include <mutex>
#include <random>

namespace statewatch::webhooks {

class Backoff {
 public:
  Backoff(int64_t initial_ms, int64_t max_ms, uint64_t seed);
  // The delay after `failed_attempts` failures (>= 1; 0 is treated as 1).
  int64_t Delay(uint32_t failed_attempts);
  // The cap without jitter.
  int64_t Cap(uint32_t failed_attempts) const;

 private:
  const int64_t initial_ms_;
  const int64_t max_ms_;
  std::mutex mu_;
  std::mt19937_64 random_;
};

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_BACKOFF_H_

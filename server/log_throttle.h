// LogThrottle: logs a condition that may repeat thousands of times a second (accept failing
// with "too many open files", connections refused at the cap) at most once per interval,
// with the number of occurrences the line stands for. Without it a daemon out of file
// descriptors wrote millions of identical lines (hundreds of MB) within seconds.
//
//   if (uint64_t n = throttle.Count(now_ms)) spdlog::warn("... count={}", n);
//
// Thread-safe.
#ifndef STATEWATCH_SERVER_LOG_THROTTLE_H_
#define STATEWATCH_SERVER_LOG_THROTTLE_H_

#include <cstdint>
#include <limits>
#include <mutex>

namespace statewatch::server {

class LogThrottle {
 public:
  explicit LogThrottle(int64_t interval_ms = 1000) : interval_ms_(interval_ms) {}

  // Counts one occurrence at `now_ms` (any monotonic clock). Returns 0 when no line is due;
  // otherwise the occurrences since the last line, this one included (a line is due at the
  // first occurrence and then once `interval_ms` has passed since the last line).
  uint64_t Count(int64_t now_ms) {
    std::lock_guard<std::mutex> lock(mu_);
    ++pending_;
    if (last_line_ms_ != kNever && now_ms - last_line_ms_ < interval_ms_) return 0;
    last_line_ms_ = now_ms;
    uint64_t n = pending_;
    pending_ = 0;
    return n;
  }

 private:
  static constexpr int64_t kNever = std::numeric_limits<int64_t>::min();
  const int64_t interval_ms_;
  std::mutex mu_;
  int64_t last_line_ms_ = kNever;  // guarded by mu_
  uint64_t pending_ = 0;           // guarded by mu_
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_LOG_THROTTLE_H_

// Clock: the engine's only source of time, injectable so that tests cross 30-day retention
// and 20-second wake windows without sleeping.
//
// Thread-safe.
#ifndef STATEWATCH_CLOCK_H_
#define STATEWATCH_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace statewatch {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
};

// Wall-clock time (std::chrono::system_clock).
std::shared_ptr<Clock> NewSystemClock();

// A clock that only moves when told to. Never goes backwards: Set() to an earlier time is
// ignored and returns false.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms) : now_(start_ms) {}
  int64_t NowMs() const override { return now_.load(std::memory_order_acquire); }
  bool Set(int64_t ms) {
    int64_t cur = now_.load();
    while (ms >= cur) {
      if (now_.compare_exchange_weak(cur, ms)) return true;
    }
    return false;
  }
  void Advance(int64_t delta_ms) { now_.fetch_add(delta_ms); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace statewatch

#endif  // STATEWATCH_CLOCK_H_

// PruneScheduler: the daemon's retention on a timer. The engine prunes at open, on demand
// (POST /v1/prune) and after writes at most every EngineOptions::prune_interval_ms; a daemon
// that receives no write would keep history past its retention for ever. This runs
// Engine::Prune() every `interval_ms` on the engine's clock, whatever the traffic — as a
// log's retention does (Kafka's retention.ms, RocksDB's TTL compaction).
//
// With the system clock a thread of its own waits for the next prune (re-reading the clock
// at least every second, so that a clock step delays it by at most that). With a manual
// clock there is no thread: RunDueNow() (POST /v1/clock) runs a due prune on the caller's
// thread before it returns, so tests see its effect as soon as the clock request is
// answered.
//
// Thread-safe. Stop() from the owner's thread, before the engine closes.
#ifndef STATEWATCH_SERVER_PRUNE_SCHEDULER_H_
#define STATEWATCH_SERVER_PRUNE_SCHEDULER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "statewatch/clock.h"
#include "statewatch/engine.h"

namespace statewatch::server {

class PruneScheduler {
 public:
  // None is owned; both must outlive the scheduler. REQUIRES: interval_ms > 0.
  PruneScheduler(Engine* engine, const Clock* clock, bool manual_clock, int64_t interval_ms);
  ~PruneScheduler();  // Stop()

  // The first prune falls due `interval_ms` after the clock's now; starts the thread (system
  // clock only).
  void Start();
  // Stops the thread (a prune under way finishes first). Idempotent.
  void Stop();
  // Runs the prune when it is due at the clock's now, and schedules the next one
  // `interval_ms` later. Returns whether it pruned.
  bool RunDueNow();

  // When the next prune falls due (engine clock, ms).
  int64_t next_due_ms() const;

 private:
  void Loop();

  Engine* engine_;
  const Clock* clock_;
  const bool manual_clock_;
  const int64_t interval_ms_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int64_t next_due_ms_ = 0;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::mutex run_mu_;        // one prune at a time
  std::thread thread_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_PRUNE_SCHEDULER_H_

// BoundedWorker: runs one job at a time on a worker thread and waits for it at most a
// bounded wall time, or until Interrupt(). The upstream monitor runs each provider call
// through it so a hung source (a stuck network file system, a slow catalog) costs one tick
// at most `timeout`, never the monitor.
//
// A job that outlives its wait cannot be cancelled (a blocking read cannot be); its thread
// is abandoned — detached, left to finish on its own — and the next Run starts a fresh
// worker. The job must therefore own everything it touches (capture by value or by
// shared_ptr). One worker is reused across jobs, so a tick over many idle links costs a
// hand-off per link, not a thread.
//
// Not thread-safe, except Interrupt(), which any thread may call at any time.
#ifndef STATEWATCH_MONITOR_BOUNDED_WORKER_H_
#define STATEWATCH_MONITOR_BOUNDED_WORKER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>

namespace statewatch::monitor {

class BoundedWorker {
 public:
  enum class Outcome {
    kDone,         // the job finished within the wait
    kTimedOut,     // the wait ended first; the job's thread was abandoned
    kInterrupted,  // Interrupt() ended the wait; the job's thread was abandoned
  };

  BoundedWorker() = default;
  // Joins the idle worker; abandoned ones finish on their own.
  ~BoundedWorker();
  BoundedWorker(const BoundedWorker&) = delete;
  BoundedWorker& operator=(const BoundedWorker&) = delete;

  // Runs `job` on the worker thread and waits up to `timeout`. Returns kInterrupted at
  // once while an interrupt is set.
  Outcome Run(std::function<void()> job, std::chrono::milliseconds timeout);

  // Ends the current wait (if any) and every later Run with kInterrupted, until
  // ClearInterrupt().
  void Interrupt();
  void ClearInterrupt();

  // Threads abandoned so far (diagnostics).
  uint64_t abandoned() const { return abandoned_.load(); }

 private:
  struct Worker;
  std::shared_ptr<Worker> Current();
  void Abandon(const std::shared_ptr<Worker>& w);

  std::mutex mu_;                    // guards current_
  std::shared_ptr<Worker> current_;  // the idle worker, created on first use
  std::atomic<bool> interrupted_{false};
  std::atomic<uint64_t> abandoned_{0};
};

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_BOUNDED_WORKER_H_

// MonitorDriver: runs the daemon's UpstreamMonitor on its own thread. A tick blocks (file
// I/O, a provider timeout of up to 45 s), so it must never run on an io_context thread; this
// thread is both the monitor's timer (a timed wait until NextTickAt() on the engine's clock)
// and its worker.
//
// With a manual clock the thread never waits on time: RunDueNow() (POST /v1/clock) hands it
// the due tick, if any, and waits until that tick has finished, so that tests see its events
// as soon as the clock request is answered.
//
// Thread-safe. Stop() from the owner's thread, once, before the engine closes.
#ifndef STATEWATCH_SERVER_MONITOR_DRIVER_H_
#define STATEWATCH_SERVER_MONITOR_DRIVER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "monitor/upstream_monitor.h"
#include "statewatch/clock.h"

namespace statewatch::server {

class MonitorDriver {
 public:
  // `after_tick` runs on the driver thread after a tick that recorded events (the daemon
  // re-arms its wake timer there). None is owned; all must outlive the driver.
  MonitorDriver(monitor::UpstreamMonitor* monitor, const Clock* clock, bool manual_clock,
                std::function<void()> after_tick);
  ~MonitorDriver();  // Stop()

  // Starts the monitor's cadence at the clock's now and the thread.
  void Start();
  // Aborts a running tick (it publishes nothing), stops the cadence and joins the thread.
  // Idempotent.
  void Stop();
  // Runs the tick that is due at the clock's now (if any) on the driver thread and returns
  // once it has finished. Returns at once after Stop().
  void RunDueNow();

 private:
  void Loop();
  void RunDue();

  monitor::UpstreamMonitor* monitor_;
  const Clock* clock_;
  const bool manual_clock_;
  std::function<void()> after_tick_;

  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t requested_ = 0;  // RunDueNow generations; guarded by mu_
  uint64_t done_ = 0;       // guarded by mu_
  bool stopping_ = false;   // guarded by mu_
  std::thread thread_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_MONITOR_DRIVER_H_

#include "server/monitor_driver.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace statewatch::server {

namespace {
// With the system clock the thread re-reads NextTickAt() at least this often, so that a
// clock step (NTP) delays a tick by at most this much.
constexpr int64_t kMaxWaitMs = 1000;
}  // namespace

MonitorDriver::MonitorDriver(monitor::UpstreamMonitor* monitor, const Clock* clock,
                             bool manual_clock, std::function<void()> after_tick)
    : monitor_(monitor),
      clock_(clock),
      manual_clock_(manual_clock),
      after_tick_(std::move(after_tick)) {}

MonitorDriver::~MonitorDriver() { Stop(); }

void MonitorDriver::Start() {
  monitor_->Start(clock_->NowMs());
  thread_ = std::thread([this] { Loop(); });
}

void MonitorDriver::Stop() {
  // The monitor first: a running tick aborts (publishing nothing) and Stop() waits for it,
  // so the thread is free to see `stopping_` promptly.
  monitor_->Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void MonitorDriver::RunDueNow() {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || !thread_.joinable()) return;
  uint64_t mine = ++requested_;
  cv_.notify_all();
  cv_.wait(lock, [&] { return stopping_ || done_ >= mine; });
}

void MonitorDriver::RunDue() {
  auto report = monitor_->RunDueTick(clock_->NowMs());
  if (!report) return;
  spdlog::debug(
      "event=upstream_tick outcome={} links={} scanned={} human_turns={} events={} "
      "failed_checks={} removed={}",
      static_cast<int>(report->outcome), report->links, report->scanned, report->human_turns,
      report->events_recorded, report->failed_checks, report->links_removed);
  for (const auto& b : report->blocked) {
    spdlog::warn("event=upstream_blocked session={} ref=\"{}\" marker={} message=\"{}\"",
                 b.session.session_key, b.upstream_ref, b.marker, b.message);
  }
  if (report->events_recorded > 0 && after_tick_) after_tick_();
}

void MonitorDriver::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    if (requested_ > done_) {
      uint64_t upto = requested_;
      lock.unlock();
      RunDue();
      lock.lock();
      done_ = upto;
      cv_.notify_all();
      continue;
    }
    if (manual_clock_) {
      cv_.wait(lock, [&] { return stopping_ || requested_ > done_; });
      continue;
    }
    std::optional<int64_t> next = monitor_->NextTickAt();
    int64_t delay = next ? *next - clock_->NowMs() : kMaxWaitMs;
    if (next && delay <= 0) {
      lock.unlock();
      RunDue();
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(std::min(delay, kMaxWaitMs)),
                 [&] { return stopping_ || requested_ > done_; });
  }
}

}  // namespace statewatch::server

#include "server/prune_scheduler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace statewatch::server {

namespace {
constexpr int64_t kMaxWaitMs = 1000;  // a clock step delays a prune by at most this
}  // namespace

PruneScheduler::PruneScheduler(Engine* engine, const Clock* clock, bool manual_clock,
                               int64_t interval_ms)
    : engine_(engine), clock_(clock), manual_clock_(manual_clock), interval_ms_(interval_ms) {}

PruneScheduler::~PruneScheduler() { Stop(); }

void PruneScheduler::Start() {
  {
    std::lock_guard lock(mu_);
    next_due_ms_ = clock_->NowMs() + interval_ms_;
  }
  if (!manual_clock_) thread_ = std::thread([this] { Loop(); });
}

void PruneScheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t PruneScheduler::next_due_ms() const {
  std::lock_guard lock(mu_);
  return next_due_ms_;
}

bool PruneScheduler::RunDueNow() {
  std::lock_guard run(run_mu_);
  const int64_t now = clock_->NowMs();
  {
    std::lock_guard lock(mu_);
    if (stopping_ || now < next_due_ms_) return false;
    next_due_ms_ = now + interval_ms_;
  }
  auto stats = engine_->Prune();
  if (!stats.ok()) {
    // A refusing engine (a full disk) is reported by /healthz and /readyz; the next prune
    // tries again.
    spdlog::warn("event=scheduled_prune_failed error=\"{}\"", stats.status().ToString());
    return false;
  }
  spdlog::debug("event=scheduled_prune rows_deleted={} next_due_ms={}", stats->rows_deleted,
                now + interval_ms_);
  return true;
}

void PruneScheduler::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    int64_t delay = next_due_ms_ - clock_->NowMs();
    if (delay <= 0) {
      lock.unlock();
      RunDueNow();
      lock.lock();
      continue;
    }
    cv_.wait_for(lock, std::chrono::milliseconds(std::min(delay, kMaxWaitMs)),
                 [&] { return stopping_; });
  }
}

}  // namespace statewatch::server

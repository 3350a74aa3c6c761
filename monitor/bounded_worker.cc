#include "monitor/bounded_worker.h"

#include <condition_variable>
#include <thread>

namespace statewatch::monitor {

// The state a worker thread shares with its owner. The thread holds a shared_ptr to it, so
// an abandoned thread keeps it alive until it exits.
struct BoundedWorker::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::function<void()> job;  // set: a job is waiting
  bool running = false;       // between taking the job and finishing it
  uint64_t finished = 0;      // jobs finished
  bool quit = false;          // exit after the current job (shutdown or abandonment)
  std::thread thread;

  static void Loop(std::shared_ptr<Worker> self) {
    std::unique_lock lock(self->mu);
    for (;;) {
      self->cv.wait(lock, [&] { return self->quit || self->job; });
      if (!self->job) return;  // quit while idle
      std::function<void()> job = std::move(self->job);
      self->job = nullptr;
      self->running = true;
      lock.unlock();
      job();
      lock.lock();
      self->running = false;
      ++self->finished;
      self->cv.notify_all();
      if (self->quit) return;
    }
  }
};

BoundedWorker::~BoundedWorker() {
  std::shared_ptr<Worker> w;
  {
    std::lock_guard lock(mu_);
    w = std::move(current_);
  }
  if (!w) return;
  {
    std::lock_guard lock(w->mu);
    w->quit = true;
  }
  w->cv.notify_all();
  w->thread.join();  // idle: Run never returns while its job runs on the current worker
}

std::shared_ptr<BoundedWorker::Worker> BoundedWorker::Current() {
  std::lock_guard lock(mu_);
  if (!current_) {
    current_ = std::make_shared<Worker>();
    current_->thread = std::thread(&Worker::Loop, current_);
  }
  return current_;
}

void BoundedWorker::Abandon(const std::shared_ptr<Worker>& w) {
  {
    std::lock_guard lock(mu_);
    if (current_ == w) current_.reset();
  }
  {
    std::lock_guard lock(w->mu);
    w->quit = true;
    w->job = nullptr;  // not started yet: never run it
  }
  w->cv.notify_all();
  w->thread.detach();
  abandoned_.fetch_add(1);
}

BoundedWorker::Outcome BoundedWorker::Run(std::function<void()> job,
                                          std::chrono::milliseconds timeout) {
  if (interrupted_.load()) return Outcome::kInterrupted;
  std::shared_ptr<Worker> w = Current();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::unique_lock lock(w->mu);
  const uint64_t target = w->finished + 1;
  w->job = std::move(job);
  w->cv.notify_all();
  bool done = w->cv.wait_until(lock, deadline,
                               [&] { return w->finished >= target || interrupted_.load(); });
  if (done && w->finished >= target) return Outcome::kDone;
  lock.unlock();
  Abandon(w);
  return interrupted_.load() ? Outcome::kInterrupted : Outcome::kTimedOut;
}

void BoundedWorker::Interrupt() {
  interrupted_.store(true);
  std::shared_ptr<Worker> w;
  {
    std::lock_guard lock(mu_);
    w = current_;
  }
  if (!w) return;
  // Taking the worker's mutex orders the flag before a waiter's predicate check, so the
  // notification cannot be lost.
  { std::lock_guard lock(w->mu); }
  w->cv.notify_all();
}

void BoundedWorker::ClearInterrupt() { interrupted_.store(false); }

}  // namespace statewatch::monitor

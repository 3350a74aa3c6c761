#include "bench/writer_pool.h"

namespace statewatch::bench {

WriterPool::WriterPool(int threads) : results_(threads < 1 ? 1 : threads) {
  for (int i = 0; i < static_cast<int>(results_.size()); ++i)
    threads_.emplace_back([this, i] { Loop(i); });
}

WriterPool::~WriterPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  start_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

Status WriterPool::Run(const std::function<Status(int)>& fn) {
  std::unique_lock<std::mutex> lock(mu_);
  fn_ = &fn;
  running_ = threads();
  ++generation_;
  start_cv_.notify_all();
  done_cv_.wait(lock, [this] { return running_ == 0; });
  fn_ = nullptr;
  for (const Status& st : results_) {
    if (!st.ok()) return st;
  }
  return Status::OK();
}

void WriterPool::Loop(int index) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    start_cv_.wait(lock, [&] { return stopping_ || generation_ != seen; });
    if (stopping_) return;
    seen = generation_;
    const std::function<Status(int)>* fn = fn_;
    lock.unlock();
    Status st = (*fn)(index);  // the writes run outside the lock, all threads at once
    lock.lock();
    results_[index] = std::move(st);
    if (--running_ == 0) done_cv_.notify_one();
  }
}

}  // namespace statewatch::bench

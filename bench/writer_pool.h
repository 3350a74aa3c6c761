// WriterPool: a fixed set of threads that run one function together, for the benchmarks of
// concurrent writers. The threads start once and wait between runs, so a timed run measures
// the writes, not thread creation.
//
//   WriterPool pool(8);
//   Status st = pool.Run([&](int thread) { return RecordSomeEvents(thread); });
//
// Thread-safe: Run may be called from any one thread at a time (it blocks until every
// thread has finished the function).
#ifndef STATEWATCH_BENCH_WRITER_POOL_H_
#define STATEWATCH_BENCH_WRITER_POOL_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::bench {

class WriterPool {
 public:
  // REQUIRES: threads >= 1.
  explicit WriterPool(int threads);
  ~WriterPool();  // joins the threads
  WriterPool(const WriterPool&) = delete;
  WriterPool& operator=(const WriterPool&) = delete;

  // Calls fn(0) ... fn(threads - 1), each on its own thread, all at once; returns when every
  // call has returned: OK, or the first error in thread order.
  Status Run(const std::function<Status(int thread)>& fn);

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  void Loop(int index);

  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  const std::function<Status(int)>* fn_ = nullptr;  // guarded by mu_
  uint64_t generation_ = 0;                          // guarded by mu_; one per Run
  int running_ = 0;                                  // guarded by mu_
  bool stopping_ = false;                            // guarded by mu_
  std::vector<Status> results_;                      // one per thread, this Run's
  std::vector<std::thread> threads_;
};

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_WRITER_POOL_H_

// WriterPool runs one function on every thread at once, reuses its threads across runs and
// reports the first error in thread order.
#include "bench/writer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "status_matchers.h"

namespace statewatch::bench {
namespace {

TEST(WriterPoolTest, EveryThreadRunsOncePerRun) {
  WriterPool pool(4);
  std::vector<std::atomic<int>> calls(4);
  for (int run = 0; run < 3; ++run) {
    ASSERT_OK(pool.Run([&](int t) {
      calls[t].fetch_add(1);
      return Status::OK();
    }));
  }
  for (auto& c : calls) EXPECT_EQ(c.load(), 3);
}

TEST(WriterPoolTest, ThreadsRunAtTheSameTime) {
  // Every thread waits (bounded) until all have arrived: only possible if they run together.
  constexpr int kThreads = 8;
  WriterPool pool(kThreads);
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  Status st = pool.Run([&](int) {
    std::unique_lock<std::mutex> lock(mu);
    ++arrived;
    cv.notify_all();
    bool all = cv.wait_for(lock, std::chrono::seconds(30), [&] { return arrived == kThreads; });
    return all ? Status::OK() : Status::FailedPrecondition("only " + std::to_string(arrived) +
                                                           " threads arrived");
  });
  EXPECT_OK(st);
}

TEST(WriterPoolTest, ReturnsTheFirstErrorInThreadOrder) {
  WriterPool pool(3);
  Status st = pool.Run([](int t) {
    return t == 0 ? Status::OK() : Status::IOError("thread " + std::to_string(t));
  });
  EXPECT_EQ(st.code(), Status::Code::kIOError);
  EXPECT_EQ(st.message(), "thread 1");
  EXPECT_OK(pool.Run([](int) { return Status::OK(); }));  // errors do not stick
}

}  // namespace
}  // namespace statewatch::bench

// BoundedWorker: jobs finish, time out, or are interrupted; a timed-out job's thread is
// abandoned and the next job runs on a fresh one.
#include "monitor/bounded_worker.h"

#include <gtest/gtest.h>

#include <future>
#include <memory>

namespace statewatch::monitor {
namespace {

using namespace std::chrono_literals;

TEST(BoundedWorker, RunsJobsInTurn) {
  BoundedWorker w;
  int sum = 0;
  for (int i = 1; i <= 100; ++i) {
    ASSERT_EQ(w.Run([&sum, i] { sum += i; }, 20s), BoundedWorker::Outcome::kDone);
  }
  EXPECT_EQ(sum, 5050);
  EXPECT_EQ(w.abandoned(), 0u);
}

TEST(BoundedWorker, ATimedOutJobIsAbandonedAndTheNextRunsFresh) {
  BoundedWorker w;
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto left = std::make_shared<std::promise<void>>();
  EXPECT_EQ(w.Run(
                [released, left] {
                  released.wait_for(20s);
                  left->set_value();
                },
                10ms),
            BoundedWorker::Outcome::kTimedOut);
  EXPECT_EQ(w.abandoned(), 1u);
  bool ran = false;
  EXPECT_EQ(w.Run([&ran] { ran = true; }, 20s), BoundedWorker::Outcome::kDone);
  EXPECT_TRUE(ran);
  release->set_value();
  EXPECT_EQ(left->get_future().wait_for(20s), std::future_status::ready);
}

TEST(BoundedWorker, InterruptEndsTheWaitAndLaterRuns) {
  BoundedWorker w;
  auto entered = std::make_shared<std::promise<void>>();
  auto release = std::make_shared<std::promise<void>>();
  auto released = release->get_future().share();
  auto running = std::async(std::launch::async, [&] {
    return w.Run(
        [entered, released] {
          entered->set_value();
          released.wait_for(20s);
        },
        60s);
  });
  ASSERT_EQ(entered->get_future().wait_for(20s), std::future_status::ready);
  w.Interrupt();
  ASSERT_EQ(running.wait_for(20s), std::future_status::ready);
  EXPECT_EQ(running.get(), BoundedWorker::Outcome::kInterrupted);
  EXPECT_EQ(w.Run([] {}, 20s), BoundedWorker::Outcome::kInterrupted);
  w.ClearInterrupt();
  EXPECT_EQ(w.Run([] {}, 20s), BoundedWorker::Outcome::kDone);
  release->set_value();
}

}  // namespace
}  // namespace statewatch::monitor

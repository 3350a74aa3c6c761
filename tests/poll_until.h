// Waiting in tests for what another thread or process does on its own: ask again at a fixed
// interval, a bounded number of times, so that something that never happens fails the test
// instead of hanging it. Never a measure of time: only an upper bound on the wait.
#ifndef STATEWATCH_TESTS_POLL_UNTIL_H_
#define STATEWATCH_TESTS_POLL_UNTIL_H_

#include <chrono>
#include <thread>

namespace statewatch::testing {

// Asks `done()` up to `attempts` times, `interval` apart, and once more at the end; true as
// soon as it holds.
template <typename Pred>
bool PollUntil(Pred done, int attempts, std::chrono::milliseconds interval) {
  for (int i = 0; i < attempts; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(interval);
  }
  return done();
}

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_POLL_UNTIL_H_

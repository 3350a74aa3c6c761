// A changesSince page of 200 events, measured (not a test: DISABLED_, run on purpose):
//   ./build/tests/engine_tests --gtest_also_run_disabled_tests
//       --gtest_filter='ChangesSinceMeasure.*'
// prints microseconds per page; under callgrind (instruction counts are repeatable on a noisy
// machine) count only the page reads:
//   valgrind --tool=callgrind --toggle-collect='*EngineImpl::ChangesSince*' (or, for the
//     ReadChanges tests, '*EngineImpl::ReadChanges*')
//       ./build/tests/engine_tests --gtest_also_run_disabled_tests
//       --gtest_filter='ChangesSinceMeasure.*'
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>

#include "engine/engine_fixture.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

class ChangesSinceMeasure : public EngineTest {
 protected:
  const std::string key_ = "agent:main:subagent:8f1c2d3e-4b5a-6978-8a9b-0c1d2e3f4a5b";
  void Fill() {
    for (int i = 0; i < 300; ++i) {
      EventInput in = Input(key_, i % 3 ? "human_direct_message" : "goal_changed");
      in.actor_id = "agent:main:main";
      in.run_id = "run-" + std::to_string(i);
      in.summary = "human message via telegram (turn " + std::to_string(i) + ")";
      in.payload_json = R"({"channel":"telegram","turns":2})";
      Rec(in);
    }
  }
  // Engine::ReadChanges into one reused page; under callgrind use
  // --toggle-collect='*EngineImpl::ReadChanges*'.
  void MeasureLean(const char* what) {
    Fill();
    constexpr int kPages = 2000;
    ChangesView view;
    std::size_t events = 0;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPages; ++i) {
      ASSERT_OK(engine_->ReadChanges(Name(key_), 50, 200, nullptr, &view));
      events += view.events().size();
    }
    double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(events, static_cast<std::size_t>(kPages) * 200);
    std::cout << "[ measure  ] ReadChanges 200-event page (memtable, " << what
              << "): " << us / kPages << " us/page" << std::endl;
  }
};

TEST_F(ChangesSinceMeasure, DISABLED_LeanPageWithoutRowCache) {
  options_.row_cache_bytes = 0;
  Reopen();
  MeasureLean("no row cache");
}

TEST_F(ChangesSinceMeasure, DISABLED_LeanPageFromRowCache) { MeasureLean("row cache"); }

TEST_F(ChangesSinceMeasure, DISABLED_TwoHundredEventPage) {
  Fill();
  constexpr int kPages = 2000;
  std::size_t events = 0;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kPages; ++i) {
    auto page = engine_->ChangesSince(Name(key_), 50, 200);
    ASSERT_OK(page);
    events += page->events.size();
  }
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(events, static_cast<std::size_t>(kPages) * 200);
  std::cout << "[ measure  ] changesSince 200-event page (memtable): " << us / kPages << " us/page"
            << std::endl;
}

}  // namespace
}  // namespace statewatch::testing

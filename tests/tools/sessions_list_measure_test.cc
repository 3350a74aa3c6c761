// What a sessions_list call costs over 10,000 registered sessions (each with a journal event
// and a transcript message, so every row's activity takes its three reads), metadata only and
// with titles and previews, as a disabled test that prints its figures; it asserts only what
// it read, never a speed:
//
//   build/tests/tools_tests --gtest_also_run_disabled_tests --gtest_filter='ListMeasure.*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "status_matchers.h"
#include "tools/session_tools.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

class ListMeasure : public ToolsTest {};

TEST_F(ListMeasure, DISABLED_TenThousandSessions) {
  const std::string caller = "agent:main:main";
  Register(caller);
  std::vector<EventInput> events;
  for (int i = 0; i < 10000; ++i) {
    std::string key = "agent:main:discord:group:g" + std::to_string(i);
    Register(key);
    events.push_back(Input(key, "human_direct_message"));
    Say(key, "user", boost::json::value("first message of session " + std::to_string(i)));
    if (events.size() == 1000) {
      ASSERT_OK(engine_->RecordMany(events));
      events.clear();
    }
  }
  tools::SessionToolsOptions options;
  options.visibility = tools::Visibility::kAgent;
  for (const char* params :
       {R"({})", R"({"limit": 200})",
        R"({"limit": 200, "includeDerivedTitles": true, "includeLastMessage": true})",
        R"({"activeMinutes": 60, "kinds": "group", "limit": 1})"}) {
    constexpr int kRuns = 5;
    auto start = std::chrono::steady_clock::now();
    std::size_t rows = 0;
    for (int i = 0; i < kRuns; ++i) {
      auto r = tools::SessionsList(*engine_, options, Name(caller), Params(params));
      ASSERT_OK(r);
      rows = r->at("sessions").as_array().size();
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                    .count() /
                kRuns;
    EXPECT_GT(rows, 0u);
    std::printf("sessions_list %s over 10,001 sessions: %.1f ms per call, %zu rows\n", params, ms,
                rows);
  }
}

}  // namespace
}  // namespace statewatch::testing

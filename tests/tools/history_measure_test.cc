// The sessions_history measurement ("sessions_history cost on a 10,000-message
// transcript"), as a disabled test that prints its figures; it asserts only what it read,
// never a speed:
//
//   build/tests/tools_tests --gtest_also_run_disabled_tests --gtest_filter='HistoryMeasure.*'
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/session_history.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

class HistoryMeasure : public ToolsTest {};

TEST_F(HistoryMeasure, DISABLED_TenThousandMessages) {
  const std::string key = "agent:main:main";
  Register(key);
  std::vector<TranscriptMessage> batch;
  for (int i = 0; i < 10000; ++i) {
    TranscriptMessage m;
    m.role = i % 2 ? "assistant" : "user";
    m.content_json = boost::json::serialize(boost::json::value(
        "<think>reasoning " + std::to_string(i) + "</think>message " + std::to_string(i) +
        " with a token sk-abcdefghij0123456789klmnop and some ordinary text to clean"));
    batch.push_back(m);
    if (batch.size() == 1000) {
      ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(key), batch));
      batch.clear();
    }
  }
  tools::SessionToolsOptions options;
  for (const char* params : {R"({"sessionKey":"current"})", R"({"sessionKey":"current","limit":10000})"}) {
    constexpr int kRuns = 20;
    auto start = std::chrono::steady_clock::now();
    std::size_t messages = 0;
    for (int i = 0; i < kRuns; ++i) {
      auto r = tools::SessionsHistory(*engine_, options, Name(key), Params(params));
      ASSERT_OK(r);
      messages = r->at("messages").as_array().size();
    }
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start).count() / kRuns;
    EXPECT_GT(messages, 0u);
    std::printf("sessions_history %s: %.2f ms per call, %zu messages in the answer\n", params, ms,
                messages);
  }
}

}  // namespace
}  // namespace statewatch::testing

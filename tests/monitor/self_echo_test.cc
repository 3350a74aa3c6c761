// Self-echo helpers: whitespace normalisation and transcript texts.
#include "monitor/self_echo.h"

#include <gtest/gtest.h>

#include "monitor_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

using monitor::NormalizeForEcho;
using monitor::TranscriptText;

TEST(SelfEcho, NormalizeCollapsesAndTrims) {
  EXPECT_EQ(NormalizeForEcho("  a \t\n b\r\n\fc  "), "a b c");
  EXPECT_EQ(NormalizeForEcho(""), "");
  EXPECT_EQ(NormalizeForEcho(" \n "), "");
  EXPECT_EQ(NormalizeForEcho("héllo  wörld"), "héllo wörld");
}

TEST(SelfEcho, TranscriptText) {
  EXPECT_EQ(TranscriptText(R"("plain")"), "plain");
  EXPECT_EQ(TranscriptText(R"([{"type":"text","text":"a"},{"type":"image"},"b",)"
                           R"({"type":"tool_result","text":"no"}])"),
            "a\nb");
  EXPECT_EQ(TranscriptText("not json"), "not json");
  EXPECT_EQ(TranscriptText("{}"), "");
}

class RecentOwnTextsTest : public MonitorTest {};

TEST_F(RecentOwnTextsTest, TheMostRecentUserMessagesOnly) {
  std::vector<TranscriptMessage> m;
  for (int i = 0; i < 30; ++i) {
    m.push_back(Msg(i % 3 == 0 ? "user" : "assistant", "\"m" + std::to_string(i) + "\""));
  }
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(kSession), m));
  auto texts = monitor::RecentOwnUserTexts(*engine_, Name(kSession), 4);
  ASSERT_OK(texts);
  EXPECT_EQ(*texts, (std::unordered_set<std::string>{"m27", "m24", "m21", "m18"}));
  texts = monitor::RecentOwnUserTexts(*engine_, Name(kSession), 100);  // fewer exist
  ASSERT_OK(texts);
  EXPECT_EQ(texts->size(), 10u);
  texts = monitor::RecentOwnUserTexts(*engine_, Name("agent:main:empty"), 10);
  ASSERT_OK(texts);
  EXPECT_TRUE(texts->empty());
}

}  // namespace
}  // namespace statewatch::testing

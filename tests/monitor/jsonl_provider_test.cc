// The JSONL provider: the exact line classification documented in monitor/jsonl_provider.h,
// timestamps, and the scan window rules (partial lines, the cap, blocking, shrinking files).
#include "monitor/jsonl_provider.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "monitor_fixture.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

using monitor::ClassifyJsonlLine;
using monitor::JsonlLineClass;
using monitor::JsonlProvider;
using monitor::ParseIso8601Ms;

JsonlLineClass Class(std::string_view line) { return ClassifyJsonlLine(line).cls; }

TEST(JsonlClassify, TextTypedByAPersonIsAHumanTurn) {
  auto c = ClassifyJsonlLine(R"({"type":"user","message":{"role":"user","content":"hi there"}})");
  EXPECT_EQ(c.cls, JsonlLineClass::kHumanTurn);
  EXPECT_EQ(c.turn.text, "hi there");
  EXPECT_FALSE(c.turn.occurred_at_ms.has_value());

  c = ClassifyJsonlLine(R"({"type":"user","message":{"content":[{"type":"text","text":"a"},)"
                        R"({"type":"image","source":{}},{"type":"text","text":"b"}]}})");
  EXPECT_EQ(c.cls, JsonlLineClass::kHumanTurn);  // "role" may be absent
  EXPECT_EQ(c.turn.text, "a\nb");
}

TEST(JsonlClassify, ToolResultsAloneAreNotHuman) {
  EXPECT_EQ(Class(ToolResultLine()), JsonlLineClass::kNotHuman);
  // A tool result with a typed note beside it is a human turn.
  auto c = ClassifyJsonlLine(
      R"({"type":"user","message":{"role":"user","content":[{"type":"tool_result",)"
      R"("tool_use_id":"t","content":"x"},{"type":"text","text":"wait, not that"}]}})");
  EXPECT_EQ(c.cls, JsonlLineClass::kHumanTurn);
  EXPECT_EQ(c.turn.text, "wait, not that");
}

TEST(JsonlClassify, MetaSyntheticAndSidechainLinesAreNotHuman) {
  for (const char* flag :
       {"isMeta", "isSynthetic", "isCompactSummary", "isVisibleInTranscriptOnly", "isSidechain"}) {
    std::string line = std::string(R"({"type":"user",")") + flag +
                       R"(":true,"message":{"role":"user","content":"text"}})";
    EXPECT_EQ(Class(line), JsonlLineClass::kNotHuman) << flag;
    std::string off = std::string(R"({"type":"user",")") + flag +
                      R"(":false,"message":{"role":"user","content":"text"}})";
    EXPECT_EQ(Class(off), JsonlLineClass::kHumanTurn) << flag;
  }
}

TEST(JsonlClassify, EverythingElseIsNotHuman) {
  EXPECT_EQ(Class(AssistantLine("hello")), JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"summary","summary":"x"})"), JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"User","message":{"content":"x"}})"), JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","message":{"role":"assistant","content":"x"}})"),
            JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","message":{"role":"user","content":" \n\t "}})"),
            JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","message":{"role":"user","content":[]}})"),
            JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","message":"just a string"})"), JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","content":"top-level content"})"), JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(R"({"type":"user","message":{"content":[{"type":"text","text":""}]}})"),
            JsonlLineClass::kNotHuman);
  EXPECT_EQ(Class(""), JsonlLineClass::kMalformed);
  EXPECT_EQ(Class("not json"), JsonlLineClass::kMalformed);
  EXPECT_EQ(Class(R"(["type","user"])"), JsonlLineClass::kMalformed);
  EXPECT_EQ(Class(R"({"type":"user","message":{"content":"x"})"), JsonlLineClass::kMalformed);
}

TEST(JsonlClassify, CarriageReturnAndEscapesAreHandled) {
  EXPECT_EQ(Class(UserLine("crlf") + "\r"), JsonlLineClass::kHumanTurn);
  // "user" spelled with escapes is still "user" (the scan's shortcut must not miss it).
  EXPECT_EQ(Class(R"({"type":"\u0075ser","message":{"content":"escaped"}})"),
            JsonlLineClass::kHumanTurn);
}

TEST(JsonlClassify, Timestamps) {
  auto c = ClassifyJsonlLine(UserLine("x", "2025-11-30T00:00:01.5Z"));
  ASSERT_TRUE(c.turn.occurred_at_ms.has_value());
  EXPECT_EQ(*c.turn.occurred_at_ms, 1764460801500);
  c = ClassifyJsonlLine(R"({"type":"user","timestamp":1764460800123,"message":{"content":"x"}})");
  EXPECT_EQ(c.turn.occurred_at_ms, 1764460800123);
  c = ClassifyJsonlLine(R"({"type":"user","timestamp":"yesterday","message":{"content":"x"}})");
  EXPECT_EQ(c.cls, JsonlLineClass::kHumanTurn);
  EXPECT_FALSE(c.turn.occurred_at_ms.has_value());

  EXPECT_EQ(ParseIso8601Ms("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseIso8601Ms("2025-11-30T01:30:00+01:30"), 1764460800000);
  EXPECT_EQ(ParseIso8601Ms("2025-11-29T22:00:00-0200"), 1764460800000);
  EXPECT_EQ(ParseIso8601Ms("2025-11-30 00:00:00.123456z"), 1764460800123);
  EXPECT_EQ(ParseIso8601Ms("2024-02-29T00:00:00Z"), 1709164800000);
  EXPECT_FALSE(ParseIso8601Ms("2025-11-30T00:00:00").has_value());  // no zone
  EXPECT_FALSE(ParseIso8601Ms("2025-13-01T00:00:00Z").has_value());
  EXPECT_FALSE(ParseIso8601Ms("2025-11-30T00:00:00Zjunk").has_value());
  EXPECT_FALSE(ParseIso8601Ms("2025-11-30T00:00:00.Z").has_value());
}

class JsonlScanTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = NewTempDir("jsonl"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  UpstreamLink LinkAt(uint64_t marker) {
    UpstreamLink l;
    l.upstream_kind = "jsonl";
    l.upstream_ref = path_;
    l.marker = marker;
    return l;
  }
  std::string dir_;
  std::string path_ = "";
  JsonlProvider p_;
};

TEST_F(JsonlScanTest, CheckSource) {
  path_ = dir_ + "/t.jsonl";
  EXPECT_EQ(p_.CheckSource(LinkAt(0)).state, monitor::SourceCheck::State::kMissing);
  AppendLine(path_, UserLine("x"));
  auto c = p_.CheckSource(LinkAt(0));
  EXPECT_TRUE(c.exists());
  EXPECT_EQ(c.end_marker, std::filesystem::file_size(path_));
  path_ = dir_;
  EXPECT_EQ(p_.CheckSource(LinkAt(0)).state, monitor::SourceCheck::State::kFailed);
  path_ = dir_ + "/t.jsonl/below-a-file";
  EXPECT_EQ(p_.CheckSource(LinkAt(0)).state, monitor::SourceCheck::State::kMissing);
}

TEST_F(JsonlScanTest, ValidateRef) {
  EXPECT_OK(p_.ValidateRef("/abs/path.jsonl"));
  EXPECT_TRUE(p_.ValidateRef("relative.jsonl").IsInvalidArgument());
  EXPECT_TRUE(p_.ValidateRef("").IsInvalidArgument());
  EXPECT_TRUE(p_.ValidateRef(std::string("/a\0b", 4)).IsInvalidArgument());
}

TEST_F(JsonlScanTest, ScansCompleteLinesWithinTheCap) {
  path_ = dir_ + "/t.jsonl";
  std::string a = UserLine("one"), b = AssistantLine("two"), c = UserLine("three");
  Append(path_, a + "\n" + b + "\n" + c + "\n" + "{\"type\":\"us");
  auto r = p_.Scan(LinkAt(0), 1 << 20);
  ASSERT_OK(r.error);
  ASSERT_EQ(r.human_turns(), 2u);
  EXPECT_EQ(r.turns[0].text, "one");
  EXPECT_EQ(r.turns[1].text, "three");
  EXPECT_EQ(r.units, 3u);
  EXPECT_EQ(r.new_marker, a.size() + b.size() + c.size() + 3);  // the partial line waits
  EXPECT_EQ(r.bytes_scanned, r.new_marker);
  EXPECT_TRUE(r.more_pending);
  EXPECT_FALSE(r.blocked);

  // A cap that ends inside the second line: only the first is consumed.
  r = p_.Scan(LinkAt(0), a.size() + 5);
  EXPECT_EQ(r.new_marker, a.size() + 1);
  EXPECT_EQ(r.human_turns(), 1u);
  EXPECT_FALSE(r.blocked);
  // A line (with its newline) of exactly the cap fits.
  r = p_.Scan(LinkAt(0), a.size() + 1);
  EXPECT_EQ(r.new_marker, a.size() + 1);
  // One byte less: the line at the marker is longer than the cap.
  r = p_.Scan(LinkAt(0), a.size());
  EXPECT_EQ(r.new_marker, 0u);
  EXPECT_TRUE(r.blocked);
  EXPECT_EQ(r.human_turns(), 0u);

  // From the middle: the marker is a byte offset.
  r = p_.Scan(LinkAt(a.size() + 1), 1 << 20);
  ASSERT_EQ(r.human_turns(), 1u);
  EXPECT_EQ(r.turns[0].text, "three");
}

TEST_F(JsonlScanTest, APartialLineAtTheEndIsNotBlocked) {
  path_ = dir_ + "/t.jsonl";
  Append(path_, std::string(100, 'x'));  // shorter than the cap: it may grow
  auto r = p_.Scan(LinkAt(0), 1000);
  EXPECT_FALSE(r.blocked);
  EXPECT_EQ(r.new_marker, 0u);
}

TEST_F(JsonlScanTest, MalformedAndBlankLinesAreConsumedAsNotHuman) {
  path_ = dir_ + "/t.jsonl";
  Append(path_, "\n{\"user\" broken\n\r\n" + UserLine("ok") + "\n");
  auto r = p_.Scan(LinkAt(0), 1 << 20);
  EXPECT_EQ(r.units, 4u);
  EXPECT_EQ(r.malformed, 1u);  // the blank lines never reach the parser
  EXPECT_EQ(r.human_turns(), 1u);
  EXPECT_EQ(r.new_marker, std::filesystem::file_size(path_));
}

TEST_F(JsonlScanTest, ErrorsLeaveTheMarker) {
  path_ = dir_ + "/t.jsonl";
  auto r = p_.Scan(LinkAt(0), 1 << 20);
  EXPECT_FALSE(r.error.ok());  // missing
  AppendLine(path_, UserLine("x"));
  r = p_.Scan(LinkAt(1000), 1 << 20);
  EXPECT_FALSE(r.error.ok());  // shorter than the marker
  EXPECT_NE(r.error.message().find("shorter"), std::string::npos);
  EXPECT_EQ(r.new_marker, 1000u);
  r = p_.Scan(LinkAt(std::filesystem::file_size(path_)), 1 << 20);
  EXPECT_OK(r.error);  // at the end: nothing to do
  EXPECT_EQ(r.units, 0u);
}

}  // namespace
}  // namespace statewatch::testing

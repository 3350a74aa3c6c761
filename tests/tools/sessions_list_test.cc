// sessions_list rows as the reference lists them: displayName, derived titles and previews
// (cleaned, one line, bounded, visible sessions only), run status, visible childSessions,
// derived channels, activity from events / transcripts / deliveries, pagination and the
// 64 KiB budget, the visibility note, and no delivery route in any row.
#include <gtest/gtest.h>

#include "codecs/registry_codec.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

class SessionsListTest : public MainSessionTest {
 protected:
  // The row of `key` in a list answer (an empty object when absent).
  static json::object Row(const json::object& list, const std::string& key) {
    for (const json::value& row : list.at("sessions").as_array()) {
      if (row.at("key") == json::value(key)) return row.as_object();
    }
    return {};
  }
  void Transcript(const std::string& key, std::string_view messages) {
    auto m = tools::TranscriptMessagesFromJson(json::parse(messages));
    ASSERT_OK(m);
    ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(key), *m));
  }
};

TEST_F(SessionsListTest, TitlesAndPreviewsAreCleanedOneLineAndBounded) {
  Transcript(kMain, R"([
      {"role": "system", "content": "be nice"},
      {"role": "user", "content": "<think>hidden</think>  Plan the\n\n migration of the billing database to the new cluster, carefully please"},
      {"role": "assistant", "content": "ok"},
      {"role": "tool", "content": "tool output", "toolName": "bash"},
      {"role": "assistant", "content": [{"type": "text", "text": "Done: key sk-abcdefghijklmnopqrstuvwxyz0123456789 rotated"}]}])");
  json::object row = Row(
      ResultOf("sessions_list", R"({"includeDerivedTitles": true, "includeLastMessage": true})"),
      kMain);
  EXPECT_EQ(Str(row, "derivedTitle"),
            "Plan the migration of the billing database to the new cluste…");
  EXPECT_EQ(Str(row, "lastMessagePreview"), "Done: key [REDACTED] rotated");
  // Without the flags no transcript is read.
  json::object plain = Row(ResultOf("sessions_list", "{}"), kMain);
  EXPECT_FALSE(plain.contains("derivedTitle"));
  EXPECT_FALSE(plain.contains("lastMessagePreview"));
}

TEST_F(SessionsListTest, StatusChildSessionsAndDisplayName) {
  tools::ToolAnswer finished = Call("sessions_spawn", kMain, R"({"task": "a"})");
  std::string done = Str(finished.result, "childSessionKey");
  tools::ToolAnswer running = Call("sessions_spawn", kMain, R"({"task": "b"})");
  tools::ToolAnswer killed = Call("sessions_spawn", kMain, R"({"task": "c"})");
  tools::ToolAnswer late = Call("sessions_spawn", kMain, R"({"task": "d"})");
  ASSERT_OK(messaging_->OnRunFinish(Str(finished.result, "runId"), "ok", ""));
  Call("subagents", kMain,
       R"({"action": "kill", "target": ")" + Str(killed.result, "runId") + R"("})");
  ASSERT_OK(messaging_->OnRunFinish(Str(late.result, "runId"), "timeout", ""));
  SessionRecord named;
  named.name = Name(kMain);
  named.display_name = "Main chat";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(named));

  json::object list = ResultOf("sessions_list", R"({"limit": 50})");
  EXPECT_EQ(Str(Row(list, done), "status"), "done");
  EXPECT_EQ(Str(Row(list, Str(running.result, "childSessionKey")), "status"), "running");
  EXPECT_EQ(Str(Row(list, Str(killed.result, "childSessionKey")), "status"), "killed");
  EXPECT_EQ(Str(Row(list, Str(late.result, "childSessionKey")), "status"), "timeout");
  json::object main_row = Row(list, kMain);
  EXPECT_EQ(Str(main_row, "displayName"), "Main chat");
  EXPECT_FALSE(main_row.contains("status"));  // not a child
  EXPECT_EQ(main_row.at("childSessions").as_array().size(), 4u);

  // Under `self` the children are invisible, and so is the childSessions entry.
  options_messaging_.sessions.visibility = tools::Visibility::kSelf;
  OpenMessaging();
  json::object self = ResultOf("sessions_list", "{}");
  ASSERT_EQ(self.at("sessions").as_array().size(), 1u);
  EXPECT_FALSE(Row(self, kMain).contains("childSessions"));
  EXPECT_EQ(Str(self.at("visibility").as_object(), "mode"), "self");
  EXPECT_EQ(self.at("visibility").at("restricted"), true);
  EXPECT_EQ(Str(self.at("visibility").as_object(), "warning"),
            "Session list visibility is restricted to the current session "
            "(tools.sessions.visibility=self).");
}

TEST_F(SessionsListTest, ChannelIsDerivedWhenTheRegistryHasNone) {
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  const std::pair<std::string, std::string> keys[] = {
      {"agent:main:discord:group:ops", "discord"},
      {"agent:main:slack:channel:c123:thread:1710000000.9999", "slack"},
      {"agent:main:matrix:channel:!room:example.org", "matrix"},
      {"agent:main:cron:nightly", "internal"},
      {"agent:main:hook:deploy", "internal"},
      {"agent:main:node-7", "internal"},
      {"agent:main:telegram:dm:bob", "unknown"}};
  for (const auto& [key, channel] : keys) Register(key);
  json::object list = ResultOf("sessions_list", "{}");
  for (const auto& [key, channel] : keys) {
    EXPECT_EQ(Str(Row(list, key), "channel"), channel) << key;
  }
  SessionRecord r;
  r.name = Name("agent:main:telegram:dm:bob");
  r.channel = "telegram";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  EXPECT_EQ(Str(Row(ResultOf("sessions_list", "{}"), "agent:main:telegram:dm:bob"), "channel"),
            "telegram");
}

// Regression: a nested key's channel was its rest's first segment, so
// `agent:main:agent:plugin:slack:channel:x` was listed with channel "agent" instead of unknown.
TEST_F(SessionsListTest, NestedAgentKeyHasAnUnknownChannel) {
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  const std::string nested = "agent:main:agent:plugin:slack:channel:x";
  Register(nested);
  Register("agent:main:slack:channel:x");
  json::object list = ResultOf("sessions_list", "{}");
  EXPECT_EQ(Str(Row(list, nested), "channel"), "unknown");
  EXPECT_EQ(Str(Row(list, "agent:main:slack:channel:x"), "channel"), "slack");
}

TEST_F(SessionsListTest, ActiveMinutesCountsEventsTranscriptsAndDeliveries) {
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  const std::string a = "agent:main:a", b = "agent:main:b", c = "agent:main:c";
  for (const std::string& key : {a, b, c}) Register(key);
  clock_->Advance(3 * 3600 * 1000);  // every registry updatedAt is now 3 h old
  EXPECT_EQ(ResultOf("sessions_list", R"({"activeMinutes": 60})").at("count"), 0);
  Human(a);                                                 // a recorded event
  Transcript(b, R"([{"role": "user", "content": "hi"}])");  // a transcript append
  Call("sessions_send", kMain,
       R"({"sessionKey": "agent:main:c", "message": "x", "timeoutSeconds": 0})");
  json::object active = ResultOf("sessions_list", R"({"activeMinutes": 60})");
  EXPECT_EQ(active.at("count"), 3) << json::serialize(active);  // a, b and c
  EXPECT_EQ(Row(active, a).at("updatedAt"), kStart + 3 * 3600 * 1000);
}

TEST_F(SessionsListTest, PagesWithOffsetHasMoreAndNextOffset) {
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  for (int i = 0; i < 4; ++i) {
    clock_->Advance(1000);
    Register("agent:main:s" + std::to_string(i));
  }
  json::object first = ResultOf("sessions_list", R"({"limit": 2})");
  EXPECT_EQ(first.at("count"), 2);
  EXPECT_EQ(first.at("hasMore"), true);
  EXPECT_EQ(first.at("nextOffset"), 2);
  EXPECT_EQ(first.at("limitApplied"), 2);
  EXPECT_EQ(Str(first.at("sessions").as_array()[0].as_object(), "key"), "agent:main:s3");
  json::object second = ResultOf("sessions_list", R"({"limit": 2, "offset": 2})");
  EXPECT_EQ(Str(second.at("sessions").as_array()[0].as_object(), "key"), "agent:main:s1");
  EXPECT_EQ(second.at("nextOffset"), 4);
  json::object last = ResultOf("sessions_list", R"({"limit": 2, "offset": 4})");
  EXPECT_EQ(last.at("count"), 1);  // the caller, oldest
  EXPECT_EQ(last.at("hasMore"), false);
  EXPECT_FALSE(last.contains("nextOffset"));
  EXPECT_EQ(ResultOf("sessions_list", R"({"limit": 5000})").at("limitApplied"),
            tools::kMaxListLimit);
  EXPECT_EQ(CallError("sessions_list", kMain, R"({"offset": -1})").message(),
            "offset must be a non-negative integer");
}

TEST_F(SessionsListTest, TheBudgetDropsPreviewsFirstThenRows) {
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  std::string big(3500, 'x');
  for (int i = 0; i < 30; ++i) {
    std::string key = "agent:main:s" + std::to_string(i);
    Register(key);
    Transcript(key, R"([{"role": "user", "content": ")" + big + R"("}])");
  }
  // 31 rows of 20 messages of 3.5 KB each cannot fit: the messages go, the rows stay.
  json::object trimmed =
      ResultOf("sessions_list", R"({"messageLimit": 20, "includeLastMessage": true})");
  EXPECT_EQ(trimmed.at("enrichmentOmitted"), true);
  EXPECT_EQ(trimmed.at("count"), 31);
  EXPECT_FALSE(trimmed.contains("truncationReason"));
  for (const json::value& row : trimmed.at("sessions").as_array()) {
    EXPECT_FALSE(row.as_object().contains("messages"));
    EXPECT_FALSE(row.as_object().contains("lastMessagePreview"));
  }
  // Rows too big for the budget by themselves: the page ends early and says where to go on.
  std::string label(4000, 'l');
  for (int i = 0; i < 30; ++i) {
    SessionRecord r;
    r.name = Name("agent:main:s" + std::to_string(i));
    r.label = label;
    ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  }
  json::object cut = ResultOf("sessions_list", R"({"limit": 200})");
  EXPECT_EQ(Str(cut, "truncationReason"), "byte-limit");
  EXPECT_EQ(cut.at("hasMore"), true);
  int64_t count = cut.at("count").to_number<int64_t>();
  EXPECT_LT(count, 31);
  EXPECT_EQ(cut.at("nextOffset"), count);
  EXPECT_LE(json::serialize(cut).size(), tools::kListResultBudgetBytes);
}

TEST_F(SessionsListTest, RoutesNeverAppearInRows) {
  ASSERT_OK(SessionTables(*engine_).UpsertSession(
      WithLastRoute(kMain, DeliveryRoute{"telegram", "42", "bot", "7"})));
  std::string text = json::serialize(ResultOf("sessions_list", "{}"));
  for (const char* field : {"lastChannel", "lastTo", "lastAccountId", "lastThreadId"}) {
    EXPECT_EQ(text.find(field), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace statewatch::testing

// session_status as the /status card: model and its override, runtime, thinking, token usage
// with transcript backfill, timestamps and age, the active run and background work, session
// ids as sessionKey, and the refusals (unknown parameters, unknown sessions).
#include <gtest/gtest.h>

#include "codecs/registry_codec.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/session_history.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

class SessionStatusTest : public MessagingTest {
 protected:
  void SetUp() override {
    MessagingTest::SetUp();
    Register(kMain, std::nullopt, false, std::nullopt, /*session_id=*/"sid-main");
  }
  void Put(const std::string& key, std::string_view fields) {
    auto r = tools::SessionRecordFromJson(json::parse(fields), Name(key));
    ASSERT_OK(r);
    ASSERT_OK(SessionTables(*engine_).UpsertSession(*r));
  }
};

TEST_F(SessionStatusTest, CardShowsModelRuntimeThinkingUsageAndTimes) {
  Put(kMain, R"({"model": "opus", "thinking": "high", "contextTokens": 200000,
                 "totalTokens": 50000, "inputTokens": 40000, "outputTokens": 10000,
                 "cacheReadTokens": 3000, "cacheWriteTokens": 500, "displayName": "Main",
                 "lastChannel": "telegram", "lastTo": "42"})");
  clock_->Advance(90000);
  json::object card = ResultOf("session_status", "{}");
  EXPECT_EQ(Str(card, "sessionKey"), kMain);
  EXPECT_EQ(Str(card, "sessionId"), "sid-main");
  EXPECT_EQ(Str(card, "model"), "opus");
  EXPECT_EQ(card.at("modelOverride"), false);
  EXPECT_EQ(Str(card, "thinking"), "high");
  EXPECT_EQ(Str(card, "displayName"), "Main");
  const json::object& usage = card.at("usage").as_object();
  EXPECT_EQ(usage.at("inputTokens"), 40000);
  EXPECT_EQ(usage.at("outputTokens"), 10000);
  EXPECT_EQ(usage.at("totalTokens"), 50000);
  EXPECT_EQ(usage.at("cacheReadTokens"), 3000);
  EXPECT_EQ(usage.at("cacheWriteTokens"), 500);
  EXPECT_EQ(usage.at("contextTokens"), 200000);
  EXPECT_EQ(usage.at("contextPercent"), 25);
  EXPECT_EQ(Str(usage, "source"), "registry");
  EXPECT_EQ(card.at("createdAt"), kStart);
  EXPECT_EQ(card.at("updatedAt"), kStart);
  EXPECT_EQ(card.at("ageMs"), 90000);
  EXPECT_EQ(card.at("stateVersion"), 0);
  EXPECT_TRUE(card.at("backgroundTasks").as_array().empty());
  EXPECT_FALSE(card.contains("activeRun"));
  // The delivery route is the gateway's, not the agent's.
  EXPECT_FALSE(card.contains("lastChannel"));
  EXPECT_FALSE(card.contains("lastTo"));
}

// Regression: {"model": "claude-x"} answered 200 and changed nothing, so an agent believed
// it had switched models.
TEST_F(SessionStatusTest, ModelSetsAPerSessionOverrideAndDefaultClearsIt) {
  Put(kMain, R"({"model": "opus"})");
  json::object card = ResultOf("session_status", R"({"model": "claude-x"})");
  EXPECT_EQ(Str(card, "model"), "claude-x");
  EXPECT_EQ(card.at("modelOverride"), true);
  EXPECT_EQ(Str(card, "defaultModel"), "opus");
  EXPECT_EQ((*SessionTablesView(*engine_).GetSession(Name(kMain)))->model_override, "claude-x");
  EXPECT_EQ(Str(ResultOf("session_status", "{}"), "model"), "claude-x");  // it stays

  card = ResultOf("session_status", R"({"model": "Default"})");
  EXPECT_EQ(Str(card, "model"), "opus");
  EXPECT_EQ(card.at("modelOverride"), false);
  EXPECT_FALSE((*SessionTablesView(*engine_).GetSession(Name(kMain)))->model_override);
}

TEST_F(SessionStatusTest, SparseCountersAreBackfilledFromTheLastUsageInTheTranscript) {
  Put(kMain, R"({"contextTokens": 1000, "inputTokens": 7})");
  auto messages = tools::TranscriptMessagesFromJson(json::parse(R"([
      {"role": "user", "content": "q"},
      {"role": "assistant", "content": "a1", "usage": {"input": 100, "output": 20}},
      {"role": "assistant", "content": "a2",
       "usage": {"input": 300, "output": 50, "cacheRead": 9, "total": 400}},
      {"role": "user", "content": "thanks"}])"));
  ASSERT_OK(messages);
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(kMain), *messages));
  const json::object usage = ResultOf("session_status", "{}").at("usage").as_object();
  EXPECT_EQ(usage.at("inputTokens"), 7);  // the registry's own counter wins
  EXPECT_EQ(usage.at("outputTokens"), 50);
  EXPECT_EQ(usage.at("totalTokens"), 400);
  EXPECT_EQ(usage.at("cacheReadTokens"), 9);
  EXPECT_EQ(usage.at("contextPercent"), 40);
  EXPECT_EQ(Str(usage, "source"), "registry+transcript");
}

TEST_F(SessionStatusTest, ActiveRunAndBackgroundTasks) {
  tools::ToolAnswer spawned =
      Call("sessions_spawn", kMain, R"({"task": "dig", "label": "digger", "runtime": "acp"})");
  std::string run = Str(spawned.result, "runId");
  std::string child = Str(spawned.result, "childSessionKey");
  json::array tasks = ResultOf("session_status", "{}").at("backgroundTasks").as_array();
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].at("runId"), json::value(run));
  EXPECT_EQ(tasks[0].at("label"), "digger");
  EXPECT_EQ(tasks[0].at("runtime"), "acp");
  EXPECT_EQ(tasks[0].at("startedAt"), kStart);

  json::object card = ResultOf("session_status", R"({"sessionKey": ")" + child + R"("})");
  ASSERT_TRUE(card.contains("activeRun")) << json::serialize(card);
  EXPECT_EQ(card.at("activeRun").at("runId"), json::value(run));
  EXPECT_EQ(card.at("activeRun").at("status"), "running");
  EXPECT_EQ(card.at("activeRun").at("requesterSessionKey"), kMain);
  EXPECT_EQ(Str(card, "runtime"), "acp");

  ASSERT_OK(messaging_->OnRunFinish(run, "ok", "found it"));
  EXPECT_TRUE(ResultOf("session_status", "{}").at("backgroundTasks").as_array().empty());
  EXPECT_FALSE(
      ResultOf("session_status", R"({"sessionKey": ")" + child + R"("})").contains("activeRun"));
}

TEST_F(SessionStatusTest, SessionKeyTakesASessionIdLikeHistory) {
  const std::string kid = "agent:main:subagent:k1";
  Register(kid, kMain, false, std::nullopt, /*session_id=*/"sid-kid");
  EXPECT_EQ(Str(ResultOf("session_status", R"({"sessionKey": "sid-kid"})"), "sessionKey"), kid);
  EXPECT_EQ(CallError("session_status", kMain, R"({"sessionKey": "sid-nobody"})").message(),
            "Unknown sessionKey: sid-nobody");
}

// Regression: an unknown key outside the caller's tree answered "Unknown sessionKey", telling
// the caller which sessions of other trees exist; it gets the visibility refusal first.
TEST_F(SessionStatusTest, AnUnknownKeyOutsideTheTreeIsRefusedAsNotVisible) {
  Status refused = CallError("session_status", kMain, R"({"sessionKey": "agent:main:nope"})");
  EXPECT_EQ(refused.message(),
            "Session status visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree).");
  EXPECT_FALSE(refused.IsNotFound());
  // Where the caller may see the key (visibility=agent), the unknown key is named.
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  Status unknown = CallError("session_status", kMain, R"({"sessionKey": "agent:main:nope"})");
  EXPECT_TRUE(unknown.IsNotFound());
  EXPECT_EQ(unknown.message(), "Unknown sessionKey: agent:main:nope");
}

// Regression: unknown parameters were ignored, so a misspelt option silently did nothing.
TEST_F(SessionStatusTest, UnknownParametersAreRefusedOnEveryTool) {
  EXPECT_EQ(CallError("session_status", kMain, R"({"modle": "x"})").message(),
            "Unknown parameter for session_status: modle (session_status takes sessionKey, "
            "changesSince, model, asOf)");
  const std::pair<const char*, const char*> cases[] = {
      {"sessions_list", "sessions_list"},   {"sessions_history", "sessions_history"},
      {"sessions_send", "sessions_send"},   {"sessions_spawn", "sessions_spawn"},
      {"sessions_yield", "sessions_yield"}, {"subagents", "subagents"}};
  for (const auto& [tool, name] : cases) {
    statewatch::Status s = CallError(tool, kMain, R"({"bogus": 1})");
    EXPECT_TRUE(s.IsInvalidArgument()) << tool;
    EXPECT_EQ(s.message().rfind(std::string("Unknown parameter for ") + name + ": bogus (", 0), 0u)
        << s.message();
  }
}

}  // namespace
}  // namespace statewatch::testing

// What a spawn hands the gateway and what its end hands back: the task delivery's options and
// route, context fork, thread-bound announcements, the journaled outcome summaries, the
// combined announcement after sessions_yield, and the transcript provenance of deliveries.
#include <gtest/gtest.h>

#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/session_history.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

class SpawnDeliveryTest : public MessagingTest {
 protected:
  void SetUp() override {
    MessagingTest::SetUp();
    SessionRecord main = WithLastRoute(kMain, DeliveryRoute{"discord", "channel-1", "bot-a", ""});
    main.channel = "discord";
    ASSERT_OK(SessionTables(*engine_).UpsertSession(main));
  }
  std::vector<TranscriptMessage> TranscriptOf(const std::string& key) {
    auto t = SessionTablesView(*engine_).RecentTranscript(Name(key), 100);
    EXPECT_OK(t);
    return t.ok() ? *t : std::vector<TranscriptMessage>{};
  }
};

TEST_F(SpawnDeliveryTest, TheTaskCarriesEveryOptionAndTheRequestersRoute) {
  auto [run, child] = Spawn(kMain, R"({"task": "review the PR", "label": "reviewer",
                                      "runtime": "acp", "model": "opus", "thinking": "high",
                                      "thread": true, "sandbox": "require",
                                      "context": "isolated"})");
  auto task = Take(child);
  ASSERT_TRUE(task);
  json::object d = tools::DeliveryToJson(*task);
  EXPECT_EQ(Str(d, "type"), "task");
  EXPECT_EQ(Str(d, "runId"), run);
  EXPECT_EQ(json::serialize(d.at("options")),
            R"({"runtime":"acp","model":"opus","thinking":"high","thread":true,)"
            R"("sandbox":"require","context":"isolated","label":"reviewer","depth":1})");
  EXPECT_EQ(json::serialize(d.at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a"})");
  EXPECT_EQ(Str(d.at("provenance").as_object(), "sourceSessionKey"), kMain);
  EXPECT_EQ(Str(d.at("provenance").as_object(), "sourceChannel"), "discord");
  EXPECT_FALSE(d.contains("marker"));  // a task is the spawner's instruction, not a message

  // The child's registry entry and run keep the options too.
  SessionRecord rec = **SessionTablesView(*engine_).GetSession(Name(child));
  EXPECT_EQ(rec.runtime, "acp");
  EXPECT_EQ(rec.thinking, "high");
  EXPECT_EQ(rec.model, "opus");
  EXPECT_EQ(rec.sandboxed, true);
  RunRecord stored = **SessionTablesView(*engine_).GetRun(run);
  ASSERT_TRUE(stored.spawn);
  EXPECT_TRUE(stored.spawn->thread);
  EXPECT_EQ(stored.requester_route.to, "channel-1");
}

TEST_F(SpawnDeliveryTest, ForkCopiesTheRequesterTranscriptBeforeTheTask) {
  auto messages = tools::TranscriptMessagesFromJson(json::parse(
      R"([{"role": "user", "content": "context one"}, {"role": "assistant", "content": "two"}])"));
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name(kMain), *messages));
  auto [forked_run, forked] = Spawn(kMain, R"({"task": "continue", "context": "fork"})");
  auto [isolated_run, isolated] = Spawn(kMain, R"({"task": "start fresh"})");

  std::vector<TranscriptMessage> f = TranscriptOf(forked);
  ASSERT_EQ(f.size(), 3u);
  EXPECT_EQ(f[0].content_json, R"("context one")");
  EXPECT_EQ(f[1].role, "assistant");
  EXPECT_EQ(f[2].content_json, R"("continue")");  // the task comes last
  ASSERT_TRUE(f[2].provenance);
  EXPECT_EQ(f[2].provenance->source_tool, "sessions_spawn");
  EXPECT_EQ(f[2].provenance->run_id, forked_run);

  std::vector<TranscriptMessage> i = TranscriptOf(isolated);
  ASSERT_EQ(i.size(), 1u);  // isolated: only the task
  EXPECT_EQ(i[0].content_json, R"("start fresh")");
}

TEST_F(SpawnDeliveryTest, AnAnnouncementGoesToTheRequesterRouteOrTheBoundThread) {
  auto [plain_run, plain] = Spawn(kMain, R"({"task": "a"})");
  auto [thread_run, threaded] = Spawn(kMain, R"({"task": "b", "thread": true})");
  // The gateway bound the thread-bound child to a thread it opened in the requester's channel.
  ASSERT_OK(SessionTables(*engine_).UpsertSession(
      WithLastRoute(threaded, DeliveryRoute{"discord", "channel-1", "", "thread-77"})));

  tools::RunUpdate u1 = *messaging_->OnRunFinish(plain_run, "ok", "A");
  tools::RunUpdate u2 = *messaging_->OnRunFinish(thread_run, "ok", "B");
  ASSERT_EQ(u1.deliveries.size(), 1u);
  ASSERT_EQ(u2.deliveries.size(), 1u);
  EXPECT_EQ(json::serialize(tools::DeliveryToJson(u1.deliveries[0]).at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a"})");
  EXPECT_EQ(json::serialize(tools::DeliveryToJson(u2.deliveries[0]).at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a","threadId":"thread-77"})");
  // The announcement is inter-session data in the requester's transcript as well.
  std::vector<TranscriptMessage> t = TranscriptOf(kMain);
  ASSERT_EQ(t.size(), 2u);
  ASSERT_TRUE(t[1].provenance);
  EXPECT_EQ(t[1].provenance->source_session_key, threaded);
  EXPECT_EQ(t[1].provenance->source_tool, "sessions_spawn");
  json::object marked = tools::DeliveryToJson(u2.deliveries[0]);
  EXPECT_EQ(Str(marked, "marker"), "[Inter-session message] sourceSession=" + threaded +
                                       " sourceChannel=discord sourceTool=sessions_spawn "
                                       "isUser=false");
}

// Regression: a kill and a timed-out run journaled run_failed with the summary
// "child run failed"; the reference writes "child run cancelled" / "child run timed out".
TEST_F(SpawnDeliveryTest, RunFailedSummariesNameTheOutcome) {
  auto [killed_run, killed] = Spawn(kMain, R"({"task": "a"})");
  auto [late_run, late] = Spawn(kMain, R"({"task": "b"})");
  auto [broken_run, broken] = Spawn(kMain, R"({"task": "c"})");
  Call("subagents", kMain, R"({"action": "kill", "target": ")" + killed_run + R"("})");
  ASSERT_OK(messaging_->OnRunFinish(late_run, "timeout", ""));
  ASSERT_OK(messaging_->OnRunFinish(broken_run, "error", "boom"));
  const std::pair<std::string, std::string> expected[] = {
      {killed, "child run cancelled"}, {late, "child run timed out"}, {broken, "child run failed"}};
  for (const auto& [key, summary] : expected) {
    std::vector<Event> events = Journal(key);
    ASSERT_EQ(events.size(), 2u) << key;
    EXPECT_EQ(events[1].kind, "run_failed");
    EXPECT_EQ(events[1].summary, summary);
  }
}

// Regression: the combined announcement after sessions_yield had runId "" and an empty
// provenance.sourceSessionKey.
TEST_F(SpawnDeliveryTest, TheCombinedYieldAnnouncementNamesTheRunThatEndedLast) {
  auto [first_run, first] = Spawn(kMain, R"({"task": "a"})");
  auto [second_run, second] = Spawn(kMain, R"({"task": "b"})");
  Call("sessions_yield", kMain, "{}");
  ASSERT_OK(messaging_->OnRunFinish(first_run, "ok", "one"));
  tools::RunUpdate last = *messaging_->OnRunFinish(second_run, "ok", "two");
  ASSERT_EQ(last.deliveries.size(), 1u);
  json::object d = tools::DeliveryToJson(last.deliveries[0]);
  EXPECT_EQ(Str(d, "runId"), second_run);
  EXPECT_EQ(Str(d.at("provenance").as_object(), "sourceSessionKey"), second);
  EXPECT_EQ(Str(d.at("provenance").as_object(), "sourceTool"), "sessions_yield");
  EXPECT_EQ(json::serialize(d.at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a"})");
}

// Regression: a sessions_send message had no size cap (3 MiB went through); both a message
// and a task are now refused past 80 KiB, the history view's bound.
TEST_F(SpawnDeliveryTest, MessagesAndTasksAreCapped) {
  std::string big(tools::kMaxMessageBytes + 1, 'x');
  EXPECT_EQ(
      CallError("sessions_send", kMain, R"({"sessionKey": "current", "message": ")" + big + R"("})")
          .message(),
      "message is too large (81921 bytes, max 81920)");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": ")" + big + R"("})").message(),
            "task is too large (81921 bytes, max 81920)");
  big.pop_back();
  EXPECT_EQ(
      Str(Call("sessions_send", kMain,
               R"({"sessionKey": "current", "message": ")" + big + R"(", "timeoutSeconds": 0})")
              .result,
          "status"),
      "accepted");
}

TEST_F(SpawnDeliveryTest, ASentMessageIsMarkedAndKeptWithItsProvenance) {
  const std::string bob = "agent:main:telegram:dm:bob";
  Register(bob);
  options_messaging_.sessions.visibility = tools::Visibility::kAgent;
  OpenMessaging();
  Call("sessions_send", kMain,
       R"({"sessionKey": ")" + bob + R"(", "message": "ship it?", "timeoutSeconds": 0})");
  auto d = Take(bob);
  ASSERT_TRUE(d);
  json::object feed = tools::DeliveryToJson(*d);
  const std::string marker =
      "[Inter-session message] sourceSession=agent:main:main sourceChannel=discord "
      "sourceTool=sessions_send isUser=false";
  EXPECT_EQ(Str(feed, "marker"), marker);
  EXPECT_EQ(Str(feed, "prompt"), marker + "\nship it?");
  std::vector<TranscriptMessage> t = TranscriptOf(bob);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].role, "user");
  EXPECT_EQ(t[0].content_json, R"("ship it?")");
  ASSERT_TRUE(t[0].provenance);
  EXPECT_EQ(t[0].provenance->source_session_key, kMain);
  EXPECT_EQ(t[0].provenance->source_channel, "discord");
  // sessions_history shows where it came from.
  json::object history =
      Call("sessions_history", kMain, R"({"sessionKey": ")" + bob + R"("})").result;
  const json::object& m = history.at("messages").as_array()[0].as_object();
  EXPECT_EQ(json::serialize(m.at("provenance")),
            R"({"kind":"inter_session","sourceSessionKey":"agent:main:main",)"
            R"("sourceTool":"sessions_send","sourceChannel":"discord","runId":")" +
                d->run_id + R"(","isUser":false})");
}

}  // namespace
}  // namespace statewatch::testing

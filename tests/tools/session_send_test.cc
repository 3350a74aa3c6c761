// sessions_send end to end on a real engine, with simulated agents playing the gateway:
// waiting for a reply, fire and forget, timeouts, the ping-pong loop and REPLY_SKIP,
// watch: true, refusals, and a restart with a send still waiting.
#include <gtest/gtest.h>

#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;
using tools::Visibility;

constexpr char kKid[] = "agent:main:subagent:kid";
constexpr char kOther[] = "agent:main:other";

class SessionSendTest : public MessagingTest {
 protected:
  void SetUp() override {
    options_messaging_.max_ping_pong_turns = 0;
    MessagingTest::SetUp();
    Register(kMain);
    Register(kKid, std::string(kMain), false, "kid");
    Register(kOther, std::nullopt, false, "other");
    Register("agent:ops:main");
  }
  void UseVisibility(Visibility v, bool a2a = false, int turns = 0) {
    options_messaging_.sessions.visibility = v;
    options_messaging_.sessions.agent_to_agent.enabled = a2a;
    options_messaging_.max_ping_pong_turns = turns;
    OpenMessaging();
  }
};

TEST_F(SessionSendTest, WaitsForTheReplyAndAnswersWithIt) {
  std::optional<json::object> completed;
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "2+2?"})",
                             [&](const json::object& r) { completed = r; });
  ASSERT_TRUE(a.pending);
  EXPECT_EQ(a.deadline_ms, kStart + 30000);
  EXPECT_EQ(messaging_->NextDeadlineMs(), kStart + 30000);
  EXPECT_FALSE(completed);

  // The target's agent sees the message as inter-session data with its provenance.
  auto d = Take(kKid);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->type, "message");
  EXPECT_EQ(d->text, "2+2?");
  EXPECT_EQ(d->run_id, a.run_id);
  EXPECT_EQ(d->source_session_key, kMain);
  EXPECT_EQ(d->source_tool, "sessions_send");
  json::object feed = tools::DeliveryToJson(*d);
  EXPECT_EQ(
      json::serialize(feed.at("provenance")),
      R"({"kind":"inter_session","sourceSessionKey":"agent:main:main","sourceTool":"sessions_send","isUser":false})");
  ASSERT_EQ(published_.size(), 1u);
  EXPECT_EQ(published_[0].id, d->id);

  clock_->Advance(1200);
  tools::RunUpdate u = Reply(a.run_id, "4");
  EXPECT_TRUE(u.applied);
  ASSERT_TRUE(u.call_result);
  EXPECT_EQ(json::serialize(*u.call_result),
            R"({"runId":")" + a.run_id +
                R"(","status":"ok","reply":"4","sessionKey":"agent:main:subagent:kid"})");
  ASSERT_TRUE(completed);
  EXPECT_EQ(*completed, *u.call_result);
  EXPECT_TRUE(u.deliveries.empty());  // maxPingPongTurns = 0: no reply-back loop
  EXPECT_FALSE(messaging_->NextDeadlineMs());

  auto run = SessionTablesView(*engine_).GetRun(a.run_id);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ((*run)->kind, "send");
  EXPECT_EQ((*run)->status, "ok");
  EXPECT_EQ((*run)->reply, "4");
  EXPECT_EQ((*run)->ended_at_ms, kStart + 1200);
  EXPECT_FALSE(Reply(a.run_id, "again").applied);  // a late second reply changes nothing
}

TEST_F(SessionSendTest, FireAndForgetAnswersAcceptedAtOnce) {
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "fyi",
                                 "timeoutSeconds": 0})");
  EXPECT_FALSE(a.pending);
  EXPECT_EQ(json::serialize(a.result),
            R"({"runId":")" + a.run_id +
                R"(","status":"accepted","sessionKey":"agent:main:subagent:kid"})");
  EXPECT_EQ(For(kKid).size(), 1u);
  EXPECT_FALSE(messaging_->NextDeadlineMs());  // nothing waits
  EXPECT_EQ((*SessionTablesView(*engine_).GetRun(a.run_id))->status, "running");
}

TEST_F(SessionSendTest, NoReplyTimesOutAtTheDeadline) {
  std::optional<json::object> completed;
  tools::ToolAnswer a =
      Call("sessions_send", kMain, R"({"label": "kid", "message": "hello?", "timeoutSeconds": 5})",
           [&](const json::object& r) { completed = r; });
  ASSERT_TRUE(a.pending);
  clock_->Advance(4999);
  EXPECT_TRUE(messaging_->ExpireDue().empty());
  clock_->Advance(1);
  auto expired = messaging_->ExpireDue();
  ASSERT_EQ(expired.size(), 1u);
  ASSERT_TRUE(completed);
  EXPECT_EQ(Str(*completed, "status"), "timeout");
  EXPECT_EQ(Str(*completed, "error"), "No reply from agent:main:subagent:kid within 5 s.");
  EXPECT_EQ((*SessionTablesView(*engine_).GetRun(a.run_id))->status, "timeout");
  // The reply that comes too late is not applied; the requester already has its answer.
  tools::RunUpdate late = Reply(a.run_id, "sorry, late");
  EXPECT_FALSE(late.applied);
  EXPECT_FALSE(late.call_result);
  EXPECT_EQ(late.status, "timeout");
}

TEST_F(SessionSendTest, ReplyBackLoopRunsExactlyTheConfiguredTurns) {
  UseVisibility(Visibility::kTree, false, /*turns=*/3);
  tools::ToolAnswer a =
      Call("sessions_send", kMain, R"({"sessionKey": "agent:main:subagent:kid", "message": "m0"})");
  ASSERT_TRUE(a.pending);
  // Simulated agents: whoever has a delivery for this run replies to it, until none is left.
  std::vector<std::string> path;
  int replies = 0;
  std::optional<json::object> answer;
  for (int guard = 0; guard < 50; ++guard) {
    auto to_kid = Take(kKid);
    auto to_main = to_kid ? std::nullopt : Take(kMain);
    auto d = to_kid ? to_kid : to_main;
    if (!d) break;
    path.push_back(d->session_key == kKid ? "kid" : "main");
    EXPECT_EQ(d->source_session_key, d->session_key == kKid ? kMain : kKid);
    tools::RunUpdate u = Reply(d->run_id, "r" + std::to_string(++replies));
    if (u.call_result) answer = u.call_result;
  }
  // The message, then 3 reply-back deliveries alternating; the reply to the third ends it.
  EXPECT_EQ(path, (std::vector<std::string>{"kid", "main", "kid", "main"}));
  EXPECT_EQ(replies, 4);
  ASSERT_TRUE(answer);
  EXPECT_EQ(Str(*answer, "reply"), "r1");  // the call answers with the target's reply
  SendRunState state =
      *(*SessionTablesView(*engine_).GetRun(a.run_id))->send;  // the SendState table
  EXPECT_EQ(state.phase, SendRunState::Phase::kDone);
  EXPECT_EQ(state.outcome, "turns");
  EXPECT_EQ(state.last_reply, "r4");
  EXPECT_FALSE(messaging_->NextDeadlineMs());
}

TEST_F(SessionSendTest, ExactReplySkipStopsTheLoop) {
  UseVisibility(Visibility::kTree, false, /*turns=*/5);
  tools::ToolAnswer a =
      Call("sessions_send", kMain, R"({"sessionKey": "agent:main:subagent:kid", "message": "hi"})");
  ASSERT_TRUE(Take(kKid));
  tools::RunUpdate first = Reply(a.run_id, "hello back");
  ASSERT_EQ(first.deliveries.size(), 1u);
  EXPECT_EQ(first.deliveries[0].session_key, kMain);
  ASSERT_TRUE(Take(kMain));
  tools::RunUpdate second = Reply(a.run_id, "REPLY_SKIP is what I would say");  // not exact
  ASSERT_EQ(second.deliveries.size(), 1u);
  ASSERT_TRUE(Take(kKid));
  tools::RunUpdate skip = Reply(a.run_id, "  REPLY_SKIP\n");
  EXPECT_TRUE(skip.applied);
  EXPECT_TRUE(skip.deliveries.empty());
  EXPECT_TRUE(Deliveries().empty());
  SendRunState state = *(*SessionTablesView(*engine_).GetRun(a.run_id))->send;
  EXPECT_EQ(state.outcome, "skip");
  EXPECT_EQ(state.turn, 2);
}

TEST_F(SessionSendTest, PingPongTurnTimesOutQuietly) {
  UseVisibility(Visibility::kTree, false, /*turns=*/5);
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "hi",
                                 "timeoutSeconds": 10})");
  clock_->Advance(3000);
  Reply(a.run_id, "yo");  // the loop starts; its first turn waits 10 s from now
  EXPECT_EQ(messaging_->NextDeadlineMs(), kStart + 13000);
  clock_->Advance(9999);
  EXPECT_TRUE(messaging_->ExpireDue().empty());
  clock_->Advance(1);
  auto expired = messaging_->ExpireDue();
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_FALSE(expired[0].call_result);  // the call was answered long ago
  EXPECT_EQ((*SessionTablesView(*engine_).GetRun(a.run_id))->status, "ok");
}

TEST_F(SessionSendTest, WatchTrueThenAHumanChangeGivesOneNotice) {
  UseVisibility(Visibility::kAgent);
  Human(kOther);  // prior history never produces a notice
  Sequence head = *engine_->StateVersion(Name(kOther));
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:other", "message": "take over",
                                 "timeoutSeconds": 0, "watch": true})");
  EXPECT_EQ(a.result.at("watched"), true);
  EXPECT_TRUE(Pending(kMain).empty());
  Human(kOther);
  Human(kOther);
  auto notices = Pending(kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].text, NoticeText(kOther, head));

  // Without watch there is no `watched`; a send to oneself is dispatched but not watched.
  tools::ToolAnswer plain = Call("sessions_send", kMain,
                                 R"({"sessionKey": "agent:main:other", "message": "x",
                                     "timeoutSeconds": 0})");
  EXPECT_FALSE(plain.result.contains("watched"));
  tools::ToolAnswer self = Call("sessions_send", kMain,
                                R"({"sessionKey": "current", "message": "note to self",
                                    "timeoutSeconds": 0, "watch": true})");
  EXPECT_EQ(self.result.at("watched"), false);
}

TEST_F(SessionSendTest, RefusalsAreExact) {
  EXPECT_EQ(CallError("sessions_send", kMain, R"({"message": "x"})").message(),
            "Either sessionKey or label is required");
  EXPECT_EQ(
      CallError("sessions_send", kMain,
                R"({"sessionKey": "agent:main:slack:channel:c1:thread:171.99", "message": "x"})")
          .message(),
      "sessions_send cannot target a thread session for inter-agent coordination. Use the "
      "parent channel session key instead.");
  EXPECT_EQ(CallError("sessions_send", kMain,
                      R"({"sessionKey": "agent:main:other", "message": "x", "timeoutSeconds": -1})")
                .message(),
            "timeoutSeconds must be an integer from 0 to 86400 (got -1)");
  EXPECT_EQ(
      CallError("sessions_send", kMain, R"({"sessionKey": "agent:main:nope", "message": "x"})")
          .message(),
      "Session not found: agent:main:nope (use the full sessionKey from sessions_list)");
  EXPECT_EQ(CallError("sessions_send", kMain, R"({"sessionKey": "agent:main:other"})").message(),
            "message is required");

  // Visibility refusals are the tool's result, status forbidden, and dispatch nothing.
  tools::ToolAnswer forbidden = Call("sessions_send", kMain,
                                     R"({"sessionKey": "agent:main:other", "message": "x",
                                         "watch": true})");
  EXPECT_EQ(Str(forbidden.result, "status"), "forbidden");
  EXPECT_EQ(Str(forbidden.result, "error"),
            "Session send visibility is restricted to the current session tree "
            "(tools.sessions.visibility=tree).");
  EXPECT_EQ(Str(forbidden.result, "sessionKey"), kOther);
  EXPECT_FALSE(forbidden.result.contains("watched"));
  tools::ToolAnswer cross =
      Call("sessions_send", kMain, R"({"agentId": "ops", "message": "x", "timeoutSeconds": 0})");
  EXPECT_EQ(Str(cross.result, "error"),
            "Session send visibility is restricted. Set tools.sessions.visibility=all to allow "
            "cross-agent access.");
  EXPECT_TRUE(Deliveries().empty());
}

TEST_F(SessionSendTest, AgentIdAloneTargetsThatAgentsMainSession) {
  UseVisibility(Visibility::kAll, /*a2a=*/true);
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"agentId": "ops", "message": "status?", "timeoutSeconds": 0})");
  EXPECT_EQ(Str(a.result, "status"), "accepted");
  EXPECT_EQ(Str(a.result, "sessionKey"), "agent:ops:main");
  auto ops = Deliveries("ops");
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].session_key, "agent:ops:main");
}

TEST_F(SessionSendTest, AnInstantReplyCompletesTheCallBeforeSendReturns) {
  // A gateway on another thread may answer before Send returns: the completion is armed
  // before the delivery exists, so it still fires exactly once.
  on_published_ = [this](const Delivery& d) {
    if (d.type == "message") messaging_->OnReply(d.run_id, "instant").status().ToString();
  };
  int completions = 0;
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "ping"})",
                             [&](const json::object& r) {
                               ++completions;
                               EXPECT_EQ(Str(r, "reply"), "instant");
                             });
  EXPECT_TRUE(a.pending);
  EXPECT_EQ(completions, 1);
}

TEST_F(SessionSendTest, FinishOfTheTargetRunEndsAWaitingSend) {
  std::optional<json::object> completed;
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "work"})",
                             [&](const json::object& r) { completed = r; });
  auto u = messaging_->OnRunFinish(a.run_id, "error", "model overloaded");
  ASSERT_OK(u);
  ASSERT_TRUE(completed);
  EXPECT_EQ(Str(*completed, "status"), "error");
  EXPECT_EQ(Str(*completed, "error"), "model overloaded");
  EXPECT_EQ(messaging_->OnRunFinish(a.run_id, "done", "").status().message(),
            "status must be one of ok, error, timeout, cancelled (got \"done\")");
  EXPECT_EQ(messaging_->OnReply("no-such-run", "x").status().message(),
            "Unknown runId: no-such-run");
}

TEST_F(SessionSendTest, AWaitingSendSurvivesARestartAndStillTimesOut) {
  tools::ToolAnswer a = Call("sessions_send", kMain,
                             R"({"sessionKey": "agent:main:subagent:kid", "message": "m",
                                 "timeoutSeconds": 60})");
  Restart();
  EXPECT_EQ(messaging_->NextDeadlineMs(), kStart + 60000);
  EXPECT_EQ(For(kKid).size(), 1u);  // unacknowledged: offered again
  clock_->Advance(60000);
  auto expired = messaging_->ExpireDue();
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].run_id, a.run_id);
  EXPECT_EQ(expired[0].status, "timeout");
}

TEST(MessagingOptionsTest, PingPongTurnsAreValidated) {
  tools::MessagingOptions o;
  o.max_ping_pong_turns = 21;
  EXPECT_EQ(tools::ValidateMessagingOptions(o).message(),
            "session.agentToAgent.maxPingPongTurns must be an integer from 0 to 20 (got 21)");
  o.max_ping_pong_turns = 20;
  EXPECT_OK(tools::ValidateMessagingOptions(o));
  o.max_ping_pong_turns = -1;
  EXPECT_FALSE(tools::ValidateMessagingOptions(o).ok());
}

}  // namespace
}  // namespace statewatch::testing

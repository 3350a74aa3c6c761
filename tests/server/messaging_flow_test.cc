// End to end over HTTP and WebSocket: the session tools that move work, driven by simulated
// agents on the delivery feed — a send that waits for its reply, a timed-out send, a
// fire-and-forget send, the ping-pong loop (exact turns, REPLY_SKIP), watch: true, a spawn
// finished and announced, a kill, a rate-limited steer, unacknowledged deliveries re-offered
// after a daemon restart, and a gateway that starts a spawned run from the task delivery's
// options (fork, thread binding) and posts the announcement where its route says.
#include <gtest/gtest.h>

#include <chrono>

#include "gateway_agents.h"
#include "http_helpers.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "test_client.h"
#include "test_keys.h"
#include "test_server.h"

namespace statewatch::testing {
namespace {

const std::string kBob = "agent:main:telegram:dm:bob";

class MessagingFlowTest : public ServerTest {
 protected:
  void StartServer(int ping_pong_turns) {
    server::ServerOptions o = TestOptions();
    o.tools.visibility = tools::Visibility::kAll;
    o.messaging.max_ping_pong_turns = ping_pong_turns;
    ServerTest::StartServer(std::move(o));
    PutSession(*http_, kMain, {{"kind", "main"}});
    PutSession(*http_, kBob, {{"kind", "other"}});
  }

  json::object Ok(const HttpResult& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    json::value v = r.json();
    return v.is_object() ? v.as_object() : json::object();
  }
  // A sessions_send from kMain to kBob that does not wait (timeoutSeconds 0): its answer.
  json::object SendWithoutWaiting(const std::string& message) {
    return Ok(
        Tool(*http_, "sessions_send", kMain,
             json::object{{"sessionKey", kBob}, {"message", message}, {"timeoutSeconds", 0}}));
  }
};

TEST_F(MessagingFlowTest, SendWaitsForTheReplyDeliveredAsInterSessionData) {
  StartServer(/*ping_pong_turns=*/0);
  FeedAgent feed(server_->port(), "main");
  ASSERT_TRUE(feed.connected());
  auto call = ToolAsync(server_->port(), "sessions_send", kMain,
                        {{"sessionKey", kBob}, {"message", "status?"}, {"timeoutSeconds", 30}});

  json::object d = feed.Next();
  EXPECT_EQ(Str(d, "type"), "message");
  EXPECT_EQ(Str(d, "sessionKey"), kBob);
  EXPECT_EQ(Str(d, "text"), "status?");
  json::object prov = d["provenance"].as_object();
  EXPECT_EQ(Str(prov, "sourceSessionKey"), kMain);
  EXPECT_EQ(Str(prov, "sourceTool"), "sessions_send");
  EXPECT_EQ(prov["isUser"], json::value(false));

  json::object update = Ok(Reply(*http_, Str(d, "runId"), "all green"));
  EXPECT_EQ(update["applied"], json::value(true));
  ASSERT_EQ(call.wait_for(kWait), std::future_status::ready);
  json::object result = Ok(call.get());
  EXPECT_EQ(Str(result, "status"), "ok");
  EXPECT_EQ(Str(result, "reply"), "all green");
  EXPECT_EQ(Str(result, "runId"), Str(d, "runId"));

  EXPECT_EQ(Ack(*http_, d).status, 200);
  HttpResult again = Ack(*http_, d);
  EXPECT_EQ(again.status, 404) << again.body;
  EXPECT_EQ(again.error_code(), "not_found");
}

TEST_F(MessagingFlowTest, WaitingSendTimesOutWhenTheManualClockPassesItsDeadline) {
  StartServer(/*ping_pong_turns=*/0);
  FeedAgent feed(server_->port(), "main");
  auto call = ToolAsync(server_->port(), "sessions_send", kMain,
                        {{"sessionKey", kBob}, {"message", "anyone?"}, {"timeoutSeconds", 5}});
  json::object d = feed.Next();  // the call is parked once its message is out
  ASSERT_FALSE(Str(d, "runId").empty());
  SetClock(*http_, kStartMs + 5000);
  ASSERT_EQ(call.wait_for(kWait), std::future_status::ready);
  json::object result = Ok(call.get());
  EXPECT_EQ(Str(result, "status"), "timeout");
  // A late reply is not applied.
  json::object late = Ok(Reply(*http_, Str(d, "runId"), "sorry, late"));
  EXPECT_EQ(late["applied"], json::value(false));
}

TEST_F(MessagingFlowTest, FireAndForgetAnswersAcceptedAtOnce) {
  StartServer(/*ping_pong_turns=*/0);
  FeedAgent feed(server_->port(), "main");
  json::object result = SendWithoutWaiting("fyi");
  EXPECT_EQ(Str(result, "status"), "accepted");
  json::object d = feed.Next();
  EXPECT_EQ(Str(d, "text"), "fyi");
  EXPECT_EQ(Str(d, "runId"), Str(result, "runId"));
}

TEST_F(MessagingFlowTest, PingPongRunsExactlyTheConfiguredTurns) {
  StartServer(/*ping_pong_turns=*/3);
  FeedAgent feed(server_->port(), "main");
  auto call = ToolAsync(server_->port(), "sessions_send", kMain,
                        {{"sessionKey", kBob}, {"message", "ping 0"}, {"timeoutSeconds", 30}});
  json::object d = feed.Next();
  ASSERT_EQ(Str(d, "sessionKey"), kBob);
  std::string run = Str(d, "runId");
  json::object update = Ok(Reply(*http_, run, "pong 1"));
  ASSERT_EQ(call.wait_for(kWait), std::future_status::ready);
  EXPECT_EQ(Str(Ok(call.get()), "reply"), "pong 1");

  // Turns 1..3 alternate A, B, A; the reply to turn 3 ends the loop undelivered.
  const std::string expected_to[] = {kMain, kBob, kMain};
  for (int turn = 1; turn <= 3; ++turn) {
    ASSERT_EQ(update["deliveries"].as_array().size(), 1u) << "turn " << turn;
    d = feed.Next();
    EXPECT_EQ(Str(d, "sessionKey"), expected_to[turn - 1]) << "turn " << turn;
    EXPECT_EQ(Str(d, "runId"), run);
    update = Ok(Reply(*http_, run, "turn " + std::to_string(turn) + " answered"));
    EXPECT_EQ(update["applied"], json::value(true));
  }
  EXPECT_TRUE(update["deliveries"].as_array().empty()) << json::serialize(update);
  // The loop is over: one more reply changes nothing.
  EXPECT_EQ(Ok(Reply(*http_, run, "more?"))["applied"], json::value(false));
}

TEST_F(MessagingFlowTest, ReplySkipStopsThePingPong) {
  StartServer(/*ping_pong_turns=*/5);
  FeedAgent feed(server_->port(), "main");
  json::object sent = SendWithoutWaiting("hello");
  std::string run = Str(sent, "runId");
  EXPECT_EQ(Str(feed.Next(), "sessionKey"), kBob);
  json::object update = Ok(Reply(*http_, run, "hi A"));
  ASSERT_EQ(update["deliveries"].as_array().size(), 1u);
  EXPECT_EQ(Str(feed.Next(), "sessionKey"), kMain);
  update = Ok(Reply(*http_, run, "  REPLY_SKIP \n"));
  EXPECT_EQ(update["applied"], json::value(true));
  EXPECT_TRUE(update["deliveries"].as_array().empty()) << json::serialize(update);
}

TEST_F(MessagingFlowTest, WatchTrueThenAHumanChangeGivesOneNotice) {
  StartServer(/*ping_pong_turns=*/0);
  json::object result = Ok(Tool(*http_, "sessions_send", kMain,
                                json::object{{"sessionKey", kBob},
                                             {"message", "keep me posted"},
                                             {"timeoutSeconds", 0},
                                             {"watch", true}}));
  EXPECT_EQ(result["watched"], json::value(true));
  EXPECT_TRUE(Notices(*http_, kMain).empty());
  Record(*http_, HumanMessage(kBob));
  Record(*http_, HumanMessage(kBob));
  json::array notices = Notices(*http_, kMain);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].at("targetSessionKey"), json::value(kBob)) << json::serialize(notices);
}

TEST_F(MessagingFlowTest, SpawnedRunFinishesAndIsAnnouncedToTheRequester) {
  StartServer(/*ping_pong_turns=*/0);
  FeedAgent feed(server_->port(), "main");
  json::object spawned = Ok(Tool(*http_, "sessions_spawn", kMain,
                                 json::object{{"task", "summarize the logs"}, {"label", "logs"}}));
  EXPECT_EQ(Str(spawned, "status"), "accepted");
  std::string child = Str(spawned, "childSessionKey");
  EXPECT_EQ(child.rfind("agent:main:subagent:", 0), 0u) << child;
  json::object task = feed.Next();
  EXPECT_EQ(Str(task, "type"), "task");
  EXPECT_EQ(Str(task, "sessionKey"), child);
  EXPECT_EQ(Str(task, "text"), "summarize the logs");

  json::object update = Ok(Finish(*http_, Str(spawned, "runId"), "ok", "3 errors found"));
  EXPECT_EQ(Str(update, "status"), "ok");
  json::object announce = feed.Next();
  EXPECT_EQ(Str(announce, "type"), "announce");
  EXPECT_EQ(Str(announce, "sessionKey"), kMain);
  EXPECT_NE(Str(announce, "text").find("3 errors found"), std::string::npos)
      << Str(announce, "text");
  // A second finish is not applied.
  EXPECT_EQ(Ok(Finish(*http_, Str(spawned, "runId"), "error"))["applied"], json::value(false));
}

TEST_F(MessagingFlowTest, KillCancelsTheRunningChild) {
  StartServer(/*ping_pong_turns=*/0);
  json::object spawned =
      Ok(Tool(*http_, "sessions_spawn", kMain, json::object{{"task", "long job"}}));
  json::object killed = Ok(Tool(*http_, "subagents", kMain,
                                json::object{{"action", "kill"}, {"target", spawned["runId"]}}));
  EXPECT_EQ(Str(killed, "status"), "ok");
  EXPECT_EQ(killed["killed"], json::value(1));
  json::object list = Ok(Tool(*http_, "subagents", kMain, json::object{{"action", "list"}}));
  EXPECT_TRUE(list["active"].as_array().empty()) << json::serialize(list);
  ASSERT_EQ(list["recent"].as_array().size(), 1u);
  EXPECT_EQ(list["recent"].as_array()[0].at("status"), json::value("cancelled"));
}

TEST_F(MessagingFlowTest, SteerIsRefusedByTheRateLimitUntilTwoSecondsPass) {
  StartServer(/*ping_pong_turns=*/0);
  json::object spawned =
      Ok(Tool(*http_, "sessions_spawn", kMain, json::object{{"task", "long job"}}));
  json::object steer{{"action", "steer"}, {"target", spawned["runId"]}, {"message", "faster"}};
  EXPECT_EQ(Str(Ok(Tool(*http_, "subagents", kMain, steer)), "status"), "accepted");
  json::object refused = Ok(Tool(*http_, "subagents", kMain, steer));
  EXPECT_EQ(Str(refused, "status"), "rate_limited");
  EXPECT_FALSE(Str(refused, "error").empty());
  SetClock(*http_, kStartMs + 2000);
  EXPECT_EQ(Str(Ok(Tool(*http_, "subagents", kMain, steer)), "status"), "accepted");
}

TEST_F(MessagingFlowTest, UnacknowledgedDeliveriesAreOfferedAgainAfterARestart) {
  StartServer(/*ping_pong_turns=*/0);
  uint64_t first_id = 0;
  {
    FeedAgent feed(server_->port(), "main");
    SendWithoutWaiting("one");
    SendWithoutWaiting("two");
    json::object one = feed.Next();
    json::object two = feed.Next();
    first_id = one["deliveryId"].to_number<uint64_t>();
    EXPECT_EQ(Ack(*http_, two).status, 200);  // only "two" is acknowledged
  }
  RestartServer(kStartMs + 60000);
  FeedAgent feed(server_->port(), "main");
  json::object again = feed.Next();
  EXPECT_EQ(again["deliveryId"].to_number<uint64_t>(), first_id);
  EXPECT_EQ(Str(again, "text"), "one");
  EXPECT_EQ(Ack(*http_, again).status, 200);
  auto pending = SessionTablesView(server_->daemon().engine()).PendingDeliveries("main");
  ASSERT_OK(pending);
  EXPECT_TRUE(pending->empty());
}

TEST_F(MessagingFlowTest, GatewayRoutesRefuseBadInput) {
  StartServer(/*ping_pong_turns=*/0);
  EXPECT_EQ(Reply(*http_, "no-such-run", "x").status, 404);
  EXPECT_EQ(http_->Post("/v1/runs/r/finish", json::object{{"status", "maybe"}}).status, 400);
  EXPECT_EQ(http_->Post("/v1/deliveries/abc/ack", std::string()).status, 400);
  EXPECT_EQ(http_->Post("/v1/deliveries/999/ack", std::string()).status, 404);
  EXPECT_EQ(http_->Get("/v1/deliveries").status, 426);
  EXPECT_EQ(http_->Get("/v1/runs/r/reply").status, 405);
}

// The gateway's side of a spawn, as a gateway would write it: it reads the task delivery's
// options from the feed, checks that the forked child starts from the requester's
// conversation, opens a thread for a thread-bound run and binds the child to it, runs the
// model (appending its answer with usage), finishes the run, and posts the announcement on
// the route the announcement carries.
TEST_F(MessagingFlowTest, GatewaySimulationRunsASpawnFromTheTaskDeliveryOptions) {
  StartServer(/*ping_pong_turns=*/0);
  PutSession(*http_, kMain,
             {{"channel", "discord"},
              {"lastChannel", "discord"},
              {"lastTo", "channel-1"},
              {"lastAccountId", "bot-a"}});
  ASSERT_EQ(
      http_
          ->Post("/v1/sessions/" + kMain + "/messages",
                 json::object{
                     {"messages",
                      json::array{json::object{{"role", "user"}, {"content", "we ship on friday"}},
                                  json::object{{"role", "assistant"}, {"content", "noted"}}}}})
          .status,
      200);
  FeedAgent feed(server_->port(), "main");
  ASSERT_TRUE(feed.connected());
  json::object spawned = Ok(Tool(*http_, "sessions_spawn", kMain,
                                 json::object{{"task", "draft the release notes"},
                                              {"label", "notes"},
                                              {"model", "opus"},
                                              {"thinking", "medium"},
                                              {"thread", true},
                                              {"context", "fork"}}));
  std::string child = Str(spawned, "childSessionKey"), run = Str(spawned, "runId");

  // 1. The task: everything needed to start the run.
  json::object task = feed.Next();
  ASSERT_EQ(Str(task, "type"), "task");
  EXPECT_EQ(Str(task, "sessionKey"), child);
  const json::object& options = task.at("options").as_object();
  EXPECT_EQ(Str(options, "runtime"), "subagent");
  EXPECT_EQ(Str(options, "model"), "opus");
  EXPECT_EQ(Str(options, "thinking"), "medium");
  EXPECT_EQ(options.at("thread"), json::value(true));
  EXPECT_EQ(Str(options, "context"), "fork");
  EXPECT_EQ(Str(options, "label"), "notes");
  EXPECT_EQ(json::serialize(task.at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a"})");
  EXPECT_EQ(Ack(*http_, task).status, 200);

  // 2. Fork: the child's history starts with the requester's conversation, then the task.
  HttpResult history = Tool(*http_, "sessions_history", kMain, json::object{{"sessionKey", child}});
  json::array messages = Ok(history).at("messages").as_array();
  ASSERT_EQ(messages.size(), 3u) << history.body;
  EXPECT_EQ(messages[0].at("content"), json::value("we ship on friday"));
  EXPECT_EQ(messages[2].at("content"), json::value("draft the release notes"));
  EXPECT_EQ(messages[2].at("provenance").at("sourceTool"), json::value("sessions_spawn"));

  // 3. The gateway opens a thread in the requester's channel and binds the child to it.
  PutSession(*http_, child,
             {{"lastChannel", "discord"}, {"lastTo", "channel-1"}, {"lastThreadId", "thread-42"}});
  // 4. It runs the model and records the answer with its usage.
  ASSERT_EQ(http_
                ->Post("/v1/sessions/" + child + "/messages",
                       json::object{{"role", "assistant"},
                                    {"content", "Release notes: fixes and features."},
                                    {"usage", json::object{{"input", 900}, {"output", 120}}}})
                .status,
            200);
  json::object card =
      Ok(Tool(*http_, "session_status", kMain, json::object{{"sessionKey", child}}));
  EXPECT_EQ(card.at("activeRun").at("runId"), json::value(run));
  EXPECT_EQ(card.at("usage").at("inputTokens"), json::value(900));
  EXPECT_EQ(Str(card.at("usage").as_object(), "source"), "transcript");
  EXPECT_EQ(Str(card, "thinking"), "medium");

  // 5. It finishes the run; the announcement says where to post it: the bound thread.
  Ok(Finish(*http_, run, "ok", "Release notes: fixes and features."));
  json::object announce = feed.Next();
  ASSERT_EQ(Str(announce, "type"), "announce");
  EXPECT_EQ(Str(announce, "sessionKey"), kMain);
  EXPECT_EQ(Str(announce, "runId"), run);
  EXPECT_EQ(json::serialize(announce.at("route")),
            R"({"channel":"discord","to":"channel-1","accountId":"bot-a","threadId":"thread-42"})");
  EXPECT_EQ(Str(announce, "marker"), "[Inter-session message] sourceSession=" + child +
                                         " sourceChannel=discord sourceTool=sessions_spawn "
                                         "isUser=false");
  EXPECT_EQ(Str(announce, "prompt").rfind(Str(announce, "marker") + "\n", 0), 0u);
  EXPECT_EQ(Ack(*http_, announce).status, 200);

  // The requester sees the child done in its list, titled by its task.
  json::object list = Ok(Tool(*http_, "sessions_list", kMain,
                              json::object{{"includeDerivedTitles", true}, {"kinds", "other"}}));
  json::object row;
  for (const json::value& r : list.at("sessions").as_array()) {
    if (r.at("key") == json::value(child)) row = r.as_object();
  }
  EXPECT_EQ(Str(row, "status"), "done");
  EXPECT_EQ(Str(row, "derivedTitle"), "we ship on friday");  // forked: the first user message
}

}  // namespace
}  // namespace statewatch::testing
// The caller's W3C traceparent travels with the work its call causes: the sessions_send
// message and every ping-pong turn of its run, the sessions_spawn task, the child_spawned and
// run-end events, and the announcement back. An invalid one is dropped, never refused.
#include <gtest/gtest.h>

#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

constexpr char kPeer[] = "agent:main:peer";

class TraceDeliveryTest : public AgentPeersTest {
 protected:
  TraceDeliveryTest() : AgentPeersTest({kMain, kPeer}, /*max_ping_pong_turns=*/2) {}
};

TEST_F(TraceDeliveryTest, SendCarriesTheTraceIntoTheMessageAndEveryTurn) {
  auto a = CallTraced("sessions_send", kMain,
                      R"({"sessionKey": "agent:main:peer", "message": "hi", "timeoutSeconds": 0})",
                      kTraceparent);
  ASSERT_OK(a);
  auto message = Take(kPeer);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->traceparent, kTraceparent);
  EXPECT_EQ(Str(tools::DeliveryToJson(*message), "traceparent"), kTraceparent);
  ASSERT_EQ(published_.size(), 1u);  // the live feed gets the same delivery
  EXPECT_EQ(published_[0].traceparent, kTraceparent);

  // The peer's reply goes back to the caller as a ping-pong turn: the same trace.
  Reply(message->run_id, "hello back");
  auto turn = Take(kMain);
  ASSERT_TRUE(turn);
  EXPECT_EQ(turn->traceparent, kTraceparent);

  auto run = SessionTablesView(*engine_).GetRun(message->run_id);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ((*run)->traceparent, kTraceparent);
}

TEST_F(TraceDeliveryTest, SpawnCarriesTheTraceIntoTaskEventsAndAnnouncement) {
  auto a = CallTraced("sessions_spawn", kMain, R"({"task": "look into it"})", kTraceparent);
  ASSERT_OK(a);
  std::string child = Str(a->result, "childSessionKey");
  std::string run = Str(a->result, "runId");
  auto task = Take(child);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->type, "task");
  EXPECT_EQ(task->traceparent, kTraceparent);
  auto spawned = Journal(child);
  ASSERT_EQ(spawned.size(), 1u);
  EXPECT_EQ(spawned[0].kind, "child_spawned");
  EXPECT_EQ(spawned[0].traceparent, kTraceparent);

  ASSERT_OK(messaging_->OnRunFinish(run, "ok", "done"));
  auto ended = Journal(child);
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[1].kind, "run_completed");
  EXPECT_EQ(ended[1].traceparent, kTraceparent);
  auto announce = Take(kMain);
  ASSERT_TRUE(announce);
  EXPECT_EQ(announce->type, "announce");
  EXPECT_EQ(announce->traceparent, kTraceparent);
}

TEST_F(TraceDeliveryTest, ALaterVersionTravelsAsVersion00) {
  ASSERT_OK(CallTraced("sessions_send", kMain,
                       R"({"sessionKey": "agent:main:peer", "message": "hi", "timeoutSeconds": 0})",
                       "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more"));
  auto message = Take(kPeer);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->traceparent, kTraceparent);
}

TEST_F(TraceDeliveryTest, AnInvalidTraceIsDroppedAndTheCallGoesOn) {
  for (const char* bad : {"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                          "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                          "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "junk"}) {
    SCOPED_TRACE(bad);
    auto a = CallTraced("sessions_spawn", kMain, R"({"task": "t"})", bad);
    ASSERT_OK(a);
    auto task = Take(Str(a->result, "childSessionKey"));
    ASSERT_TRUE(task);
    EXPECT_EQ(task->traceparent, "");
    EXPECT_FALSE(tools::DeliveryToJson(*task).contains("traceparent"));
    auto spawned = Journal(Str(a->result, "childSessionKey"));
    ASSERT_EQ(spawned.size(), 1u);
    EXPECT_EQ(spawned[0].traceparent, "");
  }
}

TEST_F(TraceDeliveryTest, NoTraceNoField) {
  Call("sessions_send", kMain,
       R"({"sessionKey": "agent:main:peer", "message": "hi", "timeoutSeconds": 0})");
  auto message = Take(kPeer);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->traceparent, "");
  EXPECT_FALSE(tools::DeliveryToJson(*message).contains("traceparent"));
}

// The trace is durable with the delivery and the run: a restart (the feed replays pending
// deliveries) keeps it.
TEST_F(TraceDeliveryTest, SurvivesARestart) {
  ASSERT_OK(CallTraced("sessions_send", kMain,
                       R"({"sessionKey": "agent:main:peer", "message": "hi", "timeoutSeconds": 0})",
                       kTraceparent));
  Restart();
  auto message = Take(kPeer);
  ASSERT_TRUE(message);
  EXPECT_EQ(message->traceparent, kTraceparent);
}

}  // namespace
}  // namespace statewatch::testing

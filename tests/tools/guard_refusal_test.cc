// The loop and cost guards at the tool layer (SessionMessaging + tools/loop_guards.h): each
// refusal is ResourceExhausted naming the guard and its setting, one guard_refused event on
// the caller's journal (which notifies whoever watches the caller), and nothing else; and two
// sessions ping-ponging sessions_send as fast as they can are stopped within the budget.
#include <gtest/gtest.h>

#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

constexpr char kA[] = "agent:main:a";
constexpr char kB[] = "agent:main:b";

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class GuardRefusalTest : public AgentPeersTest {
 protected:
  GuardRefusalTest() : AgentPeersTest({kA, kB}, /*max_ping_pong_turns=*/0) {}
  // Only the guards `set` turns on.
  void UseGuards(const std::function<void(tools::GuardOptions&)>& set) {
    tools::GuardOptions g;
    g.send_burst = 0;
    g.repeat_max_identical = 0;
    g.spawn_burst = 0;
    g.max_open_runs_per_session = 0;
    set(g);
    options_messaging_.guards = g;
    OpenMessaging();
  }
  Result<tools::ToolAnswer> Send(const std::string& from, const std::string& to,
                                 const std::string& message, int timeout_seconds = 0) {
    json::object p{{"sessionKey", to}, {"message", message}, {"timeoutSeconds", timeout_seconds}};
    return CallTraced("sessions_send", from, json::serialize(p), kTraceparent);
  }
  std::vector<Event> Refusals(const std::string& key) {
    std::vector<Event> out;
    for (Event& e : Journal(key)) {
      if (e.kind == "guard_refused") out.push_back(std::move(e));
    }
    return out;
  }
  uint64_t Refused(tools::Guard g) { return messaging_->guards().Refusals()[static_cast<int>(g)]; }
  std::size_t Runs() {
    auto runs = SessionTablesView(*engine_).ListRuns();
    EXPECT_OK(runs);
    return runs.ok() ? runs->size() : 0;
  }
};

TEST_F(GuardRefusalTest, SendRateRefusesAtTheBurstWithAnEventAndNothingElse) {
  UseGuards([](tools::GuardOptions& g) {
    g.send_burst = 3;
    g.send_per_minute = 60;
  });
  for (int i = 0; i < 3; ++i) ASSERT_OK(Send(kA, kB, "m" + std::to_string(i)));
  std::size_t runs = Runs();
  std::size_t delivered = For(kB).size();

  auto refused = Send(kA, kB, "m3");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kResourceExhausted);
  EXPECT_TRUE(Contains(refused.status().message(), "loop guard send_rate"))
      << refused.status().message();
  EXPECT_TRUE(Contains(refused.status().message(), "guards.send.perMinute=60, guards.send.burst=3"))
      << refused.status().message();
  // Nothing but the refusal event: no run, no delivery, no transcript line.
  EXPECT_EQ(Runs(), runs);
  EXPECT_EQ(For(kB).size(), delivered);
  auto events = Refusals(kA);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].summary, "sessions_send to agent:main:b refused by loop guard send_rate");
  EXPECT_EQ(events[0].actor_type, ActorType::kSystem);
  EXPECT_EQ(events[0].traceparent, kTraceparent);
  json::object payload = json::parse(events[0].payload_json).as_object();
  EXPECT_EQ(Str(payload, "guard"), "send_rate");
  EXPECT_EQ(Str(payload, "tool"), "sessions_send");
  EXPECT_EQ(Str(payload, "target"), kB);
  EXPECT_EQ(Str(payload, "setting"), "guards.send.perMinute=60, guards.send.burst=3");
  EXPECT_EQ(Refused(tools::Guard::kSendRate), 1u);

  clock_->Advance(1000);  // one token back
  ASSERT_OK(Send(kA, kB, "m4"));
  EXPECT_FALSE(Send(kA, kB, "m5").ok());
}

TEST_F(GuardRefusalTest, RepeatedMessageRefusesTheSameTextAndRecovers) {
  UseGuards([](tools::GuardOptions& g) {
    g.repeat_max_identical = 2;
    g.repeat_window_ms = 60000;
  });
  ASSERT_OK(Send(kA, kB, "are you there?"));
  ASSERT_OK(Send(kA, kB, "are you there?"));
  auto refused = Send(kA, kB, "are you there?");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kResourceExhausted);
  EXPECT_TRUE(Contains(refused.status().message(), "loop guard repeated_message"));
  EXPECT_TRUE(Contains(refused.status().message(),
                       "guards.repeat.maxIdentical=2, guards.repeat.windowMs=60000"));
  ASSERT_OK(Send(kA, kB, "something else"));
  clock_->Advance(60000);
  ASSERT_OK(Send(kA, kB, "are you there?"));
  EXPECT_EQ(Refusals(kA).size(), 1u);
  EXPECT_EQ(Refused(tools::Guard::kRepeatedMessage), 1u);
}

TEST_F(GuardRefusalTest, SpawnRateRefusesAndCreatesNoChild) {
  UseGuards([](tools::GuardOptions& g) {
    g.spawn_burst = 2;
    g.spawn_per_minute = 6;
  });
  options_messaging_.tool_policy.max_children_per_agent = 20;
  OpenMessaging();
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(messaging_->CallTool("sessions_spawn", Name(kA), Params(R"({"task": "t"})")));
  }
  auto sessions = SessionTablesView(*engine_).ListSessions();
  ASSERT_OK(sessions);
  std::size_t before = sessions->size();
  auto refused = messaging_->CallTool("sessions_spawn", Name(kA), Params(R"({"task": "t"})"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kResourceExhausted);
  EXPECT_TRUE(Contains(refused.status().message(), "loop guard spawn_rate"));
  EXPECT_TRUE(
      Contains(refused.status().message(), "guards.spawn.perMinute=6, guards.spawn.burst=2"));
  sessions = SessionTablesView(*engine_).ListSessions();
  ASSERT_OK(sessions);
  EXPECT_EQ(sessions->size(), before);
  auto events = Refusals(kA);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].summary, "sessions_spawn refused by loop guard spawn_rate");
  clock_->Advance(10000);
  ASSERT_OK(messaging_->CallTool("sessions_spawn", Name(kA), Params(R"({"task": "t"})")));
}

TEST_F(GuardRefusalTest, OpenRunsCapsWaitingSendsUntilOneEnds) {
  UseGuards([](tools::GuardOptions& g) { g.max_open_runs_per_session = 2; });
  auto first = Send(kA, kB, "q1", /*timeout_seconds=*/30);
  ASSERT_OK(first);
  ASSERT_OK(Send(kA, kB, "q2", 30));
  ASSERT_OK(Send(kA, kB, "fire and forget opens nothing", 0));
  auto refused = Send(kA, kB, "q3", 30);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(Contains(refused.status().message(), "loop guard open_runs"));
  EXPECT_TRUE(Contains(refused.status().message(), "guards.openRuns.maxPerSession=2"));
  Reply(first->run_id, "a1");  // the first ends (no reply-back loop)
  ASSERT_OK(Send(kA, kB, "q3", 30));
  // After a restart the open runs are counted from the stored runs.
  Restart();
  EXPECT_EQ(messaging_->guards().OpenRuns(Name(kA)), 2);
  EXPECT_FALSE(Send(kA, kB, "q4", 30).ok());
}

// guard_refused notifies: a coordinator watching a runaway session hears of it at once.
TEST_F(GuardRefusalTest, TheRefusalNotifiesWhoeverWatchesTheCaller) {
  UseGuards([](tools::GuardOptions& g) { g.send_burst = 1; });
  constexpr char kCoordinator[] = "agent:main:coordinator";
  auto watched = engine_->Watch(kCoordinator, Name(kA));
  ASSERT_OK(watched);
  ASSERT_TRUE(*watched);
  ASSERT_OK(Send(kA, kB, "1"));
  EXPECT_TRUE(Pending(kCoordinator).empty());
  ASSERT_FALSE(Send(kA, kB, "2").ok());
  auto notices = Pending(kCoordinator);
  ASSERT_EQ(notices.size(), 1u);
  EXPECT_EQ(notices[0].target.session_key, kA);
  // The refused caller itself is never told through a cursor of its own.
  EXPECT_TRUE(Pending(kA).empty());
}

// A reload (SIGHUP: SessionMessaging::Reconfigure) applies the guards to the next call.
TEST_F(GuardRefusalTest, ReconfigureAppliesTheGuardsToTheNextCall) {
  UseGuards([](tools::GuardOptions& g) { g.send_burst = 1; });
  ASSERT_OK(Send(kA, kB, "1"));
  ASSERT_FALSE(Send(kA, kB, "2").ok());
  tools::MessagingOptions next = messaging_->options();
  next.guards.enabled = false;
  ASSERT_OK(messaging_->Reconfigure(next));
  EXPECT_FALSE(messaging_->guards().options().enabled);
  ASSERT_OK(Send(kA, kB, "3"));
  next.guards.send_burst = -1;  // refused as a whole, naming the setting; nothing changes
  Status bad = messaging_->Reconfigure(next);
  EXPECT_TRUE(bad.IsInvalidArgument());
  EXPECT_EQ(bad.message(), "guards.send.burst must be an integer from 0 to 100000 (got -1)");
  EXPECT_FALSE(messaging_->guards().options().enabled);
}

// A loop hammering a closed guard is counted every time, journaled once a second.
TEST_F(GuardRefusalTest, RefusalEventsAreCoalescedToOneASecond) {
  UseGuards([](tools::GuardOptions& g) { g.send_burst = 1; });
  ASSERT_OK(Send(kA, kB, "0"));
  for (int i = 1; i <= 10; ++i) ASSERT_FALSE(Send(kA, kB, std::to_string(i)).ok());
  EXPECT_EQ(Refusals(kA).size(), 1u);
  EXPECT_EQ(Refused(tools::Guard::kSendRate), 10u);
  clock_->Advance(1000);  // the bucket refills in 2 s: still refused, in a new second
  ASSERT_FALSE(Send(kA, kB, "11").ok());
  EXPECT_EQ(Refusals(kA).size(), 2u);
}

// The loop of issue 25: two sessions answering each other's sessions_send as fast as they
// can (the reference thread saw 398 sends). Each side sends, the other's agent takes the
// delivery and sends back at once; the clock moves 50 ms a round. The default guards stop
// each direction within its budget, journal the refusals on each caller and count them.
class PingPongLoopTest : public GuardRefusalTest {
 protected:
  struct Tally {
    int admitted = 0;
    int refused = 0;
  };
  // Up to `rounds` rounds; `text(i)` is what round i sends.
  std::pair<Tally, Tally> Loop(int rounds, const std::function<std::string(int)>& text) {
    Tally ab, ba;
    for (int i = 0; i < rounds; ++i) {
      clock_->Advance(50);
      auto a = Send(kA, kB, text(i));
      (a.ok() ? ab.admitted : ab.refused)++;
      if (!a.ok()) {
        EXPECT_EQ(a.status().code(), Status::Code::kResourceExhausted);
      }
      while (Take(kB)) {
      }
      auto b = Send(kB, kA, text(i));
      (b.ok() ? ba.admitted : ba.refused)++;
      while (Take(kA)) {
      }
    }
    return {ab, ba};
  }
};

TEST_F(PingPongLoopTest, DistinctMessagesAreStoppedBySendRate) {
  tools::GuardOptions defaults;
  options_messaging_.guards = defaults;
  OpenMessaging();
  const int rounds = 398;
  auto [ab, ba] = Loop(rounds, [](int i) { return "turn " + std::to_string(i); });
  // Budget: the burst plus what the rate refills over the loop's 398 * 50 ms.
  const int64_t elapsed_ms = rounds * 50;
  const int budget =
      static_cast<int>(defaults.send_burst + elapsed_ms * defaults.send_per_minute / 60000);
  EXPECT_LE(ab.admitted, budget);
  EXPECT_LE(ba.admitted, budget);
  EXPECT_GE(ab.admitted, defaults.send_burst);
  EXPECT_EQ(ab.admitted + ab.refused, rounds);
  EXPECT_GT(ab.refused, rounds / 2);
  EXPECT_FALSE(Refusals(kA).empty());
  EXPECT_FALSE(Refusals(kB).empty());
  EXPECT_EQ(Refused(tools::Guard::kSendRate), static_cast<uint64_t>(ab.refused + ba.refused));
  for (const Event& e : Refusals(kA)) {
    EXPECT_EQ(e.summary, "sessions_send to agent:main:b refused by loop guard send_rate");
  }
}

TEST_F(PingPongLoopTest, TheSameMessageIsStoppedByTheRepeatDetectorFirst) {
  tools::GuardOptions defaults;
  options_messaging_.guards = defaults;
  OpenMessaging();
  auto [ab, ba] = Loop(100, [](int) { return "ping"; });
  EXPECT_EQ(ab.admitted, defaults.repeat_max_identical);
  EXPECT_EQ(ba.admitted, defaults.repeat_max_identical);
  EXPECT_EQ(Refused(tools::Guard::kRepeatedMessage),
            static_cast<uint64_t>(ab.refused + ba.refused));
  auto events = Refusals(kB);
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].summary,
            "sessions_send to agent:main:a refused by loop guard repeated_message");
}

}  // namespace
}  // namespace statewatch::testing

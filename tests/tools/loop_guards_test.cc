// LoopGuards on their own (tools/loop_guards.h): each guard refuses exactly at its configured
// budget, names itself and its setting, changes nothing when it refuses, and admits again
// once its window has passed; the state stays bounded.
#include "tools/loop_guards.h"

#include <gtest/gtest.h>

#include <atomic>
#include <initializer_list>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "status_matchers.h"

namespace statewatch::tools {
namespace {

constexpr int64_t kStart = 1764460800000;
const SessionName kA{"main", "agent:main:a"};
const SessionName kB{"main", "agent:main:b"};
const SessionName kC{"main", "agent:main:c"};

// Whether `refused` is a refusal by `guard` that names `setting` and whose message holds each
// of `parts`; a failure says what differs.
::testing::AssertionResult IsRefusal(const std::optional<GuardRefusal>& refused, Guard guard,
                                     const std::string& setting,
                                     std::initializer_list<std::string> parts) {
  if (!refused) return ::testing::AssertionFailure() << "admitted, not refused";
  if (refused->guard != guard) {
    return ::testing::AssertionFailure()
           << "refused by " << GuardName(refused->guard) << ", not " << GuardName(guard);
  }
  if (refused->setting != setting) {
    return ::testing::AssertionFailure()
           << "setting \"" << refused->setting << "\", not \"" << setting << "\"";
  }
  for (const std::string& part : parts) {
    if (refused->message.find(part) == std::string::npos) {
      return ::testing::AssertionFailure()
             << "message \"" << refused->message << "\" lacks \"" << part << "\"";
    }
  }
  return ::testing::AssertionSuccess();
}

class LoopGuardsTest : public ::testing::Test {
 protected:
  // Only the guard under test on; the others off.
  static GuardOptions Only() {
    GuardOptions o;
    o.send_burst = 0;
    o.repeat_max_identical = 0;
    o.spawn_burst = 0;
    o.max_open_runs_per_session = 0;
    return o;
  }
  // Sends distinct messages until one is refused; the number admitted (at most `limit`).
  int SendUntilRefused(LoopGuards& g, const SessionName& from, const SessionName& to,
                       int limit = 1000) {
    for (int i = 0; i < limit; ++i) {
      if (g.AdmitSend(from, to, "message " + std::to_string(next_++), false)) return i;
    }
    return limit;
  }
  static RunRecord Run(std::string id, const SessionName& requester, std::string kind,
                       std::string status, int64_t deadline_ms = 0) {
    RunRecord r;
    r.run_id = std::move(id);
    r.kind = std::move(kind);
    r.requester = requester;
    r.status = std::move(status);
    if (r.kind == "send") {
      r.send = SendRunState{};
      r.send->deadline_ms = deadline_ms;
    }
    return r;
  }

  ManualClock clock_{kStart};
  int next_ = 0;
};

TEST_F(LoopGuardsTest, SendRateRefusesAfterTheBurstAndRefillsAtTheRate) {
  GuardOptions o = Only();
  o.send_burst = 5;
  o.send_per_minute = 60;  // one a second
  LoopGuards g(&clock_, o);
  EXPECT_EQ(SendUntilRefused(g, kA, kB), 5);

  auto refused = g.AdmitSend(kA, kB, "again", false);
  ASSERT_TRUE(
      IsRefusal(refused, Guard::kSendRate, "guards.send.perMinute=60, guards.send.burst=5",
                {"loop guard send_rate", "agent:main:a", "agent:main:b", "guards.send.burst=5"}));
  EXPECT_EQ(refused->retry_after_ms, 1000);

  // Another target has its own bucket; another caller too.
  EXPECT_FALSE(g.AdmitSend(kA, kC, "hi", false));
  EXPECT_FALSE(g.AdmitSend(kC, kB, "hi", false));

  clock_.Advance(999);
  EXPECT_TRUE(g.AdmitSend(kA, kB, "x", false));
  clock_.Advance(1);  // one token back, exactly
  EXPECT_FALSE(g.AdmitSend(kA, kB, "x", false));
  EXPECT_TRUE(g.AdmitSend(kA, kB, "y", false));
  // A long pause refills to the burst, never beyond it.
  clock_.Advance(3600 * 1000);
  EXPECT_EQ(SendUntilRefused(g, kA, kB), 5);
  EXPECT_EQ(g.Refusals()[static_cast<int>(Guard::kSendRate)], 5u);
}

TEST_F(LoopGuardsTest, RepeatedMessageRefusesTheKthCopyWithinTheWindow) {
  GuardOptions o = Only();
  o.repeat_max_identical = 3;
  o.repeat_window_ms = 60000;
  LoopGuards g(&clock_, o);
  EXPECT_FALSE(g.AdmitSend(kA, kB, "ping", false));
  clock_.Advance(10000);
  EXPECT_FALSE(g.AdmitSend(kA, kB, "  ping\n", false));  // whitespace does not make it new
  EXPECT_FALSE(g.AdmitSend(kA, kB, "ping", false));
  auto refused = g.AdmitSend(kA, kB, "ping", false);
  ASSERT_TRUE(IsRefusal(refused, Guard::kRepeatedMessage,
                        "guards.repeat.maxIdentical=3, guards.repeat.windowMs=60000",
                        {"loop guard repeated_message", "3 times"}));
  EXPECT_EQ(refused->retry_after_ms, 50000);  // when the first copy leaves the window

  // Something new passes; the same to someone else passes.
  EXPECT_FALSE(g.AdmitSend(kA, kB, "pong", false));
  EXPECT_FALSE(g.AdmitSend(kA, kC, "ping", false));
  // The refused copy was not counted: once the first copy leaves, one more is admitted.
  clock_.Advance(49999);
  EXPECT_TRUE(g.AdmitSend(kA, kB, "ping", false));
  clock_.Advance(1);
  EXPECT_FALSE(g.AdmitSend(kA, kB, "ping", false));
  EXPECT_TRUE(g.AdmitSend(kA, kB, "ping", false));
}

TEST_F(LoopGuardsTest, SpawnRateIsPerAgent) {
  GuardOptions o = Only();
  o.spawn_burst = 3;
  o.spawn_per_minute = 6;  // one every 10 s
  LoopGuards g(&clock_, o);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(g.AdmitSpawn(i % 2 ? kA : kB)) << i;
  auto refused = g.AdmitSpawn(kC);  // same agent "main": same bucket
  ASSERT_TRUE(IsRefusal(refused, Guard::kSpawnRate,
                        "guards.spawn.perMinute=6, guards.spawn.burst=3",
                        {"loop guard spawn_rate", "agent main"}));
  EXPECT_EQ(refused->retry_after_ms, 10000);
  EXPECT_FALSE(g.AdmitSpawn(SessionName{"ops", "agent:ops:main"}));  // another agent
  clock_.Advance(10000);
  EXPECT_FALSE(g.AdmitSpawn(kA));
  EXPECT_TRUE(g.AdmitSpawn(kA));
}

TEST_F(LoopGuardsTest, OpenRunsCapsWhatOneSessionHasRunning) {
  GuardOptions o = Only();
  o.max_open_runs_per_session = 2;
  LoopGuards g(&clock_, o);
  g.TrackRun(Run("s1", kA, "spawn", "running"));
  g.TrackRun(Run("w1", kA, "send", "running", /*deadline_ms=*/kStart + 30000));
  g.TrackRun(Run("f1", kA, "send", "running", /*deadline_ms=*/0));  // fire and forget: not open
  g.TrackRun(Run("y1", kA, "yield", "running"));
  EXPECT_EQ(g.OpenRuns(kA), 2);

  auto refused = g.AdmitSpawn(kA);
  EXPECT_TRUE(IsRefusal(refused, Guard::kOpenRuns, "guards.openRuns.maxPerSession=2",
                        {"loop guard open_runs"}));
  refused = g.AdmitSend(kA, kB, "wait for me", /*opens_run=*/true);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->guard, Guard::kOpenRuns);
  // A send that waits for nothing opens no run.
  EXPECT_FALSE(g.AdmitSend(kA, kB, "fire and forget", /*opens_run=*/false));
  EXPECT_FALSE(g.AdmitSpawn(kB));  // another session

  g.TrackRun(Run("s1", kA, "spawn", "ok"));  // it ended
  EXPECT_EQ(g.OpenRuns(kA), 1);
  EXPECT_FALSE(g.AdmitSpawn(kA));
}

TEST_F(LoopGuardsTest, ZeroBudgetsAndDisabledAdmitEverything) {
  LoopGuards off(&clock_, Only());
  EXPECT_EQ(SendUntilRefused(off, kA, kB, 500), 500);
  GuardOptions o;     // the defaults, all on...
  o.enabled = false;  // ...until switched off
  LoopGuards disabled(&clock_, o);
  for (int i = 0; i < 100; ++i) {
    ASSERT_FALSE(disabled.AdmitSend(kA, kB, "same", true));
    ASSERT_FALSE(disabled.AdmitSpawn(kA));
  }
}

TEST_F(LoopGuardsTest, DefaultsStopARunawayLoopAtTheBurst) {
  LoopGuards g(&clock_, GuardOptions{});
  EXPECT_EQ(SendUntilRefused(g, kA, kB), GuardOptions{}.send_burst);
  for (int i = 0; i < 20; ++i) EXPECT_FALSE(g.AdmitSpawn(kA)) << i;
  EXPECT_TRUE(g.AdmitSpawn(kA));
}

TEST_F(LoopGuardsTest, ReconfigureAppliesToTheNextCall) {
  GuardOptions o = Only();
  o.send_burst = 2;
  LoopGuards g(&clock_, o);
  EXPECT_EQ(SendUntilRefused(g, kA, kB), 2);
  o.send_burst = 0;
  g.Reconfigure(o);
  EXPECT_EQ(g.options(), o);
  EXPECT_EQ(SendUntilRefused(g, kA, kB, 50), 50);
}

TEST_F(LoopGuardsTest, StateIsBoundedByMaxTrackedKeys) {
  GuardOptions o;
  o.max_tracked_keys = 100;
  LoopGuards g(&clock_, o);
  for (int i = 0; i < 1000; ++i) {
    SessionName target{"main", "agent:main:t" + std::to_string(i)};
    ASSERT_FALSE(g.AdmitSend(kA, target, "hi", false));
  }
  EXPECT_LE(g.TrackedKeys(), 100u);
}

// Concurrent callers never take more than the bucket holds.
TEST_F(LoopGuardsTest, ConcurrentSendsShareOneBucket) {
  GuardOptions o = Only();
  o.send_burst = 50;
  LoopGuards g(&clock_, o);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        if (!g.AdmitSend(kA, kB, std::to_string(t) + ":" + std::to_string(i), false)) ++admitted;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(admitted.load(), 50);
  EXPECT_EQ(g.Refusals()[static_cast<int>(Guard::kSendRate)], 350u);
}

TEST(GuardOptionsTest, ValidationNamesTheSettingAndValue) {
  GuardOptions o;
  ASSERT_OK(ValidateGuardOptions(o));
  o.send_per_minute = 0;
  Status s = ValidateGuardOptions(o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "guards.send.perMinute must be an integer from 1 to 600000 (got 0)");
  o = GuardOptions{};
  o.max_open_runs_per_session = -1;
  EXPECT_EQ(ValidateGuardOptions(o).message(),
            "guards.openRuns.maxPerSession must be an integer from 0 to 100000 (got -1)");
}

}  // namespace
}  // namespace statewatch::tools

// The side tables' value codecs (engine/table_codecs.cc): persisted enums keep their values
// and an unknown stored value is Corruption naming it.
#include "engine/table_codecs.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::engine {
namespace {

RunRecord SendRun(SendRunState::Phase phase) {
  RunRecord run;
  run.run_id = "run-7";
  run.kind = "send";
  run.send = SendRunState{};
  run.send->phase = phase;
  run.send->turn = 2;
  return run;
}

TEST(TableCodecsTest, SendPhasesKeepTheirPersistedValues) {
  EXPECT_EQ(static_cast<int>(SendRunState::Phase::kAwaiting), 0);
  EXPECT_EQ(static_cast<int>(SendRunState::Phase::kPingPong), 1);
  EXPECT_EQ(static_cast<int>(SendRunState::Phase::kDone), 2);
}

TEST(TableCodecsTest, EverySendPhaseRoundTrips) {
  for (auto phase : {SendRunState::Phase::kAwaiting, SendRunState::Phase::kPingPong,
                     SendRunState::Phase::kDone}) {
    auto run = DecodeRun(EncodeRun(SendRun(phase)));
    ASSERT_OK(run);
    ASSERT_TRUE(run->send.has_value());
    EXPECT_EQ(run->send->phase, phase);
    EXPECT_EQ(run->send->turn, 2);
  }
}

// Bug: a stored send phase outside 0..2 decoded as kAwaiting, so a damaged run silently
// restarted its reply loop instead of failing as Corruption.
TEST(TableCodecsTest, AnUnknownSendPhaseIsCorruptionNamingIt) {
  auto run = DecodeRun(EncodeRun(SendRun(static_cast<SendRunState::Phase>(7))));
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), Status::Code::kCorruption) << run.status().ToString();
  EXPECT_NE(run.status().message().find("unknown send phase 7"), std::string::npos)
      << run.status().ToString();
  EXPECT_NE(run.status().message().find("run-7"), std::string::npos) << run.status().ToString();
}

TEST(TableCodecsTest, ARunWithoutSendStateHasNone) {
  RunRecord run;
  run.run_id = "run-8";
  auto decoded = DecodeRun(EncodeRun(run));
  ASSERT_OK(decoded);
  EXPECT_FALSE(decoded->send.has_value());
}

}  // namespace
}  // namespace statewatch::engine

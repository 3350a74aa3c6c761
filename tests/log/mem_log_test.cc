#include "log/mem_log.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "log/append_resolver.h"
#include "log/chain_verifier.h"
#include "log/chain_writer.h"
#include "log/log_backend_contract.h"
#include "status_matchers.h"

namespace statewatch::log {
namespace {

using testing::At;
using testing::DataOf;

class MemLogContractTest : public ::testing::TestWithParam<testing::ContractCase> {};

TEST_P(MemLogContractTest, Holds) {
  MemLog log;
  GetParam().check(log);
}

INSTANTIATE_TEST_SUITE_P(Contract, MemLogContractTest,
                         ::testing::ValuesIn(testing::ContractCases()), testing::ContractCaseName);

TEST(MemLogTest, DedupeWindowFollowsTheClockThenTheCasDecides) {
  auto clock = std::make_shared<ManualClock>(1'000'000);
  MemLogOptions options;
  options.clock = clock;
  options.dedupe_window_ms = 1000;
  MemLog log(options);
  ASSERT_EQ(*log.Append("a", At(0, "id-a")), 1u);
  clock->Advance(999);
  EXPECT_EQ(*log.Append("a", At(0, "id-a")), 1u);  // inside the window: deduplicated
  clock->Advance(1);
  // Outside the window the id is forgotten, and the stale expected_last refuses the retry.
  EXPECT_EQ(log.Append("a", At(0, "id-a")).status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(*log.Tail(), 1u);
  EXPECT_EQ(log.counters().deduplicated, 1u);
  EXPECT_EQ(log.counters().cas_rejected, 1u);
}

TEST(MemLogTest, FullLogRefusesWithNoSpaceAndAppendsNothing) {
  MemLogOptions options;
  options.capacity_bytes = 10;
  MemLog log(options);
  ASSERT_EQ(*log.Append("123456", At(0)), 1u);
  Result<LogPosition> full = log.Append("12345", At(1));
  ASSERT_FALSE(full.ok());
  EXPECT_TRUE(full.status().IsNoSpace());
  EXPECT_EQ(full.status().message(), "log full: 6 of 10 bytes used, record of 5 bytes refused");
  EXPECT_EQ(*log.Tail(), 1u);
  ASSERT_OK(log.PurgeBelow(2));
  EXPECT_EQ(*log.Append("12345", At(1)), 2u);
}

// An owner on the commit path: seals each commit group into the chain, appends it through
// AppendResolved, and remembers what was acknowledged.
struct Owner {
  explicit Owner(ChainWriter w) : writer(std::move(w)) {}
  ChainWriter writer;
  LogPosition last = 0;
  std::vector<std::pair<LogPosition, std::string>> acked;

  Status Commit(LogBackend& log, const SealedFrame& sealed, const RetryPolicy& policy) {
    AppendOptions o = At(last, sealed.dedupe_id);
    Result<LogPosition> r = AppendResolved(log, sealed.bytes, o, policy);
    if (!r.ok()) return r.status();
    EXPECT_EQ(*r, last + 1) << "an acknowledged append must land right after expected_last";
    writer.Advance(sealed);
    last = *r;
    acked.emplace_back(*r, sealed.bytes);
    return Status::OK();
  }
  Status Fence(LogBackend& log, const RetryPolicy& policy) {
    return Commit(log, *writer.SealFence("node"), policy);
  }
  Status Group(LogBackend& log, int i, const RetryPolicy& policy) {
    return Commit(log, *writer.SealCommitGroup("group " + std::to_string(i), 2), policy);
  }
};

struct FaultyLog {
  explicit FaultyLog(uint64_t seed) : clock(std::make_shared<ManualClock>(0)), rng(seed) {
    MemLogOptions options;
    options.clock = clock;
    options.dedupe_window_ms = 60'000;
    options.faults = {seed, /*lose_request=*/0.15, /*lose_ack=*/0.15, /*redeliver=*/0.15};
    log = std::make_unique<MemLog>(options);
    // Between retries, time passes; now and then more than the dedupe window, so that a
    // retry of a landed append meets the CAS instead of the dedupe window.
    policy.max_attempts = 40;
    policy.before_retry = [this](int) {
      clock->Advance(std::bernoulli_distribution(0.2)(rng) ? 61'000 : 100);
    };
  }
  // Reads the whole log with the faults off.
  std::vector<LogRecord> ReadAll() {
    log->SetFaults({});
    return *log->ReadFrom(1, 1'000'000);
  }

  std::shared_ptr<ManualClock> clock;
  std::mt19937_64 rng;
  std::unique_ptr<MemLog> log;
  RetryPolicy policy;
};

void ExpectExactly(const std::vector<LogRecord>& records,
                   const std::vector<std::pair<LogPosition, std::string>>& acked) {
  ASSERT_EQ(records.size(), acked.size()) << "records in the log vs acknowledged appends";
  for (size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].position, acked[i].first);
    EXPECT_EQ(records[i].data, acked[i].second) << "at position " << records[i].position;
  }
}

TEST(MemLogFaultTest, EveryAcknowledgedAppendIsThereExactlyOnce) {
  MemLog::Counters total;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    FaultyLog f(seed);
    Owner owner(*ChainWriter::Make(GenesisChainState(0, 4, 1), 1));
    ASSERT_OK(owner.Fence(*f.log, f.policy));
    for (int i = 0; i < 300; ++i) {
      Status s = owner.Group(*f.log, i, f.policy);
      ASSERT_OK(s);
    }
    std::vector<LogRecord> records = f.ReadAll();
    ExpectExactly(records, owner.acked);
    ChainVerifier verifier(GenesisChainState(0, 4, 1));
    Result<ChainState> end = VerifyLogChain(*f.log, 1, verifier);
    ASSERT_OK(end);
    EXPECT_EQ(*end, owner.writer.state());
    MemLog::Counters c = f.log->counters();
    total.lost_requests += c.lost_requests;
    total.lost_acks += c.lost_acks;
    total.redelivered += c.redelivered;
    total.deduplicated += c.deduplicated;
    total.cas_rejected += c.cas_rejected;
  }
  // Every kind of fault happened, and both ways of settling an unknown outcome were used.
  EXPECT_GT(total.lost_requests, 100u);
  EXPECT_GT(total.lost_acks, 100u);
  EXPECT_GT(total.redelivered, 100u);
  EXPECT_GT(total.deduplicated, 100u);
  EXPECT_GT(total.cas_rejected, 10u);
}

TEST(MemLogFaultTest, AFencedOwnerNeverAppendsAgain) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    FaultyLog f(seed);
    Owner a(*ChainWriter::Make(GenesisChainState(1, 4, 1), 1));
    ASSERT_OK(a.Fence(*f.log, f.policy));
    for (int i = 0; i < 50; ++i) ASSERT_OK(a.Group(*f.log, i, f.policy));

    // b takes over: folds what is there, fences at the tail.
    Result<ChainState> folded =
        VerifyLogChain(*f.log, 1, ChainVerifier(GenesisChainState(1, 4, 1)));
    ASSERT_OK(folded);
    Owner b(*ChainWriter::Make(*folded, 2));
    b.last = *f.log->Tail();
    ASSERT_OK(b.Fence(*f.log, f.policy));

    // a, not knowing, keeps committing; b commits too. a never gets one more acknowledgement.
    const size_t a_before = a.acked.size();
    for (int i = 50; i < 150; ++i) {
      Status s = a.Group(*f.log, i, f.policy);
      ASSERT_EQ(s.code(), Status::Code::kFailedPrecondition) << s.ToString();
      ASSERT_OK(b.Group(*f.log, i, f.policy));
    }
    EXPECT_EQ(a.acked.size(), a_before);

    std::vector<std::pair<LogPosition, std::string>> acked = a.acked;
    acked.insert(acked.end(), b.acked.begin(), b.acked.end());
    ExpectExactly(f.ReadAll(), acked);
    Result<ChainState> end = VerifyLogChain(*f.log, 1, ChainVerifier(GenesisChainState(1, 4, 1)));
    ASSERT_OK(end);
    EXPECT_EQ(end->fence_epoch, 2u);
  }
}

}  // namespace
}  // namespace statewatch::log

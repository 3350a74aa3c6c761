// JetStreamLog against three nats-server processes the test starts itself.
#include "log/jetstream/jetstream_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jetstream_fixture.h"
#include "log/append_resolver.h"
#include "log/chain_verifier.h"
#include "log/chain_writer.h"
#include "log/log_backend_contract.h"
#include "status_matchers.h"

namespace statewatch::log::testing {
namespace {

class JetStreamLogTest : public SharedClusterTest {};

// The contract on a fresh stream each: a stale writer is refused with error 10071, dedupe
// is by Nats-Msg-Id.
class JetStreamLogContractTest : public SharedClusterTest,
                                 public ::testing::WithParamInterface<ContractCase> {};

TEST_P(JetStreamLogContractTest, Holds) {
  auto log = NewLog(NewPartition());
  ASSERT_NE(log, nullptr);
  GetParam().check(*log);
}

INSTANTIATE_TEST_SUITE_P(Contract, JetStreamLogContractTest, ::testing::ValuesIn(ContractCases()),
                         ContractCaseName);

TEST_F(JetStreamLogTest, APipelinedRecordNeverLandsAfterAnotherWritersRecord) {
  // Writer a pipelines r1 (expecting tail 1) and r2 (expecting 2). r1 is "lost": b's fence
  // took position 2 first. By sequence alone r2 would now fit at 3, after b's fence; its
  // Nats-Expected-Last-Msg-Id (r1's id) refuses it.
  auto log = NewLog(NewPartition());
  ASSERT_NE(log, nullptr);
  ASSERT_EQ(*log->Append("a's fence", At(0, "p/1/1")), 1u);
  ASSERT_EQ(*log->Append("b's fence", At(1, "p/2/2")), 2u);
  // r1 arrives after b's fence and is refused by sequence; r2 matches by sequence.
  std::vector<PendingAppend> arriving = {{"r1-lost", "p/1/2"}, {"r2", "p/1/3"}};
  std::vector<Result<LogPosition>> results = log->AppendPipelined(arriving, 1);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(results[1].status().code(), Status::Code::kFailedPrecondition)
      << results[1].status().ToString();
  EXPECT_EQ(*log->Tail(), 2u);
}

TEST_F(JetStreamLogTest, StreamAndSubjectFollowTheDesign) {
  auto log = NewLog(NewPartition());
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(JetStreamLog::StreamName(17), "SW_P17");
  EXPECT_EQ(JetStreamLog::SubjectName(17), "sw.p.17.log");
  Result<std::string> leader = log->Leader();
  ASSERT_OK(leader);
  EXPECT_EQ(leader->rfind("sw-n", 0), 0u) << *leader;
}

TEST_F(JetStreamLogTest, LongReadsStreamAndContinueWhereTheyStopped) {
  auto log = NewLog(NewPartition());
  ASSERT_NE(log, nullptr);
  for (LogPosition p = 0; p < 100; ++p) {
    ASSERT_EQ(*log->Append("r" + std::to_string(p + 1), At(p)), p + 1);
  }
  Result<std::vector<LogRecord>> all = log->ReadFrom(1, 1000);
  ASSERT_OK(all);
  ASSERT_EQ(all->size(), 100u);
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].position, i + 1);
    EXPECT_EQ((*all)[i].data, "r" + std::to_string(i + 1));
  }
  EXPECT_TRUE(log->ReadFrom(101, 1000)->empty());
  for (LogPosition p = 100; p < 150; ++p) ASSERT_OK(log->Append("r", At(p)));
  Result<std::vector<LogRecord>> more = log->ReadFrom(101, 1000);  // the same consumer
  ASSERT_OK(more);
  ASSERT_EQ(more->size(), 50u);
  EXPECT_EQ(more->front().position, 101u);
  EXPECT_EQ(more->back().position, 150u);
  Result<std::vector<LogRecord>> middle = log->ReadFrom(40, 20);  // a new consumer
  ASSERT_OK(middle);
  ASSERT_EQ(middle->size(), 20u);
  EXPECT_EQ(middle->front().data, "r40");
  EXPECT_EQ(middle->back().position, 59u);
  ASSERT_OK(log->PurgeBelow(60));
  Result<std::vector<LogRecord>> purged = log->ReadFrom(50, 100);
  ASSERT_FALSE(purged.ok());
  EXPECT_TRUE(purged.status().IsNotFound()) << purged.status().ToString();
  EXPECT_EQ(log->ReadFrom(60, 100)->size(), 91u);
}

TEST_F(JetStreamLogTest, AStreamWithOtherSettingsIsRefused) {
  const uint32_t p = NewPartition();
  JetStreamLogOptions r1;
  r1.partition = p;
  r1.replicas = 1;
  ASSERT_OK(JetStreamLog::Open(connection_, r1));
  JetStreamLogOptions r3;
  r3.partition = p;
  Result<std::unique_ptr<JetStreamLog>> refused = JetStreamLog::Open(connection_, r3);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "stream SW_P" + std::to_string(p) + " exists with replicas 1 (statewatch needs 3)");
  r3.create = false;
  r3.partition = NewPartition();
  EXPECT_TRUE(JetStreamLog::Open(connection_, r3).status().IsNotFound());
}

// A stream the cluster cannot place is asked for again (servers starting together report to
// the meta leader a moment after it is elected), within placement_retry, then refused with
// JetStream's own error. Five replicas never fit on three servers: every attempt is refused.
TEST_F(JetStreamLogTest, AStreamTheClusterCannotPlaceIsRetriedThenRefused) {
  JetStreamLogOptions o;
  o.partition = NewPartition();
  o.replicas = 5;
  int waits = 0;
  o.placement_retry = {3, [&](int) { ++waits; }};
  Result<std::unique_ptr<JetStreamLog>> refused = JetStreamLog::Open(connection_, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(waits, 2);  // three attempts in all
  EXPECT_NE(refused.status().message().find("create stream SW_P" + std::to_string(o.partition)),
            std::string::npos) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("10005"), std::string::npos)
      << refused.status().ToString();
}

TEST_F(JetStreamLogTest, OversizedRecordRefusedAndNothingAppended) {
  auto log = NewLog(NewPartition());
  ASSERT_NE(log, nullptr);
  Result<LogPosition> big = log->Append(std::string(512 * 1024 + 1, 'x'), At(0));
  ASSERT_FALSE(big.ok());
  EXPECT_TRUE(big.status().IsInvalidArgument());
  EXPECT_EQ(big.status().message(), "log record of 524289 bytes exceeds the limit of 524288");
  EXPECT_EQ(*log->Tail(), 0u);
  EXPECT_EQ(*log->Append(std::string(512 * 1024, 'x'), At(0)), 1u);
}

TEST_F(JetStreamLogTest, AnOwnerOnAnotherConnectionFencesTheFirst) {
  const uint32_t p = NewPartition();
  auto a = NewLog(p);
  ASSERT_NE(a, nullptr);
  std::shared_ptr<NatsConnection> other = Connect();
  JetStreamLogOptions o;
  o.partition = p;
  auto b = JetStreamLog::Open(other, o).value();

  ChainWriter wa = *ChainWriter::Make(GenesisChainState(p, 8, 1), 1);
  SealedFrame fence_a = *wa.SealFence("a");
  ASSERT_EQ(*a->Append(fence_a.bytes, At(0, fence_a.dedupe_id)), 1u);
  wa.Advance(fence_a);
  SealedFrame g1 = *wa.SealCommitGroup("a1", 2);
  ASSERT_EQ(*a->Append(g1.bytes, At(1, g1.dedupe_id)), 2u);
  wa.Advance(g1);

  // b folds the log, fences at its tail.
  Result<ChainState> folded = VerifyLogChain(*b, 1, ChainVerifier(GenesisChainState(p, 8, 1)));
  ASSERT_OK(folded);
  ChainWriter wb = *ChainWriter::Make(*folded, 2);
  SealedFrame fence_b = *wb.SealFence("b");
  ASSERT_EQ(*b->Append(fence_b.bytes, At(2, fence_b.dedupe_id)), 3u);
  wb.Advance(fence_b);

  // a's next commit: refused, and AppendResolved does not mistake b's fence for its own.
  SealedFrame g2 = *wa.SealCommitGroup("a2", 2);
  Result<LogPosition> zombie = AppendResolved(*a, g2.bytes, At(2, g2.dedupe_id), {});
  ASSERT_FALSE(zombie.ok());
  EXPECT_EQ(zombie.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(zombie.status().message().find("last position is 3, not the expected 2"),
            std::string::npos)
      << zombie.status().message();
  EXPECT_NE(zombie.status().message().find("JetStream error 10071"), std::string::npos)
      << zombie.status().message();

  SealedFrame b1 = *wb.SealCommitGroup("b1", 2);
  ASSERT_EQ(*b->Append(b1.bytes, At(3, b1.dedupe_id)), 4u);
  Result<ChainState> end = VerifyLogChain(*a, 1, ChainVerifier(GenesisChainState(p, 8, 1)));
  ASSERT_OK(end);
  EXPECT_EQ(end->fence_epoch, 2u);
  EXPECT_EQ(end->batch_no, 4u);
}

}  // namespace
}  // namespace statewatch::log::testing

#include "log/chain_verifier.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "log/chain_writer.h"
#include "log/mem_log.h"
#include "status_matchers.h"

namespace statewatch::log {
namespace {

constexpr uint32_t kPartition = 2;
constexpr uint32_t kPartitions = 8;

// A partition's frames: owner epoch 1 fences and writes 5 groups, owner epoch 2 fences and
// writes 4 more. frames[i] sits at position i + 1.
std::vector<std::string> SampleFrames() {
  std::vector<std::string> frames;
  ChainState tail = GenesisChainState(kPartition, kPartitions, /*first_n=*/1);
  for (uint64_t epoch : {1, 2}) {
    ChainWriter writer = *ChainWriter::Make(tail, epoch);
    SealedFrame fence = *writer.SealFence("node-" + std::to_string(epoch));
    frames.push_back(fence.bytes);
    writer.Advance(fence);
    for (int i = 0; i < (epoch == 1 ? 5 : 4); ++i) {
      SealedFrame group =
          *writer.SealCommitGroup("group " + std::to_string(frames.size()), /*n_count=*/3);
      frames.push_back(group.bytes);
      writer.Advance(group);
    }
    tail = writer.state();
  }
  return frames;
}

// Runs frames through `verifier`, frames[i] at position i + 1; the first error, or OK.
Status VerifyFrames(const std::vector<std::string>& frames, ChainVerifier* verifier) {
  for (size_t i = 0; i < frames.size(); ++i) {
    Result<FrameView> frame = verifier->Next(i + 1, frames[i]);
    if (!frame.ok()) return frame.status();
  }
  return Status::OK();
}

// Runs frames through a verifier from genesis; the first error, or OK.
Status VerifyAll(const std::vector<std::string>& frames) {
  ChainVerifier verifier(GenesisChainState(kPartition, kPartitions, 1));
  return VerifyFrames(frames, &verifier);
}

// Verifies the sample frames followed by one more batch, sealed by a writer whose chain
// continues theirs but that believes the last fence's epoch is `epoch`: the first error, or
// OK. An error in forging that batch is returned too (and fails the caller's expectation).
Status VerifyWithABatchAtEpoch(uint64_t epoch) {
  std::vector<std::string> frames = SampleFrames();
  ChainVerifier upto(GenesisChainState(kPartition, kPartitions, 1));
  Status sample = VerifyFrames(frames, &upto);
  if (!sample.ok()) return sample;
  ChainState forged = upto.state();
  forged.fence_epoch = epoch;
  Result<ChainWriter> writer = ChainWriter::Make(forged, epoch);
  if (!writer.ok()) return writer.status();
  Result<SealedFrame> batch = writer->SealCommitGroup("epoch " + std::to_string(epoch), 1);
  if (!batch.ok()) return batch.status();
  frames.push_back(batch->bytes);
  return VerifyAll(frames);
}

TEST(ChainVerifierTest, AcceptsWhatTheWriterSealed) {
  std::vector<std::string> frames = SampleFrames();
  ChainVerifier verifier(GenesisChainState(kPartition, kPartitions, 1));
  ASSERT_OK(VerifyFrames(frames, &verifier));
  EXPECT_EQ(verifier.state().batch_no, 11u);
  EXPECT_EQ(verifier.state().fence_epoch, 2u);
  EXPECT_EQ(verifier.state().next_n, 1u + 9 * 3);
  EXPECT_EQ(verifier.state().last_hash, HashFrame(frames.back()));
}

TEST(ChainVerifierTest, DetectsALostBatch) {
  std::vector<std::string> frames = SampleFrames();
  frames.erase(frames.begin() + 3);
  Status s = VerifyAll(frames);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_EQ(s.message(), "position 4, batch 5: follows batch 3: 1 batch(es) lost");
}

TEST(ChainVerifierTest, DetectsADuplicatedBatch) {
  std::vector<std::string> frames = SampleFrames();
  frames.insert(frames.begin() + 4, frames[3]);
  Status s = VerifyAll(frames);
  EXPECT_EQ(s.message(), "position 5, batch 4: follows batch 4: a duplicated or reordered batch");
}

TEST(ChainVerifierTest, DetectsAReorderedBatch) {
  std::vector<std::string> frames = SampleFrames();
  std::swap(frames[2], frames[3]);
  Status s = VerifyAll(frames);
  EXPECT_EQ(s.message(), "position 3, batch 4: follows batch 2: 1 batch(es) lost");
}

TEST(ChainVerifierTest, DetectsABatchRewrittenWithTheSameNumber) {
  // A replica that lost a batch and got another one with the same header: the numbers
  // agree, the chain does not.
  std::vector<std::string> frames = SampleFrames();
  Result<FrameView> original = DecodeFrame(frames[3]);
  ASSERT_OK(original);
  frames[3] = EncodeCommitGroupFrame(original->header, "a different body");
  Status s = VerifyAll(frames);
  EXPECT_EQ(s.code(), Status::Code::kCorruption);
  EXPECT_NE(s.message().find("position 5, batch 5: prevHash"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("is not the hash of batch 4"), std::string::npos) << s.message();
}

TEST(ChainVerifierTest, DetectsAFencedWritersBatch) {
  // The epoch-1 owner seals one more group as if it still owned the chain's tail (a zombie
  // whose append slipped in without the CAS).
  EXPECT_EQ(VerifyWithABatchAtEpoch(1).message(),  // what the zombie believes
            "position 12, batch 12: epoch 1 is below the last fence's epoch 2: a fenced "
            "writer's batch");
}

TEST(ChainVerifierTest, DetectsAnOwnerThatNeverFenced) {
  EXPECT_EQ(VerifyWithABatchAtEpoch(3).message(),
            "position 12, batch 12: epoch 3 is above the last fence's epoch 2: an owner that "
            "never fenced");
}

TEST(ChainVerifierTest, DetectsACounterGapAndAForeignPartition) {
  std::vector<std::string> frames = SampleFrames();
  Result<FrameView> f = DecodeFrame(frames[2]);
  BatchHeader h = f->header;
  h.first_n += 1;
  frames[2] = EncodeCommitGroupFrame(h, f->body);
  EXPECT_EQ(VerifyAll(frames).message(),
            "position 3, batch 3: starts at sequence counter 5, expected 4");

  frames = SampleFrames();
  h = DecodeFrame(frames[0])->header;
  h.partition = 5;
  frames[0] = EncodeFenceFrame(h, "x");
  EXPECT_EQ(VerifyAll(frames).message(),
            "position 1, batch 1: a frame of partition 5/8 in the log of partition 2/8");
}

TEST(ChainVerifierTest, AFailedFrameLeavesTheStateUnchanged) {
  std::vector<std::string> frames = SampleFrames();
  ChainVerifier verifier(GenesisChainState(kPartition, kPartitions, 1));
  ASSERT_OK(verifier.Next(1, frames[0]));
  ChainState before = verifier.state();
  EXPECT_FALSE(verifier.Next(2, frames[2]).ok());
  EXPECT_EQ(verifier.state(), before);
  EXPECT_OK(verifier.Next(2, frames[1]));
}

TEST(ChainVerifierTest, ResumesFromAStoredStateOrTrustsTheFirstFrame) {
  std::vector<std::string> frames = SampleFrames();
  ChainVerifier first_half(GenesisChainState(kPartition, kPartitions, 1));
  for (size_t i = 0; i < 6; ++i) ASSERT_OK(first_half.Next(i + 1, frames[i]));
  Result<ChainState> stored = DecodeChainState(EncodeChainState(first_half.state()));
  ASSERT_OK(stored);
  EXPECT_EQ(*stored, first_half.state());
  ChainVerifier resumed(*stored);
  ChainVerifier trusting = ChainVerifier::TrustingFirstFrame(kPartition, kPartitions);
  for (size_t i = 6; i < frames.size(); ++i) {
    EXPECT_OK(resumed.Next(i + 1, frames[i]));
    EXPECT_OK(trusting.Next(i + 1, frames[i]));
  }
  EXPECT_EQ(resumed.state(), trusting.state());
  // Trusting the first frame does not mean trusting the second.
  ChainVerifier again = ChainVerifier::TrustingFirstFrame(kPartition, kPartitions);
  ASSERT_OK(again.Next(7, frames[6]));
  EXPECT_FALSE(again.Next(8, frames[8]).ok());
  EXPECT_EQ(DecodeChainState("junk").status().code(), Status::Code::kCorruption);
}

TEST(ChainVerifierTest, VerifyLogChainReadsALogInPages) {
  MemLog log;
  std::vector<std::string> frames = SampleFrames();
  for (size_t i = 0; i < frames.size(); ++i) {
    AppendOptions o;
    o.expected_last = i;
    ASSERT_OK(log.Append(frames[i], o));
  }
  ChainVerifier verifier(GenesisChainState(kPartition, kPartitions, 1));
  Result<ChainState> end = VerifyLogChain(log, 1, verifier, /*page=*/3);
  ASSERT_OK(end);
  EXPECT_EQ(end->batch_no, frames.size());
  ASSERT_OK(log.PurgeBelow(4));
  Result<ChainState> from_purged =
      VerifyLogChain(log, 4, ChainVerifier::TrustingFirstFrame(kPartition, kPartitions), 3);
  ASSERT_OK(from_purged);
  EXPECT_EQ(*from_purged, *end);
}

TEST(ChainWriterTest, RefusesWhatWouldBreakTheProtocol) {
  ChainState genesis = GenesisChainState(kPartition, kPartitions, 1);
  ChainWriter writer = *ChainWriter::Make(genesis, 1);
  Result<SealedFrame> early = writer.SealCommitGroup("x", 1);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().message(),
            "epoch 1 has not been fenced (last fence epoch 0): append SealFence() first");
  SealedFrame fence = *writer.SealFence("a");
  EXPECT_EQ(fence.dedupe_id, "2/1/1");
  writer.Advance(fence);
  EXPECT_FALSE(writer.SealFence("a").ok());
  EXPECT_EQ(writer.SealCommitGroup("x", 1)->dedupe_id, "2/1/2");
  EXPECT_TRUE(ChainWriter::Make(writer.state(), 0).status().IsInvalidArgument());
  ChainState unknown = genesis;
  unknown.next_n = 0;
  EXPECT_TRUE(ChainWriter::Make(unknown, 1).status().IsInvalidArgument());
}

}  // namespace
}  // namespace statewatch::log

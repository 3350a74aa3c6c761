#include "log/batch_frame.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace statewatch::log {
namespace {

BatchHeader SampleHeader() {
  BatchHeader h;
  h.partition = 3;
  h.partitions = 8;
  h.epoch = 7;
  h.batch_no = 42;
  h.first_n = 1000;
  h.n_count = 5;
  for (size_t i = 0; i < h.prev_hash.size(); ++i) h.prev_hash[i] = static_cast<uint8_t>(i);
  return h;
}

TEST(BatchFrameTest, CommitGroupRoundTrips) {
  const std::string body("commit group \0 bytes", 20);
  std::string bytes = EncodeCommitGroupFrame(SampleHeader(), body);
  Result<FrameView> frame = DecodeFrame(bytes);
  ASSERT_OK(frame);
  EXPECT_EQ(frame->header, SampleHeader());
  EXPECT_EQ(frame->kind, FrameKind::kCommitGroup);
  EXPECT_EQ(frame->body, body);
}

TEST(BatchFrameTest, FenceRoundTrips) {
  BatchHeader h = SampleHeader();
  h.n_count = 0;
  std::string bytes = EncodeFenceFrame(h, "node-b");
  Result<FrameView> frame = DecodeFrame(bytes);
  ASSERT_OK(frame);
  EXPECT_EQ(frame->header, h);
  EXPECT_EQ(frame->kind, FrameKind::kFence);
  EXPECT_EQ(frame->owner, "node-b");
}

TEST(BatchFrameTest, GarbageIsCorruptionNamingTheSize) {
  Result<FrameView> frame = DecodeFrame("not a frame at all");
  ASSERT_FALSE(frame.ok());
  EXPECT_EQ(frame.status().code(), Status::Code::kCorruption);
  EXPECT_EQ(frame.status().message(),
            "not a log frame (FlatBuffers verification failed, 18 bytes)");
  std::string truncated = EncodeCommitGroupFrame(SampleHeader(), std::string(100, 'x'));
  truncated.resize(truncated.size() / 2);
  EXPECT_EQ(DecodeFrame(truncated).status().code(), Status::Code::kCorruption);
}

TEST(BatchFrameTest, HashIsSha256) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(HashHex(HashFrame("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(HashFrame("abc"), HashFrame("abd"));
}

}  // namespace
}  // namespace statewatch::log

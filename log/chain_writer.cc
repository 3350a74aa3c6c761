#include "log/chain_writer.h"

#include <cassert>

namespace statewatch::log {

Result<ChainWriter> ChainWriter::Make(const ChainState& tail, uint64_t epoch) {
  if (tail.next_n == 0) {
    return Status::InvalidArgument(
        "chain writer needs the next sequence counter (the tail state has none: fold at "
        "least one frame or start from GenesisChainState)");
  }
  if (epoch == 0 || epoch < tail.fence_epoch) {
    return Status::InvalidArgument("epoch " + std::to_string(epoch) +
                                   " is below the log's last fence epoch " +
                                   std::to_string(tail.fence_epoch) + " (or 0)");
  }
  return ChainWriter(tail, epoch);
}

BatchHeader ChainWriter::NextHeader(uint32_t n_count) const {
  BatchHeader h;
  h.partition = state_.partition;
  h.partitions = state_.partitions;
  h.epoch = epoch_;
  h.batch_no = state_.batch_no + 1;
  h.first_n = state_.next_n;
  h.n_count = n_count;
  h.prev_hash = state_.last_hash;
  return h;
}

Result<SealedFrame> ChainWriter::SealFence(std::string_view owner) const {
  if (epoch_ <= state_.fence_epoch) {
    return Status::InvalidArgument("epoch " + std::to_string(epoch_) +
                                   " is already fenced (last fence epoch " +
                                   std::to_string(state_.fence_epoch) + ")");
  }
  BatchHeader h = NextHeader(/*n_count=*/0);
  return SealedFrame{EncodeFenceFrame(h, owner), DedupeId(h.partition, h.epoch, h.batch_no), h,
                     FrameKind::kFence};
}

Result<SealedFrame> ChainWriter::SealCommitGroup(std::string_view body, uint32_t n_count) const {
  if (epoch_ != state_.fence_epoch) {
    return Status::InvalidArgument(
        "epoch " + std::to_string(epoch_) + " has not been fenced (last fence epoch " +
        std::to_string(state_.fence_epoch) + "): append SealFence() first");
  }
  BatchHeader h = NextHeader(n_count);
  return SealedFrame{EncodeCommitGroupFrame(h, body), DedupeId(h.partition, h.epoch, h.batch_no), h,
                     FrameKind::kCommitGroup};
}

void ChainWriter::Advance(const SealedFrame& sealed) {
  assert(sealed.header.batch_no == state_.batch_no + 1 && "sealed by another state");
  state_.batch_no = sealed.header.batch_no;
  state_.next_n = sealed.header.first_n + sealed.header.n_count;
  state_.epoch = sealed.header.epoch;
  if (sealed.kind == FrameKind::kFence) state_.fence_epoch = sealed.header.epoch;
  state_.last_hash = HashFrame(sealed.bytes);
}

std::string ChainWriter::DedupeId(uint32_t partition, uint64_t epoch, uint64_t batch_no) {
  return std::to_string(partition) + "/" + std::to_string(epoch) + "/" + std::to_string(batch_no);
}

}  // namespace statewatch::log

#include "log/chain_verifier.h"

#include <string>

namespace statewatch::log {
namespace {

std::string At(LogPosition position, const BatchHeader& h) {
  return "position " + std::to_string(position) + ", batch " + std::to_string(h.batch_no) + ": ";
}

}  // namespace

ChainVerifier ChainVerifier::TrustingFirstFrame(uint32_t partition, uint32_t partitions) {
  ChainVerifier verifier(GenesisChainState(partition, partitions, /*first_n=*/0));
  verifier.trust_first_ = true;
  return verifier;
}

Result<FrameView> ChainVerifier::Next(LogPosition position, std::string_view bytes) {
  Result<FrameView> decoded = DecodeFrame(bytes);
  if (!decoded.ok()) {
    return Status::Corruption("position " + std::to_string(position) + ": " +
                              decoded.status().message());
  }
  const FrameView& frame = *decoded;
  const BatchHeader& h = frame.header;
  if (h.partition != state_.partition || h.partitions != state_.partitions) {
    return Status::Corruption(At(position, h) + "a frame of partition " +
                              std::to_string(h.partition) + "/" + std::to_string(h.partitions) +
                              " in the log of partition " + std::to_string(state_.partition) + "/" +
                              std::to_string(state_.partitions));
  }
  if (frame.kind == FrameKind::kFence && h.n_count != 0) {
    return Status::Corruption(At(position, h) + "a fence that uses " + std::to_string(h.n_count) +
                              " sequence numbers (must be 0)");
  }
  if (!trust_first_) {
    SW_RETURN_IF_ERROR(CheckOrder(position, h));
    SW_RETURN_IF_ERROR(CheckEpoch(position, frame));
  }
  state_.batch_no = h.batch_no;
  state_.next_n = h.first_n + h.n_count;
  state_.epoch = h.epoch;
  // A commit group carries the epoch of the fence in force, so a trusted first group tells
  // which fence that is.
  if (frame.kind == FrameKind::kFence || trust_first_) state_.fence_epoch = h.epoch;
  trust_first_ = false;
  state_.last_hash = HashFrame(bytes);
  return decoded;
}

Status ChainVerifier::CheckOrder(LogPosition position, const BatchHeader& h) const {
  const uint64_t expected = state_.batch_no + 1;
  if (h.batch_no < expected) {
    return Status::Corruption(At(position, h) + "follows batch " + std::to_string(state_.batch_no) +
                              ": a duplicated or reordered batch");
  }
  if (h.batch_no > expected) {
    return Status::Corruption(At(position, h) + "follows batch " + std::to_string(state_.batch_no) +
                              ": " + std::to_string(h.batch_no - expected) + " batch(es) lost");
  }
  if (h.prev_hash != state_.last_hash) {
    return Status::Corruption(At(position, h) + "prevHash " + HashHex(h.prev_hash) +
                              " is not the hash of batch " + std::to_string(state_.batch_no) +
                              " (" + HashHex(state_.last_hash) +
                              "): a lost, altered or reordered batch");
  }
  if (state_.next_n != 0 && h.first_n != state_.next_n) {
    return Status::Corruption(At(position, h) + "starts at sequence counter " +
                              std::to_string(h.first_n) + ", expected " +
                              std::to_string(state_.next_n));
  }
  return Status::OK();
}

Status ChainVerifier::CheckEpoch(LogPosition position, const FrameView& frame) const {
  const BatchHeader& h = frame.header;
  if (frame.kind == FrameKind::kFence) {
    if (h.epoch <= state_.fence_epoch || h.epoch < state_.epoch) {
      return Status::Corruption(At(position, h) + "a fence of epoch " + std::to_string(h.epoch) +
                                " does not raise the epoch (last fence " +
                                std::to_string(state_.fence_epoch) + ", last batch " +
                                std::to_string(state_.epoch) + ")");
    }
    return Status::OK();
  }
  if (state_.fence_epoch == 0) {
    if (h.epoch < state_.epoch) {
      return Status::Corruption(At(position, h) + "epoch " + std::to_string(h.epoch) +
                                " is below the previous batch's " + std::to_string(state_.epoch));
    }
    return Status::OK();
  }
  if (h.epoch < state_.fence_epoch) {
    return Status::Corruption(At(position, h) + "epoch " + std::to_string(h.epoch) +
                              " is below the last fence's epoch " +
                              std::to_string(state_.fence_epoch) + ": a fenced writer's batch");
  }
  if (h.epoch > state_.fence_epoch) {
    return Status::Corruption(At(position, h) + "epoch " + std::to_string(h.epoch) +
                              " is above the last fence's epoch " +
                              std::to_string(state_.fence_epoch) + ": an owner that never fenced");
  }
  return Status::OK();
}

Result<ChainState> VerifyLogChain(LogBackend& log, LogPosition from, ChainVerifier verifier,
                                  std::size_t page) {
  Result<LogPosition> tail = log.Tail();
  if (!tail.ok()) return tail.status();
  LogPosition next = from == 0 ? 1 : from;
  while (next <= *tail) {
    Result<std::vector<LogRecord>> records = log.ReadFrom(next, page);
    if (!records.ok()) return records.status();
    if (records->empty()) {
      return Status::IOError("log read returned nothing at position " + std::to_string(next) +
                             " below the tail " + std::to_string(*tail));
    }
    for (const LogRecord& r : *records) {
      if (r.position != next) {
        return Status::Corruption("log position " + std::to_string(r.position) + " where " +
                                  std::to_string(next) + " was expected");
      }
      Result<FrameView> frame = verifier.Next(r.position, r.data);
      if (!frame.ok()) return frame.status();
      ++next;
      if (next > *tail) break;
    }
  }
  return verifier.state();
}

}  // namespace statewatch::log

// ChainWriter: seals an owner's frames so that they extend its partition's hash chain — the
// next batch number, the next sequence counter, the hash of the last frame, the owner's
// epoch — and names each one's dedupe id "<p>/<epoch>/<batchNo>" (the JetStream Msg-Id).
//
// Protocol (docs/cluster-internals.md): fold the log up to its tail through a
// ChainVerifier, Make() a writer from the verifier's state with the owner's epoch, append
// SealFence() with expected_last = tail, then one SealCommitGroup() per commit group.
// Advance() only after the log acknowledged the sealed frame; after an append whose outcome
// is unknown, retry the same sealed frame (same bytes, same dedupe id) — never reseal it.
//
// Not thread-safe: runs on the owner's commit leader.
#ifndef STATEWATCH_LOG_CHAIN_WRITER_H_
#define STATEWATCH_LOG_CHAIN_WRITER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "log/batch_frame.h"
#include "log/chain_state.h"
#include "statewatch/status.h"

namespace statewatch::log {

struct SealedFrame {
  std::string bytes;      // what to append
  std::string dedupe_id;  // AppendOptions::dedupe_id
  BatchHeader header;
  FrameKind kind = FrameKind::kCommitGroup;
};

class ChainWriter {
 public:
  // `tail`: the chain state after the log's last frame (its next_n must be known, i.e. not
  // 0). InvalidArgument when `epoch` is below tail.fence_epoch: that owner is already fenced.
  static Result<ChainWriter> Make(const ChainState& tail, uint64_t epoch);

  // A fence establishing this writer's epoch. InvalidArgument unless the epoch is above the
  // last fence's (an owner fences once per epoch).
  Result<SealedFrame> SealFence(std::string_view owner) const;

  // A commit group that uses the sequence counter values next_n() .. next_n()+n_count-1.
  // InvalidArgument when the epoch has not been fenced yet (SealFence + Advance first).
  Result<SealedFrame> SealCommitGroup(std::string_view body, uint32_t n_count) const;

  // The log acknowledged `sealed` (sealed by this writer in its current state): extend the
  // chain past it.
  void Advance(const SealedFrame& sealed);

  // The first counter value the next commit group uses (its first sequence is
  // PartitionId::SequenceOf(next_n())).
  uint64_t next_n() const { return state_.next_n; }
  uint64_t epoch() const { return epoch_; }
  const ChainState& state() const { return state_; }

  static std::string DedupeId(uint32_t partition, uint64_t epoch, uint64_t batch_no);

 private:
  ChainWriter(const ChainState& tail, uint64_t epoch) : state_(tail), epoch_(epoch) {}
  BatchHeader NextHeader(uint32_t n_count) const;

  ChainState state_;
  uint64_t epoch_;
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_CHAIN_WRITER_H_

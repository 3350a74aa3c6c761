// ChainState: where a partition's hash chain stands after some frame — what a verifier
// needs to check the next one and what a writer needs to seal it. The owner, a standby and a
// checkpoint store it (schema/log_frame.fbs ChainState) so that both resume mid-log.
//
// Thread-safe: plain values and pure functions.
#ifndef STATEWATCH_LOG_CHAIN_STATE_H_
#define STATEWATCH_LOG_CHAIN_STATE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "log/batch_frame.h"
#include "statewatch/status.h"

namespace statewatch::log {

struct ChainState {
  uint32_t partition = 0;
  uint32_t partitions = 1;
  uint64_t batch_no = 0;     // the last frame's batch number; 0: no frame yet
  uint64_t next_n = 0;       // the counter value the next frame starts at; 0: not known yet
  uint64_t epoch = 0;        // the last frame's epoch
  uint64_t fence_epoch = 0;  // the last fence's epoch; 0: none seen
  FrameHash last_hash{};     // SHA-256 of the last frame; zeros before the first
  bool operator==(const ChainState&) const = default;
};

// The state of an empty log of partition `partition` of `partitions`, whose first batch
// uses counter value `first_n` (1 for a new cluster; PartitionId::FirstCounterAfter for
// migrated data).
ChainState GenesisChainState(uint32_t partition, uint32_t partitions, uint64_t first_n);

std::string EncodeChainState(const ChainState& state);
// Corruption when the bytes are not a ChainState (FlatBuffers verification, hash size).
Result<ChainState> DecodeChainState(std::string_view bytes);

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_CHAIN_STATE_H_

// ChainVerifier: checks a partition's frames in log order and finds what the hash chain and
// the fences rule out (docs/cluster-internals.md, "Frames, the hash chain, sequence numbers"):
//
//   - a lost batch          (batchNo skips ahead, or prevHash is not the last frame's hash),
//   - a duplicated batch    (batchNo repeats),
//   - a reordered batch     (batchNo goes back, or the chain breaks),
//   - a sequence-counter gap or overlap (first n is not the last frame's first n + n count),
//   - a fenced writer's batch (its epoch is below the last Fence's),
//   - an owner that never fenced (a commit group whose epoch is above the last Fence's),
//   - a frame of another partition, or one that does not decode.
//
// The standby's fold, `verify` and a takeover run every frame through one of these.
//
// Not thread-safe.
#ifndef STATEWATCH_LOG_CHAIN_VERIFIER_H_
#define STATEWATCH_LOG_CHAIN_VERIFIER_H_

#include <cstddef>
#include <optional>
#include <string_view>

#include "log/batch_frame.h"
#include "log/chain_state.h"
#include "log/log_backend.h"
#include "statewatch/status.h"

namespace statewatch::log {

class ChainVerifier {
 public:
  // Resumes after `state` (GenesisChainState for a log read from its start; the state a
  // checkpoint stored otherwise).
  explicit ChainVerifier(const ChainState& state) : state_(state), trust_first_(false) {}

  // Starts at a frame whose predecessor is unknown (the log's head was purged and no state
  // was kept): the first frame is taken as given for its partition `partition` of
  // `partitions`; every later one is checked.
  static ChainVerifier TrustingFirstFrame(uint32_t partition, uint32_t partitions);

  // Checks the frame at `position` (the next one in log order) and, when it is sound,
  // advances past it and returns it decoded (views into `bytes`). Corruption otherwise,
  // naming the position, the batch numbers and what is wrong; the state is then unchanged.
  Result<FrameView> Next(LogPosition position, std::string_view bytes);

  const ChainState& state() const { return state_; }

 private:
  Status CheckOrder(LogPosition position, const BatchHeader& h) const;
  Status CheckEpoch(LogPosition position, const FrameView& frame) const;

  ChainState state_;
  bool trust_first_;
};

// Runs `verifier` over `log` from position `from` up to the tail seen at the start, `page`
// records at a time. Returns the state after the last frame; the first Corruption or read
// error otherwise.
Result<ChainState> VerifyLogChain(LogBackend& log, LogPosition from, ChainVerifier verifier,
                                  std::size_t page = 256);

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_CHAIN_VERIFIER_H_

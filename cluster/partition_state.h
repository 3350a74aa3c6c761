// PartitionState: what this node is for its partition right now — a standby following the
// stream, switching to owner (a takeover in progress), the owner, or moved (fenced out by a
// newer owner) — with the epoch and stream position that go with it. The commit path
// (ReplicatedLog), the standby's follow loop (cluster/follower.h) and the daemon's cluster
// gate (server/cluster_routes.h) share one, so that the moment a node is fenced out its
// reads stop too: a fenced node's data may already be stale (docs/cluster-internals.md,
// "Fencing and `statewatch takeover --partition p`").
//
// Thread-safe.
#ifndef STATEWATCH_CLUSTER_PARTITION_STATE_H_
#define STATEWATCH_CLUSTER_PARTITION_STATE_H_

#include <cstdint>
#include <mutex>
#include <string>

namespace statewatch::cluster {

enum class PartitionRole { kStandby, kSwitching, kOwner, kMoved };

inline const char* PartitionRoleName(PartitionRole role) {
  switch (role) {
    case PartitionRole::kStandby: return "standby";
    case PartitionRole::kSwitching: return "switching";
    case PartitionRole::kOwner: return "owner";
    case PartitionRole::kMoved: return "moved";
  }
  return "unknown";
}

struct PartitionView {
  PartitionRole role = PartitionRole::kStandby;
  uint32_t partition = 0;
  // Owner: its own epoch. Standby: the epoch of the last fence it folded (the owner's, as
  // far as the stream has told it); 0 before any.
  uint64_t epoch = 0;
  uint64_t position = 0;       // the last stream position applied here
  uint64_t taken_over_at = 0;  // owner: the stream position of its fence
  std::string moved_reason;    // moved: why (the refused append's error)
  uint64_t checkpoint_position = 0;  // the last cluster checkpoint written or restored here
};

class PartitionState {
 public:
  explicit PartitionState(uint32_t partition, PartitionRole role = PartitionRole::kStandby) {
    view_.partition = partition;
    view_.role = role;
  }

  PartitionView view() const {
    std::lock_guard lock(mu_);
    return view_;
  }

  // A standby's fold moved on; `fence_epoch` is the newest fence it has applied.
  void Followed(uint64_t position, uint64_t fence_epoch) {
    std::lock_guard lock(mu_);
    view_.position = position;
    view_.epoch = fence_epoch;
  }

  // Only a standby starts a takeover; false (and nothing changes) for any other role.
  bool BeginTakeover() {
    std::lock_guard lock(mu_);
    if (view_.role != PartitionRole::kStandby) return false;
    view_.role = PartitionRole::kSwitching;
    return true;
  }
  // The takeover failed before the fence: the node follows again.
  void AbortTakeover() {
    std::lock_guard lock(mu_);
    if (view_.role == PartitionRole::kSwitching) view_.role = PartitionRole::kStandby;
  }

  // The fence at `position` made this node the owner at `epoch`.
  void Owned(uint64_t epoch, uint64_t position) {
    std::lock_guard lock(mu_);
    view_.role = PartitionRole::kOwner;
    view_.epoch = epoch;
    view_.position = position;
    view_.taken_over_at = position;
  }

  void Appended(uint64_t position) {
    std::lock_guard lock(mu_);
    view_.position = position;
  }

  // A cluster checkpoint at stream position `position` was written or restored.
  void Checkpointed(uint64_t position) {
    std::lock_guard lock(mu_);
    view_.checkpoint_position = position;
  }

  // A newer owner fenced this one out. Final.
  void Moved(std::string reason) {
    std::lock_guard lock(mu_);
    view_.role = PartitionRole::kMoved;
    view_.moved_reason = std::move(reason);
  }

 private:
  mutable std::mutex mu_;
  PartitionView view_;
};

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_PARTITION_STATE_H_

// ReplicatedLog: the engine's log in cluster mode (docs/cluster-internals.md,
// "The owner: append, then apply" through "Fencing and `statewatch takeover --partition p`").
// A commit group is made durable on the partition's replicated stream (JetStreamLog; MemLog
// in tests) first — one LogFrame sealed into the partition's hash chain, appended with the
// expected last position and the Msg-Id "<p>/<epoch>/<batchNo>", answered once a quorum holds
// it — and then applied to the node's own RocksDB through its local log, together with meta
// {remote position, ChainState}. The engine answers its callers only after both.
//
// Opening one makes this node the partition's owner, which is also the takeover of
// "Fencing and `statewatch takeover --partition p`": fold every frame the node has not
// applied yet (a standby's or a restarted owner's catch-up), append Fence{last fence's
// epoch + 1} at the tail, apply it. From then on an owner that appended before the fence is
// refused at its next append; it closes: every later append fails with FailedPrecondition
// "partition moved", acknowledging nothing.
//
// An append whose outcome stays unknown after the retry policy (IOError) is returned as
// it is: the engine then refuses writes until it is reopened, and the reopen's fold applies
// the frame if it landed (its callers' retries are deduplicated by their dedupe keys).
//
// Reads (ReadFrom, Tail) are the local log's: the engine replays what it applied. PurgeBelow
// (the engine's own checkpoint, on the commit leader) purges the local log and then, when
// options.checkpoints is set and checkpoint_every stream positions were applied since the
// last one, writes a cluster checkpoint — the node's whole state through one RocksDB
// snapshot (cluster/checkpoint_codec.h) — and purges the stream below its position + 1
// (docs/cluster-internals.md, "Checkpoints and purge"). A failed snapshot, write or purge
// is logged and retried at the next engine checkpoint; it never fails the commit path (the
// stream keeps everything).
//
// Thread contract: as LogBackend — one appender at a time.
#ifndef STATEWATCH_CLUSTER_REPLICATED_LOG_H_
#define STATEWATCH_CLUSTER_REPLICATED_LOG_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "log/append_resolver.h"
#include "log/checkpoint_store.h"
#include "log/chain_state.h"
#include "log/chain_writer.h"
#include "cluster/partition_state.h"
#include "log/log_backend.h"
#include "statewatch/options.h"
#include "storage/store.h"

namespace statewatch::cluster {

struct ReplicatedLogOptions {
  uint32_t partition = 0;
  uint32_t partitions = 1;
  // The node's name, recorded in its fence.
  std::string node = "statewatch";
  // Settles appends whose outcome is unknown. Default: RetryPolicy::Backoff() (~15 s).
  log::RetryPolicy retry{20, log::RetryPolicy::Backoff()};
  // Fence attempts while another owner keeps appending
  // ("Fencing and `statewatch takeover --partition p`", step 3).
  int fence_rounds = 10;
  // The control plane's assignment this node fences under (docs/cluster-internals.md,
  // "Ownership on etcd"): the etcd mod_revision of the partition's assignment key. 0 (a
  // manual takeover, a stage-1 owner): the fence's epoch is the last fence's + 1. Otherwise
  // it is max(last + 1, this), and a stream whose last fence is newer than this assignment
  // refuses the fence with FailedPrecondition — a node acting on a stale assignment cannot
  // fence out the owner a newer one named.
  uint64_t assignment_epoch = 0;
  // When set, kept current: Owned at the fence, Appended after each append, Moved when a
  // newer owner fences this one out (the daemon's gate then refuses reads too).
  std::shared_ptr<PartitionState> state;
  // Where cluster checkpoints go (SW_CKPT; MemCheckpointStore in tests); null: none are
  // written and the stream is never purged. Also where a fold restores from when the stream
  // is purged below what the node applied.
  std::shared_ptr<log::CheckpointStore> checkpoints;
  // Stream positions applied between two cluster checkpoints (the engine's own
  // checkpoint_min_records still decides when PurgeBelow runs). The first one after an open
  // is due once this many positions exist (a restored open counts from its checkpoint).
  uint64_t checkpoint_every = 100000;
  // Publish each checkpoint (and purge below it) on a thread of its own, off the commit
  // path (see ReplicatedLog). false: inline, before the commit that made it due returns —
  // for tests that look at the checkpoint store right after their writes.
  bool checkpoint_in_background = true;
};

// What a node has applied of its partition's stream: kept in the meta family, written in
// the same batch as each applied frame's writes.
struct AppliedState {
  log::LogPosition position = 0;        // the last stream position applied
  log::LogPosition local_position = 0;  // its commit group's local log position (fences: the
                                        // last group's)
  log::ChainState chain;
};
std::string AppliedStateKey();
Result<AppliedState> LoadAppliedState(storage::Store& store, uint32_t partition,
                                      uint32_t partitions);
void PutAppliedState(storage::Batch& batch, const AppliedState& state);
// The applied-state entry's value; Corruption naming what is wrong.
Result<AppliedState> DecodeAppliedState(std::string_view bytes);

struct FoldOptions {
  // Where to restore from when the stream no longer holds the next position (null: such a
  // fold fails with FailedPrecondition).
  std::shared_ptr<log::CheckpointStore> checkpoints;
  // When set, told the position of a checkpoint restored (PartitionState::Checkpointed).
  std::shared_ptr<PartitionState> state;
  // When set, the position of a checkpoint restored is stored there.
  log::LogPosition* restored_at = nullptr;
};

// Applies every frame of `remote` after `state->position` to `store` through `local` (its
// local log, a storage::LocalLog), verifying the hash chain; advances `state`. Returns when
// the stream has no more. Corruption (the verifier's message) stops it with what was applied
// kept.
//
// When the stream is purged below state->position + 1 (ReadFrom is NotFound), the latest
// checkpoint of options.checkpoints is restored if it is past state->position: the whole
// store is replaced by its snapshot (RestoreSnapshot), `local` reloaded, and the fold goes
// on from its position with the chain verified from its ChainState — so a checkpoint the
// next frame does not chain onto is refused (Corruption naming the position) before
// anything is written. No checkpoint store, no checkpoint or one not far enough:
// FailedPrecondition naming the positions, nothing changed. REQUIRES: no engine has the
// store open (a restore replaces what it would have loaded), except the engine that is
// opening through OwnerLog (it loads after the fold).
Status FoldStream(log::LogBackend& remote, storage::Store& store, log::LogBackend& local,
                  AppliedState* state, const FoldOptions& options = {});

// Cluster checkpoints: when one is due (PurgeBelow, on the commit leader between two commit
// groups), the snapshot is read there — a consistent image at the applied position, the only
// part that must not race the next group — and published, with the stream purged below it
// once it is stored, on a thread of its own: the commit path does not wait for the
// megabytes to reach JetStream (a 4 MB checkpoint took ~230 ms to publish on loopback, a
// stall every writer saw, and a new owner's first one delayed its first answer). One
// checkpoint is in flight at most; a failed one is tried again at the next PurgeBelow.
// The destructor waits for the one in flight.
class ReplicatedLog final : public log::LogBackend {
 public:
  ~ReplicatedLog() override;

  // Folds, fences and returns the owner's log. `store` must outlive it.
  static Result<std::unique_ptr<ReplicatedLog>> OpenAsOwner(
      storage::Store* store, std::unique_ptr<log::LogBackend> local,
      std::shared_ptr<log::LogBackend> remote, const ReplicatedLogOptions& options);

  // The stream first (the frame sealed into the chain, answered by a quorum), then the
  // local log with options.writes and the applied state in one batch: the position returned
  // is the local one. options.writes must be a storage::Batch of the store (or null).
  // FailedPrecondition "partition moved" once fenced out; IOError when the stream's outcome
  // stays unknown (see above).
  Result<log::LogPosition> Append(std::string_view data,
                                  const log::AppendOptions& options) override;
  // The local log's tail.
  Result<log::LogPosition> Tail() override;
  // The local log's records: what this node applied (a fold's frames included).
  Result<std::vector<log::LogRecord>> ReadFrom(log::LogPosition from,
                                               std::size_t max_records) override;
  // The local log's purge, then a cluster checkpoint when one is due (see above).
  Status PurgeBelow(log::LogPosition position) override;

  uint64_t epoch() const { return writer_.epoch(); }
  log::LogPosition remote_position() const { return applied_.position; }
  bool closed() const { return !closed_.ok(); }

 private:
  ReplicatedLog(storage::Store* store, std::unique_ptr<log::LogBackend> local,
                std::shared_ptr<log::LogBackend> remote, const ReplicatedLogOptions& options,
                AppliedState applied, log::ChainWriter writer, log::LogPosition last_checkpoint);
  static Result<log::ChainWriter> Fence(storage::Store& store, log::LogBackend& local,
                                        log::LogBackend& remote,
                                        const ReplicatedLogOptions& options,
                                        AppliedState* applied, log::LogPosition* restored_at);
  // Reads a cluster checkpoint's snapshot and starts publishing it (PublishCheckpoint).
  void ClusterCheckpoint();
  // On publisher_: writes the checkpoint, then purges the stream below it; logs what failed.
  void PublishCheckpoint(log::Checkpoint checkpoint, uint64_t entries, uint64_t parts,
                         int64_t snapshot_ms);

  storage::Store* store_;
  std::unique_ptr<log::LogBackend> local_;
  std::shared_ptr<log::LogBackend> remote_;
  const ReplicatedLogOptions options_;
  AppliedState applied_;
  log::ChainWriter writer_;
  Status closed_;  // non-OK once fenced out
  log::LogPosition last_checkpoint_ = 0;  // the stream position of the last one written/restored
  std::thread publisher_;                  // the checkpoint in flight, if any
  std::atomic<bool> publishing_{false};
  std::atomic<bool> publish_failed_{false};  // the last one was not stored: try again
};

// The EngineOptions::wrap_log that opens the engine as the owner of `options.partition` on
// `remote` (the partition's stream).
decltype(EngineOptions::wrap_log) OwnerLog(std::shared_ptr<log::LogBackend> remote,
                                           ReplicatedLogOptions options);

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_REPLICATED_LOG_H_

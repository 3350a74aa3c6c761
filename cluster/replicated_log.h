// ReplicatedLog: the engine's log in cluster mode (docs/cluster.md §4-§6). A commit group is
// made durable on the partition's replicated stream (JetStreamLog; MemLog in tests) first —
// one LogFrame sealed into the partition's hash chain, appended with the expected last
// position and the Msg-Id "<p>/<epoch>/<batchNo>", answered once a quorum holds it — and
// then applied to the node's own RocksDB through its local log, together with
// meta {remote position, ChainState}. The engine answers its callers only after both.
//
// Opening one makes this node the partition's owner, which is also the takeover of §6:
// fold every frame the node has not applied yet (a standby's or a restarted owner's
// catch-up), append Fence{last fence's epoch + 1} at the tail, apply it. From then on an
// owner that appended before the fence is refused at its next append; it closes: every
// later append fails with FailedPrecondition "partition moved", acknowledging nothing.
//
// An append whose outcome stays unknown after the retry policy (IOError) is returned as
// it is: the engine then refuses writes until it is reopened, and the reopen's fold applies
// the frame if it landed (its callers' retries are deduplicated by their dedupe keys).
//
// Reads (ReadFrom, Tail, PurgeBelow) are the local log's: the engine replays and purges
// what it applied. Purging the stream goes with its checkpoints (not built yet).
//
// Thread contract: as LogBackend — one appender at a time.
#ifndef STATEWATCH_CLUSTER_REPLICATED_LOG_H_
#define STATEWATCH_CLUSTER_REPLICATED_LOG_H_

#include <cstdint>
#include <memory>
#include <string>

#include "log/append_resolver.h"
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
  // Fence attempts while another owner keeps appending (§6 step 3).
  int fence_rounds = 10;
  // When set, kept current: Owned at the fence, Appended after each append, Moved when a
  // newer owner fences this one out (the daemon's gate then refuses reads too).
  std::shared_ptr<PartitionState> state;
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

// Applies every frame of `remote` after `state->position` to `store` through `local` (its
// local log), verifying the hash chain; advances `state`. Returns when the stream has no
// more. Corruption (the verifier's message) stops it with what was applied kept.
Status FoldStream(log::LogBackend& remote, storage::Store& store, log::LogBackend& local,
                  AppliedState* state);

class ReplicatedLog final : public log::LogBackend {
 public:
  // Folds, fences and returns the owner's log. `store` must outlive it.
  static Result<std::unique_ptr<ReplicatedLog>> OpenAsOwner(
      storage::Store* store, std::unique_ptr<log::LogBackend> local,
      std::shared_ptr<log::LogBackend> remote, const ReplicatedLogOptions& options);

  // options.writes must be a storage::Batch of the store (or null).
  Result<log::LogPosition> Append(std::string_view data,
                                  const log::AppendOptions& options) override;
  Result<std::vector<log::LogRecord>> ReadFrom(log::LogPosition from,
                                               std::size_t max_records) override;
  Result<log::LogPosition> Tail() override;
  Status PurgeBelow(log::LogPosition position) override;

  uint64_t epoch() const { return writer_.epoch(); }
  log::LogPosition remote_position() const { return applied_.position; }
  bool closed() const { return !closed_.ok(); }

 private:
  ReplicatedLog(storage::Store* store, std::unique_ptr<log::LogBackend> local,
                std::shared_ptr<log::LogBackend> remote, const ReplicatedLogOptions& options,
                AppliedState applied, log::ChainWriter writer);
  static Result<log::ChainWriter> Fence(storage::Store& store, log::LogBackend& local,
                                        log::LogBackend& remote,
                                        const ReplicatedLogOptions& options,
                                        AppliedState* applied);

  storage::Store* store_;
  std::unique_ptr<log::LogBackend> local_;
  std::shared_ptr<log::LogBackend> remote_;
  const ReplicatedLogOptions options_;
  AppliedState applied_;
  log::ChainWriter writer_;
  Status closed_;  // non-OK once fenced out
};

// The EngineOptions::wrap_log that opens the engine as the owner of `options.partition` on
// `remote` (the partition's stream).
decltype(EngineOptions::wrap_log) OwnerLog(std::shared_ptr<log::LogBackend> remote,
                                           ReplicatedLogOptions options);

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_REPLICATED_LOG_H_

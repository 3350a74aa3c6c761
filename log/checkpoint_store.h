// CheckpointStore: where a partition's owner leaves snapshots of its projections, so that
// a new node restores the latest one and folds only the log after it — and so that the log
// below it can be purged (docs/cluster-internals.md, "Checkpoints and purge").
//
//   - MemCheckpointStore (log/mem_checkpoint_store.h): in memory, for tests;
//   - JetStreamCheckpoints (log/jetstream/jetstream_checkpoints.h): chunks plus an end marker
//     on the subject sw.p.<p>.ckpt.
//
// A checkpoint is complete or absent: a writer that dies half-way leaves nothing a reader
// sees. Positions only move forward: a checkpoint below the latest one is refused, so a
// stale writer (a fenced owner finishing an old snapshot) cannot hide a newer checkpoint
// that the log's purge already relies on.
//
// Thread-safe.
#ifndef STATEWATCH_LOG_CHECKPOINT_STORE_H_
#define STATEWATCH_LOG_CHECKPOINT_STORE_H_

#include <optional>
#include <string>

#include "log/log_backend.h"
#include "statewatch/status.h"

namespace statewatch::log {

struct Checkpoint {
  // The last log position the snapshot covers: a restore folds from position + 1.
  LogPosition position = 0;
  // The snapshot, opaque here (the engine's projections and the chain state).
  std::string data;
  bool operator==(const Checkpoint&) const = default;
};

class CheckpointStore {
 public:
  virtual ~CheckpointStore() = default;

  // Stores `checkpoint` as the latest and drops older ones. Errors:
  //   FailedPrecondition — a checkpoint with a higher position exists; nothing written;
  //   IOError            — unknown: Latest() shows this checkpoint or the previous one.
  virtual Status Write(const Checkpoint& checkpoint) = 0;

  // The latest complete checkpoint; nullopt when there is none. Corruption when it is
  // damaged (a chunk missing, the digest wrong).
  virtual Result<std::optional<Checkpoint>> Latest() = 0;

  // The latest complete checkpoint's position without reading its data (an owner opening
  // learns when its first checkpoint is due). The default reads Latest().
  virtual Result<std::optional<LogPosition>> LatestPosition() {
    auto latest = Latest();
    if (!latest.ok()) return latest.status();
    if (!latest->has_value()) return std::optional<LogPosition>();
    return std::optional<LogPosition>((*latest)->position);
  }
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_CHECKPOINT_STORE_H_

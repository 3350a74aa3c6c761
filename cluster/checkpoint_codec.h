// A cluster checkpoint's snapshot (docs/cluster-internals.md, "Checkpoints and purge"): every
// key/value of every family of a node's RocksDB, read through one snapshot, with the node's applied
// state {stream position, local position, ChainState} from the same snapshot — so a node that
// restores it holds exactly what the node that took it held after that stream position (journal
// rows, projections, names, side tables, its local log and the engine's own checkpoint meta).
//
// Encoding: FlatBuffers SnapshotParts (schema/cluster_checkpoint.fbs), each size-prefixed
// and of about `part_bytes` of keys and values (an entry larger than that goes alone in its
// part), concatenated; the last part carries the applied state and the counts. Families are
// named by their wire ids (cluster/commit_codec.h). The snapshot is built in memory: it needs
// about the size of the database's live keys and values, plus one part.
//
// Thread-safe: pure functions over the store's thread-safe reads; RestoreSnapshot writes
// and needs the store to itself (see its contract).
#ifndef STATEWATCH_CLUSTER_CHECKPOINT_CODEC_H_
#define STATEWATCH_CLUSTER_CHECKPOINT_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "cluster/replicated_log.h"
#include "statewatch/status.h"
#include "storage/store.h"

namespace statewatch::cluster {

constexpr std::size_t kSnapshotPartBytes = 4u << 20;

struct Snapshot {
  AppliedState applied;  // the stream position the snapshot is at: applied.position
  std::string blob;
  uint64_t entries = 0;  // keys, the applied-state entry not counted
  uint32_t parts = 0;
};

// Reads the whole of `store` through one RocksDB snapshot. FailedPrecondition when the
// store has applied nothing of a stream (no applied-state entry): there is nothing to
// restore from such a snapshot.
Result<Snapshot> EncodeSnapshot(const storage::Store& store,
                                std::size_t part_bytes = kSnapshotPartBytes);

// Checks every part of `blob` (sizes, FlatBuffers verification, part order, known family
// ids, a last part at the very end) and returns the applied state it restores to.
// Corruption naming the part and what is wrong otherwise.
Result<AppliedState> InspectSnapshot(std::string_view blob);

// Replaces the whole of `store` by the snapshot: checks it all first (InspectSnapshot; on
// error nothing is written), then writes the replacement marker (storage/store_replace.h),
// deletes every family's keys (in bounded batches), writes the parts one batch each, and
// the applied state with the marker's removal last, synced. A crash in between leaves the
// marker: the next cluster open or follow empties the store (ClearInterruptedReplace) and,
// at position 0 with the stream purged, restores again. REQUIRES: nothing
// else reads or writes `store` meanwhile (no engine open on it; a LocalLog on it must be
// Reload()ed afterwards).
Result<AppliedState> RestoreSnapshot(storage::Store& store, std::string_view blob);

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_CHECKPOINT_CODEC_H_

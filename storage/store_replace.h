// Replacing the whole contents of a store: a cluster checkpoint restore
// (docs/cluster-internals.md, "Checkpoints and purge") deletes every key and writes the
// snapshot's, in many batches. A crash part-way would leave part of the old state beside part
// of the new, which no open can make sense of. So the replacement is bracketed by a marker:
// BeginReplace writes it (synced) before the first key is deleted, and the batch that writes
// the last new key removes it (FinishReplace). A store that holds the marker was cut off
// mid-replacement; only its source (the partition's stream and checkpoint store) can rebuild
// it. ClearInterruptedReplace empties such a store so that the next fold starts from nothing
// and restores again; a single-node or read-only open refuses it (engine/checkpoint.cc).
//
// Thread contract: as Store::Write — one writer at a time, no engine open on the store.
#ifndef STATEWATCH_STORAGE_STORE_REPLACE_H_
#define STATEWATCH_STORAGE_STORE_REPLACE_H_

#include "statewatch/status.h"
#include "storage/store.h"

namespace statewatch::storage {

// Writes the marker, synced.
Status BeginReplace(Store& store);

// Deletes every key of every family except the marker, in unsynced batches of about 4 MiB
// (key by key: the families with memtable insert hints take no range deletes).
Status DeleteEveryKeyButTheMarker(Store& store);

// Adds the marker's removal to `last`, the batch that completes the replacement.
void FinishReplace(Batch& last);

// True when `store` holds the marker: a replacement was cut off.
Result<bool> ReplaceInterrupted(const Store& store);

// When the marker is present: deletes every key, the marker last (synced), and returns true;
// the store then reads as a new, empty database. Otherwise changes nothing, returns false.
Result<bool> ClearInterruptedReplace(Store& store);

}  // namespace statewatch::storage

#endif  // STATEWATCH_STORAGE_STORE_REPLACE_H_

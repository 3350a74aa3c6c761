// The body of a commit-group frame on a replicated partition log: the engine's compact
// record plus every keyed write of its group (journal rows, projections, names, the tool
// side tables), FlatBuffers `ClusterCommit` (schema/cluster_commit.fbs). A node that applies
// the writes and appends the record to its local log holds exactly what the owner wrote, so
// a fold of the stream alone rebuilds a node.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CLUSTER_COMMIT_CODEC_H_
#define STATEWATCH_CLUSTER_COMMIT_CODEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "storage/store.h"

namespace statewatch::cluster {

// The body for `record` and the writes of `writes` (null: none). Corruption when a write
// cannot be listed (storage::Batch::ForEachWrite).
Result<std::string> EncodeClusterCommit(std::string_view record, const storage::Batch* writes);

// by_seq's ids on the wire: format 4's runs, and format 3's row entries, which a decoder
// turns into one-row runs (engine/row_index.h) so that a log a format-3 build wrote still folds.
inline constexpr uint8_t kBySeqFormat3WireId = 2;
inline constexpr uint8_t kBySeqRunsWireId = 17;

// A family's id on the wire (commit groups and checkpoints): part of the stream's format,
// never the storage enum's value. Every family has one (>= 1).
uint8_t FamilyWireId(storage::Family f);
// The family of wire id `id`; nullopt for an id this build does not know.
std::optional<storage::Family> FamilyOfWireId(uint8_t id);

// Decodes `body`, adds its writes to `writes` (in the order they were made) and returns the
// record. Corruption, naming the size or the unknown family id, when `body` is not a
// well-formed ClusterCommit; `writes` is then left as it was given only if it was empty.
Result<std::string> DecodeClusterCommit(std::string_view body, storage::Batch* writes);

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_COMMIT_CODEC_H_

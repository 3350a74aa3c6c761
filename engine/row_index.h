// The persisted indexes of the retained journal rows (format 3), so that neither opening nor
// memory grows with the journal:
//   by_seq  'S' sequence -> RowIndex {session, occurred_at, dedupe_key?}: the global order of
//           the retained rows, which the row cap prunes from the front and the age pass walks
//           until no older row can follow;
//   dedupe  'D' key      -> DedupeEntry {session, sequence}: the retained event holding a
//           dedupe key.
// Both are written in the commit group's batch beside the row they index, so they are
// durable exactly when the row is. A row pruned by the row cap keeps its entries until
// compaction drops everything at or below the durable row-cap mark (as for the row itself);
// a reader ignores an entry at or below the mark. A row deleted by key (age pass, session
// delete) has its entries deleted in the same batch.
//
// Thread-safe: pure functions, except RowIndexEncoder (not thread-safe).
#ifndef STATEWATCH_ENGINE_ROW_INDEX_H_
#define STATEWATCH_ENGINE_ROW_INDEX_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "schema/session_ref.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::engine {

// One retained row in the global order (a by_seq entry, decoded).
struct IndexedRow {
  Sequence sequence = 0;
  SessionRef session;
  int64_t occurred_at = 0;
  std::string dedupe_key;  // empty: the event has none
};

// Encodes by_seq values with one reusable builder (the record path writes one per event).
// The returned view is valid until the next Encode. Not thread-safe.
class RowIndexEncoder {
 public:
  RowIndexEncoder();
  ~RowIndexEncoder();
  std::string_view Encode(SessionRef session, int64_t occurred_at, std::string_view dedupe_key);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};
// Verifies and decodes a by_seq value into `*out` (its sequence comes from the key).
Status DecodeRowIndex(std::string_view bytes, IndexedRow* out);

std::string EncodeDedupeEntry(SessionRef session, Sequence sequence);
struct DedupeEntryRec {
  SessionRef session;
  Sequence sequence = 0;
};
Result<DedupeEntryRec> DecodeDedupeEntry(std::string_view bytes);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_ROW_INDEX_H_

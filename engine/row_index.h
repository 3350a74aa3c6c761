// The persisted indexes of the retained journal rows, so that neither opening nor memory grows
// with the journal:
//   by_seq  'S' sequence -> RowRun: the rows one commit group appended, in sequence order, under
//           the sequence of the first (format 4; format 3 wrote an entry per row). Together
//           the runs are the global order of the retained rows, which the row cap prunes from
//           the front and the age pass walks until no older row can follow. A run holds each
//           row's session, time and whether it has a dedupe key; the row holds the key itself.
//           Runs never overlap: every member of a run precedes every member of the next.
//   dedupe  'D' key      -> DedupeEntry {session, sequence}: the retained event holding a
//           dedupe key.
// Both are written in the commit group's batch beside the rows they index, so they are
// durable exactly when the rows are. A row pruned by the row cap keeps its place in its run
// and its dedupe entry until compaction drops everything at or below the durable row-cap mark
// (as for the row itself; a run goes when its last member is at or below it); a reader
// ignores a member or an entry at or below the mark. A row deleted by key (age pass, session
// delete) is marked removed in its run, which is rewritten (or deleted once nothing in it is
// retained), and its dedupe entry is deleted, in the same batch.
//
// Thread-safe: pure functions, except RowRunWriter (not thread-safe).
#ifndef STATEWATCH_ENGINE_ROW_INDEX_H_
#define STATEWATCH_ENGINE_ROW_INDEX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "schema/session_ref.h"
#include "statewatch/status.h"
#include "statewatch/types.h"
#include "storage/store.h"

namespace statewatch::engine {

// One member of a by_seq run: a retained row in the global order.
struct IndexedRow {
  Sequence sequence = 0;
  SessionRef session;
  int64_t occurred_at = 0;
  bool keyed = false;    // the event holds a dedupe key (the row has it)
  bool removed = false;  // deleted by key; the member keeps its place in the run
};

// The most members one run holds, so that rewriting a run to remove a member stays cheap.
inline constexpr std::size_t kMaxRunMembers = 1024;

// Collects one commit group's rows and emits them as by_seq runs. Not thread-safe.
class RowRunWriter {
 public:
  RowRunWriter();
  ~RowRunWriter();
  void Clear();
  // Rows arrive in ascending sequence order.
  void Add(Sequence sequence, SessionRef session, int64_t occurred_at, bool keyed);
  // Calls `put(first_sequence, value)` for each run, in order: one for the whole group unless
  // a member's sequence or time cannot be stored relative to the run's first, or the run is
  // full. Each value is valid only during its call.
  void Emit(const std::function<void(Sequence, std::string_view)>& put);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

// The value of one run of `members` (ascending, non-empty, and fitting one run: those of a
// run read back, or RowRunWriter's cut), stored under the key of members.front().sequence.
std::string EncodeRowRun(std::span<const IndexedRow> members);
// Verifies and decodes the run stored under `first` (its key's sequence) into `*out`.
Status DecodeRowRun(Sequence first, std::string_view bytes, std::vector<IndexedRow>* out);
// The same from a by_seq key and value, with the key checked and the sequence in messages.
Status DecodeRowRunEntry(std::string_view key, std::string_view value,
                         std::vector<IndexedRow>* out);

// The one-row run equal to a format-3 by_seq value (a RowIndex per row), for the frames of a
// replicated log a format-3 build wrote. Corruption when `row_index` is not one.
Result<std::string> RunOfFormat3Entry(std::string_view row_index);

// An iterator over every by_seq run (position it with SeekRunHolding).
std::unique_ptr<storage::Iterator> NewRunIterator(const storage::Store& store);
// Positions `it` (over the by_seq family) on the run that may hold `sequence`: the last run
// whose key is at or below it, or else the first run after it (invalid when there is none).
void SeekRunHolding(storage::Iterator* it, Sequence sequence);

std::string EncodeDedupeEntry(SessionRef session, Sequence sequence);
struct DedupeEntryRec {
  SessionRef session;
  Sequence sequence = 0;
};
Result<DedupeEntryRec> DecodeDedupeEntry(std::string_view bytes);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_ROW_INDEX_H_

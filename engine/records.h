// Records: encoding and verified decoding of every persisted value (schema/statewatch.fbs).
// Decoders verify the buffer and return Corruption naming what failed.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_RECORDS_H_
#define STATEWATCH_ENGINE_RECORDS_H_

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "projections/log_fold.h"
#include "projections/projection_state.h"
#include "schema/session_ref.h"
#include "statewatch/changes_view.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::engine {

// The inputs of an event's fold, stored in its journal row (format 2) so that replay needs
// only the row and its group's record. Zero/empty fields cost nothing in the row.
struct EventFoldFields {
  bool notifies = false;
  bool seeds_cursor = false;
  SessionRef actor;                      // 0: not a known session
  std::span<const SessionRef> watchers;  // producer-passed, agent-scoped, deduplicated
};

std::string EncodeEvent(const Event& e, const EventFoldFields& fold = {});
// Verifies the buffer (untrusted bytes, `verify`) and decodes it.
Result<Event> DecodeEvent(std::string_view bytes);

// Encodes journal rows with one reusable builder (the record path's hot loop).
// The returned view is valid until the next Encode. Not thread-safe.
class EventEncoder {
 public:
  EventEncoder();
  ~EventEncoder();
  std::string_view Encode(const Event& e, const EventFoldFields& fold);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};

// What replay and the open-time row scan need from a journal row. Verified.
struct StoredEventFold {
  Sequence sequence = 0;
  bool notifies = false;
  bool seeds_cursor = false;
  SessionRef actor;
  std::vector<SessionRef> watchers;
  int64_t occurred_at = 0;
  std::string dedupe_key;
};
Status DecodeEventFold(std::string_view bytes, StoredEventFold* out);

// Runs the full FlatBuffers Verifier and DecodeEvent's checks over a journal row without
// building an Event (what `verify` runs over every row). With `fold`, also fills the row's
// fold inputs from the same verified root. Corruption when the row does not verify.
Status VerifyEventRow(std::string_view bytes, StoredEventFold* fold);

// Decodes a journal row into views of its bytes, for the read path (changesSince).
//
// Trust: rows written by the engine and read back from RocksDB are covered by RocksDB's own
// checksums (block CRCs in SST files, record CRCs in the WAL), so this decoder does not run
// the FlatBuffers Verifier again (it was 15% of a changesSince page). It still refuses a row
// whose root table or any string lies outside the row, and an unknown actor type. Bytes from
// anywhere else go through DecodeEvent; `verify` runs the full Verifier over every row.
// REQUIRES: `bytes` is 8-byte aligned (FlatBuffers reads scalars in place) and outlives
// `*out`.
Status DecodeEventView(std::string_view bytes, EventView* out);

std::string EncodeHead(const projections::HeadState& h);
Result<projections::HeadState> DecodeHead(std::string_view bytes);

std::string EncodeCursor(const projections::CursorRec& c);
// Encodes many cursors with one reusable builder (the fan-out path writes thousands).
// The returned view is valid until the next Encode.
class CursorEncoder {
 public:
  CursorEncoder();
  ~CursorEncoder();
  std::string_view Encode(const projections::CursorRec& c);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};
Result<projections::CursorRec> DecodeCursor(std::string_view bytes);

std::string EncodeSessionName(const SessionName& n);
Result<SessionName> DecodeSessionName(std::string_view bytes);

// One commit group's log record (schema GroupRecord), decoded. Reused by the leader.
struct GroupRec {
  Sequence first_sequence = 0;  // stored only when P > 1; otherwise decoding leaves 0 (replay
                                // derives it)
  int64_t committed_at = 0;
  std::vector<SessionRef> events;        // each event's session, in sequence order
  std::vector<projections::LogOp> ops;   // non-event operations, by sequence
  // Counters the group advanced (absolute values; 0: unchanged).
  uint64_t last_ref = 0;
  uint64_t last_delivery_id = 0;
  uint64_t last_message_index = 0;
  uint64_t rows_removed = 0;  // retained journal rows the group removed (format 3)
  std::size_t sequence_count() const { return events.size() + ops.size(); }
  void Clear();
};
// Encodes with one reusable builder; the view is valid until the next Encode.
// Not thread-safe.
class GroupEncoder {
 public:
  GroupEncoder();
  ~GroupEncoder();
  // `with_first_sequence`: write g.first_sequence (cluster numbering, P > 1, so that the
  // record names its own sequences and the replicated log can check its frame's counters);
  // otherwise leave it 0 (replay derives it).
  std::string_view Encode(const GroupRec& g, bool with_first_sequence = false);

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
};
// Verifies and decodes into `*out` (reusing its vectors).
Status DecodeGroup(std::string_view bytes, GroupRec* out);

// The on-disk format this build writes. 1: every commit wrote its log record per sequence,
// by_seq, dedupe, heads, cursors and meta; 2: one group record + rows per commit, the
// projections in checkpoints (docs/design.md); 3: format 2 plus the persisted row indexes
// (engine/row_index.h) and each group's removed-row count, so that an open reads no row;
// 4: format 3 with by_seq holding a run per commit group instead of an entry per row.
// Formats 1, 2 and 3 are migrated at the first writable open.
inline constexpr uint32_t kFormatVersion = 4;

// The meta record is the checkpoint's: written with the heads and cursors it covers.
struct MetaRec {
  uint32_t format_version = kFormatVersion;
  Sequence last_sequence = 0;
  uint64_t last_ref = 0;
  uint64_t journal_rows = 0;
  Sequence checkpoint_sequence = 0;
  int64_t last_prune_at = 0;
  uint64_t log_records_since_checkpoint = 0;
  uint64_t last_delivery_id = 0;
  uint64_t last_message_index = 0;
  Sequence row_cap_mark = 0;
  uint64_t applied_position = 0;  // the last log position folded into the checkpoint
  uint32_t partition = 0;         // the numbering (EngineOptions::partition/partitions)
  uint32_t partitions = 1;
};
// The sequence handed out after `last` under m's numbering: last + P, or P + p (n = 1) when
// nothing was handed out yet (log/partition.h). P = 1: last + 1.
inline Sequence NextSequence(const MetaRec& m, Sequence last) {
  return last == 0 ? Sequence{m.partitions} + m.partition : last + m.partitions;
}
std::string EncodeMeta(const MetaRec& m);
Result<MetaRec> DecodeMeta(std::string_view bytes);
// The meta record as the store holds it: `stored` decoded, or a fresh MetaRec when there is
// none yet (nullopt: a new database).
Result<MetaRec> DecodeStoredMeta(const std::optional<std::string>& stored);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_RECORDS_H_

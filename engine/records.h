// Records: encoding and verified decoding of every persisted value (schema/statewatch.fbs).
// Decoders verify the buffer and return Corruption naming what failed.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_RECORDS_H_
#define STATEWATCH_ENGINE_RECORDS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "projections/projection_state.h"
#include "schema/session_ref.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::engine {

std::string EncodeEvent(const Event& e);
// Verifies the buffer (untrusted bytes, `verify`) and decodes it.
Result<Event> DecodeEvent(std::string_view bytes);

// Decodes journal rows for a read path, reusing one aligned buffer across rows.
//
// Trust: rows written by the engine and read back from RocksDB are covered by RocksDB's own
// checksums (block CRCs in SST files, record CRCs in the WAL), so this decoder does not run
// the FlatBuffers Verifier again (it was 15% of a changesSince page). It still refuses a row
// whose root or string offsets point outside the row, and an unknown actor type. Bytes from
// anywhere else go through DecodeEvent; `verify` runs the full Verifier over every row.
//
// Not thread-safe: one per reader.
class TrustedEventDecoder {
 public:
  // Decodes `bytes` into `*out`, reusing its strings' capacity.
  Status Decode(std::string_view bytes, Event* out);

 private:
  std::vector<uint64_t> aligned_;
};

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

struct RowIndexRec {
  SessionRef session;
  int64_t occurred_at = 0;
  std::string dedupe_key;
};
std::string EncodeRowIndex(const RowIndexRec& r);
Result<RowIndexRec> DecodeRowIndex(std::string_view bytes);

struct DedupeRec {
  SessionRef session;
  Sequence sequence = 0;
};
std::string EncodeDedupe(const DedupeRec& d);
Result<DedupeRec> DecodeDedupe(std::string_view bytes);

// A log record in decoded form: what a sequence did to the projections.
struct LogRec {
  enum class Type { kEvent, kRegister, kAck, kReset, kDelete, kPrune, kSweep };
  Type type = Type::kEvent;
  Sequence sequence = 0;
  int64_t committed_at = 0;
  SessionRef session;  // event target / registration watcher / reset watcher / deleted session
  SessionRef target;   // registration target
  bool notifying = false;
  bool seeds_cursor = false;
  SessionRef actor;
  std::vector<SessionRef> refs;  // event watchers / acknowledged targets
  int64_t cursor_cutoff = 0;
  std::vector<projections::WatermarkRaise> raises;
};
std::string EncodeLog(const LogRec& r);
Result<LogRec> DecodeLog(std::string_view bytes);
// Applies a log record to a projection state (the one fold dispatch, live and replay).
void ApplyLog(const LogRec& r, projections::ProjectionState& state,
              projections::FoldEffects* fx);

std::string EncodeSessionRecord(const SessionRecord& r);
Result<SessionRecord> DecodeSessionRecord(std::string_view bytes);
// Overlays the fields present in `update` on `base`.
void MergeSessionRecord(const SessionRecord& update, SessionRecord* base);

std::string EncodeTranscriptMessage(const TranscriptMessage& m);
Result<TranscriptMessage> DecodeTranscriptMessage(std::string_view bytes);
std::string EncodeRun(const RunRecord& r);
Result<RunRecord> DecodeRun(std::string_view bytes);
std::string EncodeDelivery(const Delivery& d);
Result<Delivery> DecodeDelivery(std::string_view bytes);
std::string EncodeUpstreamLink(const UpstreamLink& l);
Result<UpstreamLink> DecodeUpstreamLink(std::string_view bytes);

struct MetaRec {
  uint32_t format_version = 1;
  Sequence last_sequence = 0;
  uint64_t last_ref = 0;
  uint64_t journal_rows = 0;
  Sequence checkpoint_sequence = 0;
  int64_t last_prune_at = 0;
  uint64_t log_records_since_checkpoint = 0;
  uint64_t last_delivery_id = 0;
  uint64_t last_message_index = 0;
  Sequence row_cap_mark = 0;
};
std::string EncodeMeta(const MetaRec& m);
Result<MetaRec> DecodeMeta(std::string_view bytes);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_RECORDS_H_

// EngineImpl: the projection snapshot (checkpoint), verify and rebuild (architecture.md §4).
//
// The log holds every record since the last checkpoint; the base family holds the
// projections as they were at that checkpoint. Verify folds the log over the base with the
// same fold code the live path uses and diffs the result with the live projections, both as
// persisted and as held in memory.
#include <spdlog/spdlog.h>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {

constexpr std::size_t kMaxDifferences = 100;

// Every key of the projection families starts with one of these tags ('C', 'H', 'M').
const std::string kAllBegin(1, 'A');
const std::string kAllEnd(1, 'Z');

// Writes the state's heads into `heads_family` and its cursors into `cursors_family` (the
// snapshot keeps both in the base family).
void PutState(storage::Batch& b, Family heads_family, Family cursors_family,
              const projections::ProjectionState& s) {
  s.ForEachHead([&](SessionRef ref, const projections::HeadState& h) {
    b.Put(heads_family, storage::HeadKey(ref), EncodeHead(h));
  });
  s.ForEachCursor([&](projections::CursorId id, const projections::CursorRec& c) {
    b.Put(cursors_family, storage::CursorKey(id.watcher, id.target), EncodeCursor(c));
  });
}

}  // namespace

bool EngineImpl::CheckpointDueLocked() const {
  uint64_t size = state_.head_count() + state_.cursor_count();
  uint64_t threshold = std::max<uint64_t>(options_.checkpoint_min_records, 2 * size);
  return sticky_error_.ok() && space_error_.ok() && !options_.read_only &&
         meta_.log_records_since_checkpoint >= threshold;
}

Status EngineImpl::MaybeCheckpoint() {
  {
    // Runs after every commit group: decide under the shared lock, so readers are not held
    // up by a check that almost always says "not yet".
    std::shared_lock check(state_mu_);
    if (!CheckpointDueLocked()) return Status::OK();
  }
  std::unique_lock lock(state_mu_);
  if (!CheckpointDueLocked()) return Status::OK();
  storage::Batch b(*store_);
  b.DeleteRange(Family::kBase, kAllBegin, kAllEnd);
  PutState(b, Family::kBase, Family::kBase, state_);
  std::string mark;
  storage::PutFixed64BE(&mark, meta_.last_sequence);
  b.Put(Family::kBase, storage::BaseMarkKey(), mark);
  b.DeleteRange(Family::kLog, storage::LogKey(0), storage::LogKey(meta_.last_sequence + 1));
  MetaRec next = meta_;
  next.checkpoint_sequence = meta_.last_sequence;
  next.log_records_since_checkpoint = 0;
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(next));
  Status st = store_->Write(b, options_.durability == Durability::kSync);
  if (!st.ok()) {
    NoteWriteFailureLocked(st);
    return st;
  }
  meta_ = next;
  return Status::OK();
}

Result<projections::ProjectionState> EngineImpl::RebuildFromLog(VerifyReport* report) const {
  projections::ProjectionState rebuilt;
  SW_RETURN_IF_ERROR(LoadProjections(rebuilt, Family::kBase));
  Sequence base = 0;
  auto mark = store_->Get(Family::kBase, storage::BaseMarkKey());
  if (!mark.ok()) return mark.status();
  if (mark->has_value() && (*mark)->size() == 8) base = storage::DecodeFixed64BE((*mark)->data());
  if (base != meta_.checkpoint_sequence) {
    report->differences.push_back("snapshot is at sequence " + std::to_string(base) +
                                  " but meta says " + std::to_string(meta_.checkpoint_sequence));
  }
  auto it = store_->NewIterator(Family::kLog, storage::LogKey(base + 1),
                                std::string(1, storage::kLogTag + 1));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto rec = DecodeLog(it->value());
    if (!rec.ok()) return rec.status();
    ApplyLog(*rec, rebuilt, nullptr);
    ++report->records_replayed;
  }
  SW_RETURN_IF_ERROR(it->status());
  return rebuilt;
}

// The read paths trust journal rows (RocksDB's checksums cover them, engine/records.h);
// verify is where every row also passes the FlatBuffers Verifier.
Status EngineImpl::VerifyJournalRows() const {
  auto it = store_->NewIterator(Family::kJournal);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = storage::ParseJournalKey(it->key());
    if (!key) return Status::Corruption("journal key of " + std::to_string(it->key().size()) +
                                        " bytes is malformed");
    if (key->sequence <= meta_.row_cap_mark) continue;  // gone, awaiting compaction
    auto e = DecodeEvent(it->value());
    if (!e.ok()) {
      return Status::Corruption("journal row of session #" + std::to_string(key->session.value) +
                                " sequence " + std::to_string(key->sequence) + ": " +
                                e.status().message());
    }
  }
  return it->status();
}

void EngineImpl::ApplyVerify(Command& cmd, bool replace) {
  VerifyReport& report = cmd.verify;
  auto rebuilt = RebuildFromLog(&report);
  if (!rebuilt.ok()) {
    cmd.status = rebuilt.status();
    return;
  }
  projections::ProjectionState persisted;
  cmd.status = LoadProjections(persisted, Family::kHeads);
  if (cmd.status.ok()) cmd.status = LoadProjections(persisted, Family::kCursors);
  if (!cmd.status.ok()) return;
  uint64_t rows = 0;
  auto it = store_->NewIterator(Family::kBySeq, storage::BySeqKey(meta_.row_cap_mark + 1),
                                std::string(1, storage::kBySeqTag + 1));
  for (it->SeekToFirst(); it->Valid(); it->Next()) ++rows;
  // A damaged block ends the iteration early: that is corruption, not a row-count difference.
  cmd.status = it->status();
  if (cmd.status.ok()) cmd.status = store_->VerifyChecksums();
  if (cmd.status.ok()) cmd.status = VerifyJournalRows();
  if (!cmd.status.ok()) return;

  std::unique_lock lock(state_mu_);
  for (std::string& d : persisted.Diff(*rebuilt, kMaxDifferences)) {
    report.differences.push_back("persisted vs rebuilt: " + d);
  }
  for (std::string& d : state_.Diff(persisted, kMaxDifferences)) {
    report.differences.push_back("memory vs persisted: " + d);
  }
  if (rows != meta_.journal_rows) {
    report.differences.push_back("journal row count is " + std::to_string(meta_.journal_rows) +
                                 " but " + std::to_string(rows) + " rows are retained");
  }
  report.heads_checked = rebuilt->head_count();
  report.cursors_checked = rebuilt->cursor_count();
  report.ok = report.differences.empty();
  if (!replace) return;
  if (Status writable = WritableLocked(); !writable.ok()) {
    cmd.status = writable;
    return;
  }

  storage::Batch b(*store_);
  // Point deletes, not DeleteRange: heads and cursors use memtable insert hints, which
  // RocksDB 7.8 cannot combine with range tombstones (storage/store.cc).
  persisted.ForEachHead([&](SessionRef ref, const projections::HeadState&) {
    b.Delete(Family::kHeads, storage::HeadKey(ref));
  });
  persisted.ForEachCursor([&](projections::CursorId id, const projections::CursorRec&) {
    b.Delete(Family::kCursors, storage::CursorKey(id.watcher, id.target));
  });
  PutState(b, Family::kHeads, Family::kCursors, *rebuilt);
  MetaRec next = meta_;
  next.journal_rows = rows;
  b.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(next));
  cmd.status = store_->Write(b, options_.durability == Durability::kSync);
  if (!cmd.status.ok()) {
    NoteWriteFailureLocked(cmd.status);
    return;
  }
  meta_ = next;
  state_ = std::move(*rebuilt);
}

}  // namespace statewatch::engine

// EngineImpl: verify and rebuild (docs/design.md).
//
// The projections in memory must equal the checkpoint with the log after it folded in by
// the same fold code (projections/log_fold.h) — exactly what an open after a crash would
// compute. Verify rebuilds that state from disk, diffs it with memory, recounts the retained
// rows, and runs the full FlatBuffers Verifier over every journal row and RocksDB's checksum
// over every SST block (the read paths trust both). Rebuild then replaces the projections
// with the rebuilt ones and writes them as a full checkpoint.
#include <spdlog/spdlog.h>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {
constexpr std::size_t kMaxDifferences = 100;

// A row's share of the digest that the journal and by_seq must agree on: a sum of mixed
// (session, sequence) pairs, so that the two walks (in different key orders) compare.
uint64_t RowDigest(SessionRef session, Sequence sequence) {
  uint64_t x = session.value * 0x9E3779B97F4A7C15ull ^ sequence;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  return x ^ (x >> 29);
}
}  // namespace

Status EngineImpl::VerifyJournalRows(Sequence fold_after, uint64_t* rows, uint64_t* digest,
                                     RowFolds* folds) const {
  *rows = 0;
  *digest = 0;
  auto it = store_->NewIterator(Family::kJournal);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto key = storage::ParseJournalKey(it->key());
    if (!key) return Status::Corruption("journal key of " + std::to_string(it->key().size()) +
                                        " bytes is malformed");
    // Rows at or below the cap mark still exist until compaction drops them, and a replayed
    // prune may have raised the mark after a fold read them: keep their fold inputs too.
    const bool retained = key->sequence > meta_.row_cap_mark;  // else gone, awaiting compaction
    RowFold* entry = nullptr;
    if (key->sequence > fold_after) {
      entry = &(*folds)[key->sequence];
      entry->session = key->session;
    }
    Status row = VerifyEventRow(it->value(), entry ? &entry->fold : nullptr);
    if (!row.ok() && entry != nullptr) folds->erase(key->sequence);  // the fold reports it
    if (!retained) continue;
    if (!row.ok()) {
      return Status::Corruption("journal row of session #" + std::to_string(key->session.value) +
                                " sequence " + std::to_string(key->sequence) + ": " +
                                row.message());
    }
    ++*rows;
    *digest += RowDigest(key->session, key->sequence);
  }
  return it->status();
}

Status EngineImpl::VerifyRowIndexes(uint64_t rows, uint64_t digest, VerifyReport* report) const {
  uint64_t indexed = 0, indexed_digest = 0, with_dedupe = 0, dedupe_entries = 0;
  Sequence previous = 0;  // the last member of the run before
  std::vector<IndexedRow> run;
  auto it = NewRunIterator(*store_);
  for (SeekRunHolding(it.get(), meta_.row_cap_mark + 1); it->Valid(); it->Next()) {
    SW_RETURN_IF_ERROR(DecodeRowRunEntry(it->key(), it->value(), &run));
    if (run.front().sequence <= previous) {
      report->differences.push_back("the by_seq run at sequence " +
                                    std::to_string(run.front().sequence) +
                                    " overlaps the run before (which ends at " +
                                    std::to_string(previous) + ")");
    }
    previous = run.back().sequence;
    for (const IndexedRow& row : run) {
      if (row.removed || row.sequence <= meta_.row_cap_mark) continue;
      ++indexed;
      indexed_digest += RowDigest(row.session, row.sequence);
      if (row.keyed) ++with_dedupe;
    }
  }
  SW_RETURN_IF_ERROR(it->status());
  auto d = store_->NewIterator(Family::kDedupe, std::string(1, storage::kDedupeTag),
                               std::string(1, storage::kDedupeTag + 1));
  for (d->SeekToFirst(); d->Valid(); d->Next()) {
    auto entry = DecodeDedupeEntry(d->value());
    if (!entry.ok()) return Status::Corruption("dedupe entry: " + entry.status().message());
    if (entry->sequence > meta_.row_cap_mark) ++dedupe_entries;
  }
  SW_RETURN_IF_ERROR(d->status());
  if (indexed != rows || indexed_digest != digest) {
    report->differences.push_back("the by_seq index holds " + std::to_string(indexed) +
                                  " rows but the journal " + std::to_string(rows) +
                                  (indexed == rows ? " (other rows)" : ""));
  }
  if (dedupe_entries != with_dedupe) {
    report->differences.push_back("the dedupe index holds " + std::to_string(dedupe_entries) +
                                  " keys but " + std::to_string(with_dedupe) +
                                  " retained rows have one");
  }
  return Status::OK();
}

Status EngineImpl::RunVerify(VerifyCmd& cmd) {
  VerifyReport& report = cmd.report;
  auto stored = store_->Get(Family::kMeta, storage::MetaKey());
  if (!stored.ok()) return stored.status();
  auto m = DecodeStoredMeta(*stored);
  if (!m.ok()) return m.status();
  MetaRec rebuilt_meta = *m;
  projections::ProjectionState rebuilt;
  SW_RETURN_IF_ERROR(LoadProjections(rebuilt));
  // One walk of the journal verifies every row and gathers the fold inputs of the rows the
  // log replays (those after the checkpoint), so the fold needs no point Get per event
  // (those Gets were most of verify's time).
  uint64_t rows = 0, digest = 0;
  RowFolds folds;
  SW_RETURN_IF_ERROR(VerifyJournalRows(rebuilt_meta.last_sequence, &rows, &digest, &folds));
  SW_RETURN_IF_ERROR(ReplayLog(rebuilt, &rebuilt_meta, &report.records_replayed, &folds));
  SW_RETURN_IF_ERROR(VerifyRowIndexes(rows, digest, &report));
  SW_RETURN_IF_ERROR(store_->VerifyChecksums());

  for (std::string& d : state_.Diff(rebuilt, kMaxDifferences)) {
    report.differences.push_back("memory vs checkpoint + log: " + d);
  }
  if (rebuilt_meta.last_sequence != meta_.last_sequence) {
    report.differences.push_back("the log ends at sequence " +
                                 std::to_string(rebuilt_meta.last_sequence) +
                                 " but memory is at " + std::to_string(meta_.last_sequence));
  }
  if (rows != meta_.journal_rows || rows != rebuilt_meta.journal_rows) {
    report.differences.push_back(
        "journal row count is " + std::to_string(meta_.journal_rows) +
        " (checkpoint + log: " + std::to_string(rebuilt_meta.journal_rows) + ") but " +
        std::to_string(rows) + " rows are retained");
  }
  report.rows_checked = rows;
  report.heads_checked = rebuilt.head_count();
  report.cursors_checked = rebuilt.cursor_count();
  report.ok = report.differences.empty();
  if (!cmd.replace) return Status::OK();
  {
    std::unique_lock lock(state_mu_);
    SW_RETURN_IF_ERROR(WritableLocked());
  }
  // A full checkpoint of the rebuilt state: point deletes of everything persisted (heads and
  // cursors use memtable insert hints, which RocksDB 7.8 cannot combine with range
  // tombstones, storage/store.cc), then every head and cursor.
  storage::Batch b(*store_);
  projections::ProjectionState persisted;
  SW_RETURN_IF_ERROR(LoadProjections(persisted));
  persisted.ForEachHead([&](SessionRef ref, const projections::HeadState&) {
    b.Delete(Family::kHeads, storage::HeadKey(ref));
  });
  persisted.ForEachCursor([&](projections::CursorId id, const projections::CursorRec&) {
    b.Delete(Family::kCursors, storage::CursorKey(id.watcher, id.target));
  });
  rebuilt.ForEachHead([&](SessionRef ref, const projections::HeadState& h) {
    b.Put(Family::kHeads, storage::HeadKey(ref), EncodeHead(h));
  });
  rebuilt.ForEachCursor([&](projections::CursorId id, const projections::CursorRec& c) {
    b.Put(Family::kCursors, storage::CursorKey(id.watcher, id.target), EncodeCursor(c));
  });
  MetaRec next;
  {
    std::unique_lock lock(state_mu_);
    meta_.journal_rows = rows;  // the count of what is there
  }
  SW_RETURN_IF_ERROR(WriteCheckpoint(b, &next));
  std::unique_lock lock(state_mu_);
  rebuilt.ClearDirty();
  state_ = std::move(rebuilt);
  meta_.checkpoint_sequence = next.checkpoint_sequence;
  lock.unlock();
  return PurgeLog(next.applied_position + 1);
}

}  // namespace statewatch::engine

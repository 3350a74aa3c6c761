// EngineImpl: retention (docs/semantics.md, "Retention").
//
// The row cap is enforced inside every commit group, in the same record as the appends that
// overflow it, so the journal never grows past it. It deletes nothing by key: the rows it
// removes are always the oldest in the global order (by_seq's runs, engine/row_index.h), so the
// prune op moves the row-cap mark (every row at or below it is gone; reads start above it;
// compaction drops the rows and their index entries once a checkpoint holds the mark). The
// age pass (and idle-cursor expiry) runs at open, on demand, and at most once per interval
// after writes; it deletes rows by key. Both raise the watermarks of the sessions they delete
// from in the same prune op, so historyGap is exact.
//
// Rows deleted by key are gone for replay too, so a group that deletes rows by key (the age
// pass, a session delete) runs alone and after a checkpoint covering every row it deletes.
#include <algorithm>
#include <map>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

void EngineImpl::AddPrune(const std::vector<RowRef>& rows, int64_t cursor_cutoff,
                          Sequence new_cap_mark) {
  std::map<uint64_t, Sequence> raises;
  for (const RowRef& r : rows) {
    Sequence& mark = raises[r.session.value];
    mark = std::max(mark, r.sequence);
  }
  projections::LogOp& op = AddOp(projections::LogOp::Type::kPrune);
  op.cursor_cutoff = cursor_cutoff;
  op.row_cap_mark = new_cap_mark;
  for (const auto& [s, seq] : raises) op.raises.push_back({SessionRef{s}, seq});
  group_.rows_pruned += rows.size();
  if (group_.prune_stats) {
    group_.prune_stats->rows_deleted += rows.size();
    group_.prune_stats->sessions_touched += raises.size();
  }
}

Status EngineImpl::ForEachIndexedRow(Sequence after,
                                     const std::function<bool(const IndexedRow&)>& fn) const {
  auto it = NewRunIterator(*store_);
  std::vector<IndexedRow> run;
  for (SeekRunHolding(it.get(), after + 1); it->Valid(); it->Next()) {
    SW_RETURN_IF_ERROR(DecodeRowRunEntry(it->key(), it->value(), &run));
    for (const IndexedRow& row : run) {
      if (row.sequence <= after || row.removed) continue;
      if (!fn(row)) return Status::OK();
    }
  }
  return it->status();
}

Status EngineImpl::WriteRowRuns() {
  Group& g = group_;
  g.row_runs.Emit([&g](Sequence first, std::string_view run) {
    g.batch.Put(Family::kBySeq, storage::BySeqKeyFixed(first).view(), run);
  });
  if (g.deleted_rows.empty()) return Status::OK();
  // The rows deleted by key are retained rows of earlier groups (such a group runs alone):
  // each is marked removed in its run, and a run with no retained member left goes.
  std::vector<Sequence> gone = g.deleted_rows;
  std::sort(gone.begin(), gone.end());
  auto it = NewRunIterator(*store_);
  std::vector<IndexedRow> run;
  std::string run_key;
  bool changed = false;
  auto put_back = [&] {
    if (!changed) return;
    const Sequence mark = g.meta.row_cap_mark;
    bool retained = std::any_of(run.begin(), run.end(), [mark](const IndexedRow& m) {
      return !m.removed && m.sequence > mark;
    });
    if (retained) {
      g.batch.Put(Family::kBySeq, run_key, EncodeRowRun(run));
    } else {
      g.batch.Delete(Family::kBySeq, run_key);
    }
    changed = false;
  };
  for (Sequence seq : gone) {
    if (run.empty() || seq > run.back().sequence) {
      put_back();
      run.clear();
      SeekRunHolding(it.get(), seq);
      SW_RETURN_IF_ERROR(it->status());
      if (!it->Valid()) continue;  // unindexed (verify reports it); nothing to mark
      SW_RETURN_IF_ERROR(DecodeRowRunEntry(it->key(), it->value(), &run));
      run_key.assign(it->key());
    }
    auto m = std::lower_bound(run.begin(), run.end(), seq, [](const IndexedRow& r, Sequence s) {
      return r.sequence < s;
    });
    if (m == run.end() || m->sequence != seq || m->removed) continue;
    m->removed = true;
    changed = true;
  }
  put_back();
  return Status::OK();
}

Result<std::optional<std::string>> EngineImpl::DedupeKeyOfRow(const IndexedRow& row) const {
  auto bytes = store_->Get(Family::kJournal, storage::JournalKey(row.session, row.sequence));
  if (!bytes.ok()) return bytes.status();
  StoredEventFold fold;
  if (!bytes->has_value() || !DecodeEventFold(**bytes, &fold).ok()) {
    return std::optional<std::string>();
  }
  return std::optional<std::string>(std::move(fold.dedupe_key));
}

Status EngineImpl::DeleteDedupeEntriesOf(const std::vector<RowRef>& rows) {
  if (rows.empty()) return Status::OK();
  auto it = store_->NewIterator(Family::kDedupe, std::string(1, storage::kDedupeTag),
                                std::string(1, storage::kDedupeTag + 1));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto entry = DecodeDedupeEntry(it->value());
    if (!entry.ok()) continue;  // verify reports it
    bool hit = std::any_of(rows.begin(), rows.end(), [&](const RowRef& r) {
      return r.sequence == entry->sequence && r.session == entry->session;
    });
    if (hit) group_.batch.Delete(Family::kDedupe, it->key());
  }
  return it->status();
}

Status EngineImpl::ExtendCapFront(bool* more) {
  const Sequence after = cap_front_.empty()
                             ? meta_.row_cap_mark
                             : std::max(meta_.row_cap_mark, cap_front_.back().sequence);
  std::size_t read = 0;
  Status st = ForEachIndexedRow(after, [&](const IndexedRow& row) {
    cap_front_.push_back(RowRef{row.sequence, row.session});
    return ++read < kCapFrontChunk;
  });
  *more = read > 0;
  return st;
}

Status EngineImpl::EnforceRowCap() {
  Group& g = group_;
  const uint64_t deleted = g.deleted_rows.size();
  const uint64_t rows = meta_.journal_rows + g.events.size() - deleted;
  uint64_t capped = 0;
  if (rows > options_.max_rows) {
    const uint64_t excess = rows - options_.max_rows;
    std::vector<RowRef> oldest;
    oldest.reserve(excess);
    // The retained rows first (skipping those this group deletes by key), then this group's.
    for (std::size_t i = 0; oldest.size() < excess; ++i) {
      if (i == cap_front_.size()) {
        bool more = false;
        SW_RETURN_IF_ERROR(ExtendCapFront(&more));
        if (!more) break;
      }
      const RowRef& r = cap_front_[i];
      if (deleted && std::binary_search(g.deleted_rows.begin(), g.deleted_rows.end(), r.sequence)) {
        continue;
      }
      oldest.push_back(r);
    }
    for (const Group::NewEvent& e : g.events) {
      if (oldest.size() == excess) break;
      oldest.push_back(RowRef{e.sequence, e.session});
    }
    capped = oldest.size();
    g.meta.row_cap_mark = std::max(g.meta.row_cap_mark, oldest.back().sequence);
    AddPrune(oldest, /*cursor_cutoff=*/0, g.meta.row_cap_mark);
  }
  g.rec.rows_removed = deleted + capped;
  g.meta.journal_rows = rows - capped;
  return Status::OK();
}

Status EngineImpl::ForEachRowAgedBefore(int64_t cutoff,
                                        const std::function<void(const IndexedRow&)>& fn) {
  return ForEachIndexedRow(group_.meta.row_cap_mark, [&](const IndexedRow& row) {
    // Every later row was committed no earlier, so its occurredAt is at least this row's
    // minus the clamp window: none of them can be older than the cutoff.
    if (row.occurred_at >= cutoff + kClampWindowMs) return false;
    if (row.occurred_at < cutoff) fn(row);
    return true;
  });
}

void EngineImpl::DeleteRowByKey(SessionRef session, Sequence sequence,
                                std::string_view dedupe_key) {
  Group& g = group_;
  g.batch.Delete(Family::kJournal, storage::JournalKeyFixed(session, sequence).view());
  if (!dedupe_key.empty()) g.batch.Delete(Family::kDedupe, storage::DedupeKey(dedupe_key));
  g.deleted_rows.push_back(sequence);
}

Status EngineImpl::BuildPrune(PruneCmd& cmd) {
  Group& g = group_;
  g.prune_stats = &cmd.stats;
  const int64_t cutoff = g.now - options_.retention_ms;
  std::vector<RowRef> aged;
  std::vector<RowRef> unreadable;  // keyed rows whose key must be found in the dedupe index
  Status read;
  SW_RETURN_IF_ERROR(ForEachRowAgedBefore(cutoff, [&](const IndexedRow& row) {
    std::optional<std::string> dedupe_key;
    if (row.keyed && read.ok()) {
      auto key = DedupeKeyOfRow(row);
      if (!key.ok()) {
        read = key.status();
      } else if (!key->has_value()) {
        unreadable.push_back(RowRef{row.sequence, row.session});
      } else {
        dedupe_key = std::move(*key);
      }
    }
    DeleteRowByKey(row.session, row.sequence, dedupe_key.value_or(std::string()));
    aged.push_back(RowRef{row.sequence, row.session});
  }));
  SW_RETURN_IF_ERROR(read);
  SW_RETURN_IF_ERROR(DeleteDedupeEntriesOf(unreadable));
  g.meta.last_prune_at = g.now;
  bool expire = state_.AnyCursorIdleBefore(cutoff);
  if (!aged.empty() || expire) AddPrune(aged, expire ? cutoff : 0, /*new_cap_mark=*/0);
  return Status::OK();  // then the row cap over the survivors (RunGroup)
}

Result<bool> EngineImpl::RowsAfterCheckpoint(SessionRef session, int64_t cutoff) const {
  const Sequence after = std::max(meta_.checkpoint_sequence, meta_.row_cap_mark);
  if (session) {
    auto it = store_->NewIterator(Family::kJournal, storage::JournalKey(session, after + 1),
                                  storage::JournalPrefix(SessionRef{session.value + 1}));
    it->SeekToFirst();
    if (!it->status().ok()) return it->status();
    return it->Valid();
  }
  // The rows after the checkpoint are the newest: at most the checkpoint interval of them.
  bool aged = false;
  SW_RETURN_IF_ERROR(ForEachIndexedRow(after, [&](const IndexedRow& row) {
    aged = row.occurred_at < cutoff;
    return !aged;
  }));
  return aged;
}

Status EngineImpl::CheckpointBeforeDeletes(const Command& cmd, int64_t now) {
  const auto* del = std::get_if<DeleteCmd>(&cmd.op);
  if (!del && !std::holds_alternative<PruneCmd>(cmd.op)) return Status::OK();
  SessionRef ref;
  if (del) {
    ref = FindRef(del->target);
    if (!ref) return Status::OK();
  }
  auto uncovered = RowsAfterCheckpoint(ref, now - options_.retention_ms);
  if (!uncovered.ok()) return uncovered.status();
  return *uncovered ? Checkpoint() : Status::OK();
}

}  // namespace statewatch::engine

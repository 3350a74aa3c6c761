// EngineImpl: retention (docs/semantics.md, "Retention").
//
// The row cap is enforced inside every commit group, in the same record as the appends that
// overflow it, so the journal never grows past it. It deletes nothing by key: the rows it
// removes are always the oldest in the global order (by_seq, engine/row_index.h), so the
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

// Calls `fn` for the by_seq entries after `after`, in sequence order, while it returns true.
Status EngineImpl::ForEachIndexedRow(Sequence after,
                                     const std::function<bool(const IndexedRow&)>& fn) const {
  auto it = store_->NewIterator(Family::kBySeq, storage::BySeqKey(after + 1),
                                std::string(1, storage::kBySeqTag + 1));
  IndexedRow row;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto seq = storage::ParseSequenceKey(storage::kBySeqTag, it->key());
    if (!seq) {
      return Status::Corruption("by_seq key of " + std::to_string(it->key().size()) +
                                " bytes is malformed");
    }
    Status decoded = DecodeRowIndex(it->value(), &row);
    if (!decoded.ok()) {
      return Status::Corruption("by_seq entry of sequence " + std::to_string(*seq) + ": " +
                                decoded.message());
    }
    row.sequence = *seq;
    if (!fn(row)) break;
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
  g.batch.Delete(Family::kBySeq, storage::BySeqKey(sequence));
  if (!dedupe_key.empty()) g.batch.Delete(Family::kDedupe, storage::DedupeKey(dedupe_key));
  g.deleted_rows.push_back(sequence);
}

Status EngineImpl::BuildPrune(PruneCmd& cmd) {
  Group& g = group_;
  g.prune_stats = &cmd.stats;
  const int64_t cutoff = g.now - options_.retention_ms;
  std::vector<RowRef> aged;
  SW_RETURN_IF_ERROR(ForEachRowAgedBefore(cutoff, [&](const IndexedRow& row) {
    DeleteRowByKey(row.session, row.sequence, row.dedupe_key);
    aged.push_back(RowRef{row.sequence, row.session});
  }));
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

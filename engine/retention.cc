// EngineImpl: retention (semantics.md §5). The row cap is enforced inside every commit group,
// in the same batch as the appends that overflow it, so the journal never grows past it; the
// age pass (and idle-cursor expiry) runs at open, on demand, and at most once per interval
// after writes. Each pass first raises the watermarks of the sessions it deletes from (in the
// same batch: the PruneRecord's fold), so historyGap is exact.
#include <map>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {

using Row = std::pair<Sequence, RowIndexRec>;

// Reads by_seq from `from`, handing each retained row to `take`, which returns false to stop.
template <typename F>
Status ScanRows(const storage::Store& store, Sequence from, F&& take) {
  auto it = store.NewIterator(Family::kBySeq, storage::BySeqKey(from),
                              std::string(1, storage::kBySeqTag + 1));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto seq = storage::ParseSequenceKey(storage::kBySeqTag, it->key());
    if (!seq) return Status::Corruption("bad by_seq key");
    auto rec = DecodeRowIndex(it->value());
    if (!rec.ok()) return rec.status();
    if (!take(Row{*seq, std::move(*rec)})) break;
  }
  return it->status();
}

}  // namespace

Status EngineImpl::EnforceRowCap(Group& g, PruneStats* stats) {
  if (meta_.journal_rows <= options_.max_rows) return Status::OK();
  uint64_t excess = meta_.journal_rows - options_.max_rows;
  std::vector<Row> rows;
  Sequence last = 0;
  Status st = ScanRows(*store_, by_seq_hint_, [&](Row r) {
    last = r.first;
    if (!g.removed_rows.count(r.first)) rows.push_back(std::move(r));
    return rows.size() < excess;
  });
  SW_RETURN_IF_ERROR(st);
  SW_RETURN_IF_ERROR(DeleteRows(rows, g, stats, /*cursor_cutoff=*/0));
  // Everything below the last row visited is gone now: later scans start past it.
  if (last > 0) by_seq_hint_ = last + 1;
  return Status::OK();
}

Status EngineImpl::ApplyPrune(Command& cmd, Group& g) {
  int64_t cutoff = g.now - options_.retention_ms;
  std::vector<Row> aged, oldest;
  uint64_t retained = 0;
  Status st = ScanRows(*store_, by_seq_hint_, [&](Row r) {
    if (g.removed_rows.count(r.first)) return true;
    if (r.second.occurred_at < cutoff) {
      aged.push_back(std::move(r));
    } else {
      ++retained;
      oldest.push_back(std::move(r));
    }
    return true;
  });
  SW_RETURN_IF_ERROR(st);
  // The row cap keeps the newest rows: drop the oldest survivors past it.
  if (retained > options_.max_rows) {
    oldest.resize(retained - options_.max_rows);
    aged.insert(aged.end(), oldest.begin(), oldest.end());
  }
  meta_.last_prune_at = g.now;
  return DeleteRows(aged, g, &cmd.prune, cutoff);
}

Status EngineImpl::DeleteRows(const std::vector<Row>& rows, Group& g, PruneStats* stats,
                              int64_t cursor_cutoff) {
  std::map<uint64_t, Sequence> raises;
  uint64_t deleted = 0;
  for (const auto& [seq, r] : rows) {
    if (!g.removed_rows.insert(seq).second) continue;
    ++deleted;
    g.batch.Delete(Family::kJournal, storage::JournalKey(r.session, seq));
    g.batch.Delete(Family::kBySeq, storage::BySeqKey(seq));
    if (!r.dedupe_key.empty()) g.batch.Delete(Family::kDedupe, storage::DedupeKey(r.dedupe_key));
    --meta_.journal_rows;
    Sequence& mark = raises[r.session.value];
    mark = std::max(mark, seq);
  }
  bool expire = cursor_cutoff > 0 && state_.AnyCursorIdleBefore(cursor_cutoff);
  if (raises.empty() && !expire) return Status::OK();
  LogRec rec;
  rec.type = LogRec::Type::kPrune;
  rec.cursor_cutoff = expire ? cursor_cutoff : 0;
  for (const auto& [s, seq] : raises) rec.raises.push_back({SessionRef{s}, seq});
  std::size_t cursors_before = state_.cursor_count();
  AppendLog(rec, g);
  stats->rows_deleted += deleted;
  stats->sessions_touched += raises.size();
  stats->cursors_expired += cursors_before - state_.cursor_count();
  return Status::OK();
}

}  // namespace statewatch::engine

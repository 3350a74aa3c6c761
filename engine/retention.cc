// EngineImpl: retention (semantics.md §5). The row cap is enforced inside every commit group,
// in the same batch as the appends that overflow it, so the journal never grows past it; the
// age pass (and idle-cursor expiry) runs at open, on demand, and at most once per interval
// after writes. Both find their rows in rows_, the in-memory mirror of by_seq. Each pass first raises the watermarks of the sessions it deletes from (in the
// same batch: the PruneRecord's fold), so historyGap is exact.
#include <map>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

Status EngineImpl::EnforceRowCap(Group& g, PruneStats* stats) {
  if (rows_.size() <= options_.max_rows) return Status::OK();
  std::vector<Sequence> oldest;
  oldest.reserve(rows_.size() - options_.max_rows);
  for (auto it = rows_.begin(); oldest.size() < rows_.size() - options_.max_rows; ++it) {
    oldest.push_back(it->first);
  }
  return DeleteRows(oldest, g, stats, /*cursor_cutoff=*/0, /*by_mark=*/true);
}

Status EngineImpl::ApplyPrune(Command& cmd, Group& g) {
  int64_t cutoff = g.now - options_.retention_ms;
  std::vector<Sequence> aged;
  for (const auto& [seq, row] : rows_) {
    if (row.occurred_at < cutoff) aged.push_back(seq);
  }
  meta_.last_prune_at = g.now;
  SW_RETURN_IF_ERROR(DeleteRows(aged, g, &cmd.prune, cutoff, /*by_mark=*/false));
  // Then the row cap over the survivors: the newest rows are kept.
  return EnforceRowCap(g, &cmd.prune);
}

bool EngineImpl::DeleteRow(Sequence seq, Group& g) {
  auto it = rows_.find(seq);
  if (it == rows_.end()) return false;
  const RowIndexRec& r = it->second;
  g.batch.Delete(Family::kJournal, storage::JournalKey(r.session, seq));
  g.batch.Delete(Family::kBySeq, storage::BySeqKey(seq));
  if (!r.dedupe_key.empty()) {
    g.batch.Delete(Family::kDedupe, storage::DedupeKey(r.dedupe_key));
    g.new_events.erase(r.dedupe_key);
  }
  --meta_.journal_rows;
  rows_.erase(it);
  return true;
}

Status EngineImpl::DeleteRows(const std::vector<Sequence>& rows, Group& g, PruneStats* stats,
                              int64_t cursor_cutoff, bool by_mark) {
  std::map<uint64_t, Sequence> raises;
  uint64_t deleted = 0;
  for (Sequence seq : rows) {
    auto it = rows_.find(seq);
    if (it == rows_.end()) continue;
    SessionRef session = it->second.session;
    if (by_mark) {
      // Nothing to write: the mark covers the row. Its dedupe key is free from now on.
      g.new_events.erase(it->second.dedupe_key);
      --meta_.journal_rows;
      rows_.erase(it);
      meta_.row_cap_mark = std::max(meta_.row_cap_mark, seq);
    } else {
      DeleteRow(seq, g);
    }
    ++deleted;
    Sequence& mark = raises[session.value];
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
  g.rows_pruned += deleted;
  g.cursors_expired += cursors_before - state_.cursor_count();
  stats->sessions_touched += raises.size();
  stats->cursors_expired += cursors_before - state_.cursor_count();
  return Status::OK();
}

}  // namespace statewatch::engine

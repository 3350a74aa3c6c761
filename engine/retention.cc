// EngineImpl: retention (semantics.md §5).
//
// The row cap is enforced inside every commit group, in the same record as the appends that
// overflow it, so the journal never grows past it. It deletes nothing by key: the rows it
// removes are always the oldest in the global order, so the prune op moves the row-cap mark
// (every row at or below it is gone; reads start above it; compaction drops the rows once a
// checkpoint holds the mark). The age pass (and idle-cursor expiry) runs at open, on demand,
// and at most once per interval after writes; it deletes rows by key. Both raise the
// watermarks of the sessions they delete from in the same prune op, so historyGap is exact.
//
// Rows deleted by key are gone for replay too, so a group that deletes rows by key (the age
// pass, a session delete) runs alone and after a checkpoint covering every row it deletes.
#include <algorithm>
#include <map>

#include "engine/engine_impl.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

EngineImpl::RowEntry* EngineImpl::FindRow(Sequence seq) {
  auto it = std::lower_bound(rows_.begin(), rows_.end(), seq,
                             [](const RowEntry& r, Sequence s) { return r.sequence < s; });
  return it == rows_.end() || it->sequence != seq ? nullptr : &*it;
}

void EngineImpl::DropRowLocked(RowEntry& row) {
  if (!row.session) return;
  if (!row.dedupe_key.empty()) {
    auto d = dedupe_.find(row.dedupe_key);
    if (d != dedupe_.end() && d->second == row.sequence) dedupe_.erase(d);
  }
  // The session's cached run still holds this row. Called in the fold, under the exclusive
  // lock and after the deleting batch is durable: see engine/row_cache.h for why that order.
  reader_->cache().Forget(row.session);
  row.session = SessionRef{};
  --live_rows_;
}

void EngineImpl::TrimRowsLocked() {
  while (!rows_.empty() && !rows_.front().session) rows_.pop_front();
}

void EngineImpl::AddPrune(const std::vector<const RowEntry*>& rows, int64_t cursor_cutoff,
                          Sequence new_cap_mark) {
  std::map<uint64_t, Sequence> raises;
  for (const RowEntry* r : rows) {
    Sequence& mark = raises[r->session.value];
    mark = std::max(mark, r->sequence);
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

void EngineImpl::EnforceRowCap() {
  Group& g = group_;
  const uint64_t deleted = g.deleted_rows.size();
  const uint64_t rows = live_rows_ + g.events.size() - deleted;
  if (rows <= options_.max_rows) return;
  uint64_t excess = rows - options_.max_rows;
  std::vector<const RowEntry*> oldest;
  oldest.reserve(excess);
  // The retained rows first (skipping those this group deletes by key), then this group's.
  std::vector<RowEntry> own;
  for (const RowEntry& r : rows_) {
    if (oldest.size() == excess) break;
    if (!r.session) continue;
    // deleted_rows is in sequence order (both passes that fill it walk rows in order).
    if (deleted && std::binary_search(g.deleted_rows.begin(), g.deleted_rows.end(), r.sequence)) {
      continue;
    }
    oldest.push_back(&r);
  }
  own.reserve(excess - oldest.size());
  for (const Group::NewEvent& e : g.events) {
    if (oldest.size() + own.size() == excess) break;
    own.push_back(RowEntry{e.sequence, e.session, e.occurred_at, {}});
  }
  for (const RowEntry& r : own) oldest.push_back(&r);
  Sequence mark = oldest.back()->sequence;
  g.meta.row_cap_mark = std::max(g.meta.row_cap_mark, mark);
  AddPrune(oldest, /*cursor_cutoff=*/0, g.meta.row_cap_mark);
}

Status EngineImpl::BuildPrune(PruneCmd& cmd) {
  Group& g = group_;
  g.prune_stats = &cmd.stats;
  const int64_t cutoff = g.now - options_.retention_ms;
  std::vector<const RowEntry*> aged;
  for (const RowEntry& r : rows_) {
    if (r.session && r.occurred_at < cutoff) aged.push_back(&r);
  }
  g.meta.last_prune_at = g.now;
  for (const RowEntry* r : aged) {
    g.batch.Delete(Family::kJournal, storage::JournalKeyFixed(r->session, r->sequence).view());
    g.deleted_rows.push_back(r->sequence);
  }
  bool expire = state_.AnyCursorIdleBefore(cutoff);
  if (!aged.empty() || expire) AddPrune(aged, expire ? cutoff : 0, /*new_cap_mark=*/0);
  return Status::OK();  // then the row cap over the survivors (RunGroup)
}

}  // namespace statewatch::engine

namespace statewatch::engine {

Status EngineImpl::CheckpointBeforeDeletes(const Command& cmd, int64_t now) {
  const auto* del = std::get_if<DeleteCmd>(&cmd.op);
  if (!del && !std::holds_alternative<PruneCmd>(cmd.op)) return Status::OK();
  const Sequence covered = meta_.checkpoint_sequence;
  const SessionRef ref = del ? FindRef(del->target) : SessionRef{};
  const int64_t cutoff = now - options_.retention_ms;
  // Only rows after the checkpoint matter: the newest ones, at the back.
  for (auto it = rows_.rbegin(); it != rows_.rend() && it->sequence > covered; ++it) {
    if (!it->session) continue;
    if (del ? it->session == ref : it->occurred_at < cutoff) return Checkpoint();
  }
  return Status::OK();
}

}  // namespace statewatch::engine

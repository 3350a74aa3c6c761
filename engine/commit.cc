// EngineImpl: the commit queue, group commit, and the fold after durability.
//
// Reading order: Execute (the queue and who leads) -> RunGroup (build, append, fold,
// answer) -> FoldGroupLocked (the projections and indexes move, under the exclusive lock).
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine_impl.h"
#include "log/partition.h"
#include "projections/log_fold.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {

// How a command may share a commit group. Commands are built against the projections as
// the last durable group left them, so one that reads them must not follow another command
// of the same group that could change them.
enum class Joining {
  kAlone,      // reads the store or replaces state: a group of its own
  kFirstOnly,  // reads the projections: only at the head of a group
  kAny,        // records, registry and side-table writes: decided without the projections
};

Joining JoiningOf(const Command& c) {
  if (std::holds_alternative<RecordCmd>(c.op) || std::holds_alternative<GroupWriteCmd>(c.op)) {
    return Joining::kAny;
  }
  if (std::holds_alternative<PruneCmd>(c.op) || std::holds_alternative<DeleteCmd>(c.op) ||
      std::holds_alternative<VerifyCmd>(c.op)) {
    return Joining::kAlone;
  }
  return Joining::kFirstOnly;
}

}  // namespace

// ---- the queue ------------------------------------------------------------------------------

Status EngineImpl::WritableLocked() {
  if (!sticky_error_.ok()) {
    return Status::FailedPrecondition("writes are refused after an earlier failed write (" +
                                      sticky_error_.message() + "); reopen the engine");
  }
  if (space_error_.ok()) return Status::OK();
  // A full disk is not sticky: once space is freed RocksDB can flush and clear its error.
  Status resumed = store_->Resume();
  if (resumed.ok()) {
    spdlog::info("statewatch: writes resumed after the disk had been full");
    space_error_ = Status::OK();
    return Status::OK();
  }
  if (!resumed.IsNoSpace()) {
    NoteWriteFailureLocked(resumed);
    return WritableLocked();
  }
  return Status::NoSpace("no space left on device: writes are refused until space is freed (" +
                         resumed.message() + ")");
}

void EngineImpl::NoteWriteFailureLocked(const Status& st) {
  if (st.IsNoSpace()) {
    spdlog::error("statewatch: the disk is full, refusing writes until space is freed: {}",
                  st.ToString());
    space_error_ = st;
  } else {
    spdlog::error("statewatch: durable write failed, refusing further writes: {}", st.ToString());
    sticky_error_ = st;
  }
}

Status EngineImpl::Execute(Command& cmd) {
  const auto* verify = std::get_if<VerifyCmd>(&cmd.op);
  if (options_.read_only && !(verify && !verify->replace)) {
    return Status::FailedPrecondition("the database was opened read-only; writes are refused");
  }
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_.push_back(&cmd);
  while (!cmd.done && queue_.front() != &cmd) cmd.cv.wait(lock);
  if (cmd.done) return cmd.status;

  // This caller leads: it takes the commands queued behind it that may join its group.
  std::vector<Command*> group{&cmd};
  if (JoiningOf(cmd) != Joining::kAlone) {
    for (auto it = queue_.begin() + 1; it != queue_.end(); ++it) {
      if (group.size() >= options_.max_group_commands || JoiningOf(**it) != Joining::kAny) break;
      group.push_back(*it);
    }
  }
  lock.unlock();
  RunGroup(group);
  MaybeMaintenance();
  lock.lock();
  for (Command* c : group) {
    queue_.pop_front();
    c->done = true;
    if (c != &cmd) c->cv.notify_one();
  }
  if (!queue_.empty()) queue_.front()->cv.notify_one();
  return cmd.status;
}

std::size_t EngineImpl::TEST_QueueLength() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return queue_.size();
}

// ---- one group --------------------------------------------------------------------------------

void EngineImpl::RunGroup(const std::vector<Command*>& group) {
  const auto start = std::chrono::steady_clock::now();  // latency: a steady clock, not clock_
  if (auto* v = std::get_if<VerifyCmd>(&group.front()->op)) {
    group.front()->status = RunVerify(*v);
    return;
  }
  {
    std::unique_lock lock(state_mu_);  // WritableLocked may clear a full-disk error
    if (Status writable = WritableLocked(); !writable.ok()) {
      for (Command* c : group) c->status = writable;
      return;
    }
  }
  const int64_t now = clock_->NowMs();
  Status st = CheckpointBeforeDeletes(*group.front(), now);
  if (!st.ok()) {
    for (Command* c : group) c->status = st;
    return;
  }
  // 1. Build. Nothing readers see changes: the projections move only in step 3.
  group_.Reset(now, meta_);
  for (Command* c : group) {
    c->status = BuildCommand(*c);
    // Invalid input fails its own command only; anything else fails the group.
    if (!c->status.ok() && !c->status.IsInvalidArgument()) {
      st = c->status;
      break;
    }
  }
  if (st.ok()) st = EnforceRowCap();
  // 2. Append: the record and its keyed writes become durable together.
  if (st.ok()) st = CommitGroup();
  if (!st.ok()) {
    for (Command* c : group) c->status = st;
    return;
  }
  // 3. Fold and answer.
  {
    std::unique_lock lock(state_mu_);
    FoldGroupLocked();
  }
  const auto folded = std::chrono::steady_clock::now();
  if (group_.rec.sequence_count() > 0 || group_.batch.Count() > 0) {  // CommitGroup appended
    counters_.commit_seconds.Observe(std::chrono::duration<double>(folded - start).count());
    counters_.group_commands.Observe(static_cast<double>(group.size()));
    counters_.group_events.Observe(static_cast<double>(group_.events.size()));
  }
  PublishWakes(group_.now, folded);
}

Status EngineImpl::BuildCommand(Command& cmd) {
  Status st;
  std::visit(
      [&](auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, RecordCmd>) BuildRecord(op, &st);
        if constexpr (std::is_same_v<T, WatchCmd>) BuildWatch(op);
        if constexpr (std::is_same_v<T, AckCmd>) BuildAck(op);
        if constexpr (std::is_same_v<T, ResetCmd>) BuildReset(op);
        if constexpr (std::is_same_v<T, DeleteCmd>) st = BuildDelete(op);
        if constexpr (std::is_same_v<T, PruneCmd>) st = BuildPrune(op);
        if constexpr (std::is_same_v<T, SweepCmd>) BuildSweep(op);
        if constexpr (std::is_same_v<T, GroupWriteCmd>) {
          GroupWrite w = SideTableWrite();
          st = op.fn(w);
        }
        if constexpr (std::is_same_v<T, VerifyCmd>) {}  // RunGroup runs it
      },
      cmd.op);
  return st;
}

Status EngineImpl::CommitGroup() {
  Group& g = group_;
  const bool any_change = g.rec.sequence_count() > 0 || g.batch.Count() > 0;
  if (!any_change) return Status::OK();
  if (g.meta.last_sequence > log::kMaxSequence) {  // refused before anything is written
    return Status::InvalidArgument("sequence " + std::to_string(g.meta.last_sequence) +
                                   " would pass the largest JSON-safe sequence 2^53-1");
  }
  // Counters go into the record only when the group moved them.
  if (g.meta.last_ref != meta_.last_ref) g.rec.last_ref = g.meta.last_ref;
  if (g.meta.last_delivery_id != meta_.last_delivery_id) {
    g.rec.last_delivery_id = g.meta.last_delivery_id;
  }
  if (g.meta.last_message_index != meta_.last_message_index) {
    g.rec.last_message_index = g.meta.last_message_index;
  }
  log::AppendOptions append;
  append.expected_last = g.meta.applied_position;
  append.sync = options_.durability == Durability::kSync;
  append.writes = &g.batch;
  append.counter_values = static_cast<uint32_t>(g.rec.sequence_count());
  append.first_counter = (g.rec.first_sequence - g.meta.partition) / g.meta.partitions;
  auto position =
      log_->Append(g.group_encoder.Encode(g.rec, /*with_first_sequence=*/g.meta.partitions > 1),
                   append);
  if (!position.ok()) {
    std::unique_lock lock(state_mu_);
    NoteWriteFailureLocked(position.status());
    return position.status();
  }
  g.meta.applied_position = *position;
  counters_.commit_groups.fetch_add(1, std::memory_order_relaxed);
  if (crash_point_) crash_point_("appended");
  return Status::OK();
}

// ---- the fold ---------------------------------------------------------------------------------

// The same folds replay runs (checkpoint.cc), fed from the leader's copy of each event's
// inputs instead of its row; plus what only the live engine keeps: names, the row cap's
// read-ahead and the row cache.
void EngineImpl::FoldGroupLocked() {
  Group& g = group_;
  for (const auto& [ref, name] : g.new_names) RememberNameLocked(ref, name);
  std::size_t cursors_before = state_.cursor_count();
  Status st = projections::ForEachEntry(
      g.rec.first_sequence, g.meta.partitions, g.events.size(), g.rec.ops,
      [&](std::size_t i, Sequence) {
        FoldEventLocked(g.events[i]);
        return Status::OK();
      },
      [&](const projections::LogOp& op) {
        projections::ApplyOp(op, g.now, state_, &g.fx);
        FoldRowsOfOpLocked(op);
      });
  // The group was built with these very sequences: a mismatch is a bug, not bad data.
  if (!st.ok()) spdlog::critical("statewatch: folding a commit group: {}", st.ToString());
  // Rows deleted by key may sit anywhere in the read-ahead: it is read again when needed.
  if (!g.deleted_rows.empty()) cap_front_.clear();
  uint64_t expired = cursors_before > state_.cursor_count() && g.prune_stats
                         ? cursors_before - state_.cursor_count()
                         : 0;
  if (g.prune_stats) g.prune_stats->cursors_expired += expired;
  meta_ = g.meta;  // with journal_rows as EnforceRowCap settled it
  counters_.notices_opened.fetch_add(g.fx.opened.size(), std::memory_order_relaxed);
  if (g.sweep) {
    // Every pending notice is announced again (wakes), whether or not the sweep moved it.
    g.sweep->pending = state_.pending_count();
    state_.ForEachCursor([&](projections::CursorId id, const projections::CursorRec& c) {
      if (c.pending()) g.fx.opened.push_back(projections::OpenedNotice{id.watcher, id.target});
    });
  }
  counters_.events_recorded.fetch_add(g.events.size(), std::memory_order_relaxed);
  counters_.rows_pruned.fetch_add(g.rows_pruned, std::memory_order_relaxed);
  counters_.cursors_expired.fetch_add(expired, std::memory_order_relaxed);
}

void EngineImpl::FoldEventLocked(const Group::NewEvent& e) {
  state_.ApplyEvent(
      e.sequence, group_.now,
      projections::EventFold{e.session, e.notifies, e.seeds_cursor, e.actor,
                             std::span<const SessionRef>(group_.watchers.data() + e.watchers_begin,
                                                         e.watchers_end - e.watchers_begin)},
      &group_.fx);
}

// What an op that removes rows does to the row cache and the row cap's read-ahead. Called
// in the fold, under the exclusive lock and after the deleting batch is durable: see
// engine/row_cache.h for why a cached run is forgotten then and not before.
void EngineImpl::FoldRowsOfOpLocked(const projections::LogOp& op) {
  if (op.type == projections::LogOp::Type::kDelete) reader_->cache().Forget(op.session);
  if (op.type != projections::LogOp::Type::kPrune) return;
  // A prune raises the watermark of every session it removes rows from.
  for (const auto& raise : op.raises) reader_->cache().Forget(raise.session);
  while (!cap_front_.empty() && cap_front_.front().sequence <= op.row_cap_mark) {
    cap_front_.pop_front();
  }
}

void EngineImpl::PublishWakes(int64_t now, std::chrono::steady_clock::time_point folded) {
  std::vector<std::pair<std::string, std::string>> wakes;  // (watcher key, target key)
  {
    std::shared_lock lock(state_mu_);
    std::unordered_set<uint64_t> seen;
    for (const auto& o : group_.fx.opened) {
      // One wake per watcher per group; nested sub-agents see notices on their next turn.
      if (subagent_refs_.count(o.watcher.value) || !seen.insert(o.watcher.value).second) continue;
      const SessionName* w = NameOf(o.watcher);
      const SessionName* t = NameOf(o.target);
      if (w && t) wakes.push_back({w->session_key, t->session_key});
    }
  }
  if (wakes.empty()) return;
  const uint64_t sent_before = wakes_.wakes_sent();
  wakes_.NotifyMany(wakes, now);
  if (wakes_.wakes_sent() != sent_before) {  // some fired now, not merged into a window
    counters_.wake_seconds.Observe(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - folded).count());
  }
}

void EngineImpl::MaybeMaintenance() {
  int64_t now = clock_->NowMs();
  bool prune_due;
  {
    std::shared_lock lock(state_mu_);
    if (options_.read_only || !sticky_error_.ok() || !space_error_.ok()) return;
    prune_due = now - meta_.last_prune_at >= options_.prune_interval_ms;
  }
  if (prune_due) {
    Command c{PruneCmd{}};
    RunGroup({&c});
  }
  Status st = MaybeCheckpoint();
  if (!st.ok()) spdlog::warn("statewatch: checkpoint failed: {}", st.ToString());
}

void EngineImpl::Group::Reset(int64_t at, const MetaRec& m) {
  batch.Clear();
  rec.Clear();
  meta = m;
  now = at;
  rec.committed_at = at;
  rec.first_sequence = NextSequence(m, m.last_sequence);
  events.clear();
  watchers.clear();
  new_dedupe.clear();
  new_refs.clear();
  new_names.clear();
  side_writes.Clear();
  deleted_rows.clear();
  rows_pruned = 0;
  prune_stats = nullptr;
  sweep = nullptr;
  fx.Clear();
}

}  // namespace statewatch::engine

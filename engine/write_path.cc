// The write path, top to bottom: every mutation of the engine goes through here.
//
// Map (each section below, in the order a write takes):
//   1. the caller      Record / RecordMany validate the input (event_validation.h) and queue
//                      one Command; the other commands (commands.cc) enter the same way.
//   2. the queue       Execute: the caller at the front leads and takes the commands queued
//                      behind it that may join its group (group commit).
//   3. one group       RunGroup: refuse if writes are stopped, checkpoint before deletes
//                      (retention.cc), then build, append, fold, answer.
//   4. build           BuildCommand dispatches; a record becomes journal rows, index entries
//                      and a GroupRecord entry (BuildOneEvent), its names are interned. The
//                      other commands' builders are in commands.cc, the row cap and pruning
//                      in retention.cc, the side tables write through GroupWrite
//                      (group_write.h). Nothing readers see changes while building.
//   5. append          CommitGroup: the record with its keyed writes, one durable append
//                      through log::LogBackend (fsynced under Durability::kSync).
//   6. fold            FoldGroupLocked: only now the projections move, under the exclusive
//                      lock, with the same folds replay runs (projections/log_fold.h).
//   7. answer          PublishWakes (wake_scheduler.h); then MaybeMaintenance (prune,
//                      checkpoint.cc).
//
// A command is built against the projections as the last durable group left them (the
// leader is their only writer, so it reads them without the lock). What it does to them is
// not applied while building: it becomes an entry of the group record — an event (its row
// carries its fold inputs) or an op with its own sequence — folded once the group is
// durable. A command that changes nothing takes no sequence (the reference model counts on
// it). A failed append changes nothing in memory and stops later writes (sticky), except a
// full disk, which is retried.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "engine/engine_impl.h"
#include "log/partition.h"
#include "projections/log_fold.h"
#include "statewatch/session_key.h"
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

// What a request's seal may render its answer from: the command's result, built and not yet
// durable (it becomes durable with the record, or neither does).
SealedOutcome SealedOutcomeOf(const Command& c) {
  if (const auto* record = std::get_if<RecordCmd>(&c.op)) return &record->results;
  if (const auto* ack = std::get_if<AckCmd>(&c.op); ack != nullptr && ack->all) {
    return &ack->notices;
  }
  if (const auto* watch = std::get_if<WatchCmd>(&c.op)) {
    if (watch->many) return &watch->result;
    return &watch->watched;
  }
  if (const auto* unwatch = std::get_if<UnwatchCmd>(&c.op)) return &unwatch->result;
  if (const auto* write = std::get_if<GroupWriteCmd>(&c.op)) return &write->changed;
  return std::monostate{};
}

}  // namespace

// ---- 1. the caller ---------------------------------------------------------------------------

Result<RecordResult> EngineImpl::Record(const EventInput& input) {
  auto r = RecordMany({input});
  if (!r.ok()) return r.status();
  return std::move(r->front());
}

Result<std::vector<RecordResult>> EngineImpl::RecordMany(const std::vector<EventInput>& inputs) {
  RecordCmd record;
  record.events.reserve(inputs.size());
  int64_t now = clock_->NowMs();
  SessionMemo memo;  // a batch for one session checks and parses its key once
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto pe = PrepareEvent(inputs[i], kinds_, now, options_.summary_max_bytes, &memo);
    // Another partition's session: the whole call is refused before a group is built, as
    // for any invalid event, so nothing of it changes.
    if (Status owned = pe.ok() ? CheckOwned(pe->session) : Status::OK(); !owned.ok()) {
      if (inputs.size() == 1) return owned;
      return Status::Misdirected("events[" + std::to_string(i) + "]: " + owned.message());
    }
    if (!pe.ok()) {
      if (inputs.size() == 1) return pe.status();
      return Status::InvalidArgument("events[" + std::to_string(i) + "]: " + pe.status().message());
    }
    record.events.push_back(std::move(*pe));
  }
  if (record.events.empty()) return std::vector<RecordResult>();
  Command cmd{std::move(record)};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(std::get<RecordCmd>(cmd.op).results);
}

// ---- 2. the queue ----------------------------------------------------------------------------

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

// ---- 3. one group ----------------------------------------------------------------------------

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
    if (c->status.ok() && c->seal) {  // X-Request-Id: the record rides on the effect's group
      GroupWrite w = SideTableWrite();
      c->status = c->seal(w, SealedOutcomeOf(*c));
    }
    // Invalid input fails its own command only; anything else fails the group.
    if (!c->status.ok() && !c->status.IsInvalidArgument()) {
      st = c->status;
      break;
    }
  }
  if (st.ok()) st = EnforceRowCap();
  if (st.ok()) st = WriteRowRuns();
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
  row_runs.Clear();
  rows_pruned = 0;
  prune_stats = nullptr;
  sweep = nullptr;
  fx.Clear();
}

// ---- 4. build ---------------------------------------------------------------------------------

Status EngineImpl::BuildCommand(Command& cmd) {
  Status st;
  std::visit(
      [&](auto& op) {
        using T = std::decay_t<decltype(op)>;
        if constexpr (std::is_same_v<T, RecordCmd>) BuildRecord(op, &st);
        if constexpr (std::is_same_v<T, WatchCmd>) BuildWatch(op);
        if constexpr (std::is_same_v<T, UnwatchCmd>) BuildUnwatch(op);
        if constexpr (std::is_same_v<T, AckCmd>) BuildAck(op);
        if constexpr (std::is_same_v<T, ResetCmd>) BuildReset(op);
        if constexpr (std::is_same_v<T, DeleteCmd>) st = BuildDelete(op);
        if constexpr (std::is_same_v<T, PruneCmd>) st = BuildPrune(op);
        if constexpr (std::is_same_v<T, SweepCmd>) BuildSweep(op);
        if constexpr (std::is_same_v<T, GroupWriteCmd>) {
          GroupWrite w = SideTableWrite();
          st = op.fn(w);
          op.changed = w.changed();
        }
        if constexpr (std::is_same_v<T, VerifyCmd>) {}  // RunGroup runs it
      },
      cmd.op);
  return st;
}

void EngineImpl::BuildRecord(RecordCmd& cmd, Status* st) {
  cmd.results.resize(cmd.events.size());
  for (std::size_t i = 0; i < cmd.events.size() && st->ok(); ++i) {
    *st = BuildOneEvent(cmd.events[i], &cmd.results[i]);
  }
}

Status EngineImpl::BuildOneEvent(PreparedEvent& pe, RecordResult* out) {
  Group& g = group_;
  const std::string& dk = pe.event.dedupe_key;
  if (!dk.empty()) {
    if (auto it = g.new_dedupe.find(dk); it != g.new_dedupe.end()) {
      *out = RecordResult{*it->second, true};
      return Status::OK();
    }
    auto existing = FindDuplicate(dk);
    if (!existing.ok()) return existing.status();
    if (existing->has_value()) {
      *out = RecordResult{std::move(**existing), true};
      return Status::OK();
    }
  }
  Group::NewEvent& e = g.events.emplace_back();
  e.session = Intern(pe.session);
  e.sequence = g.meta.last_sequence = NextSequence(g.meta, g.meta.last_sequence);
  e.notifies = pe.kind.notifies;
  e.seeds_cursor = pe.kind.seeds_cursor;
  e.watchers_begin = static_cast<uint32_t>(g.watchers.size());
  for (const SessionName& w : pe.watchers) g.watchers.push_back(Intern(w));
  e.watchers_end = static_cast<uint32_t>(g.watchers.size());
  // After the watchers: an actor that is also a watcher has a ref by now (self-suppression).
  e.actor = pe.actor_session ? LookupRef(*pe.actor_session) : SessionRef{};
  e.occurred_at = pe.event.occurred_at_ms;
  pe.event.sequence = e.sequence;

  EventFoldFields fold{e.notifies, e.seeds_cursor, e.actor,
                       std::span<const SessionRef>(g.watchers.data() + e.watchers_begin,
                                                   e.watchers_end - e.watchers_begin)};
  g.batch.Put(Family::kJournal, storage::JournalKeyFixed(e.session, e.sequence).view(),
              g.event_encoder.Encode(pe.event, fold));
  // The row's index entries (engine/row_index.h), durable with it: its place in the group's
  // run (put by WriteRowRuns) and its dedupe entry.
  g.row_runs.Add(e.sequence, e.session, e.occurred_at, !dk.empty());
  if (!dk.empty()) {
    g.batch.Put(Family::kDedupe, storage::DedupeKey(dk), EncodeDedupeEntry(e.session, e.sequence));
  }
  g.rec.events.push_back(e.session);
  out->event = std::move(pe.event);
  out->deduplicated = false;
  if (!out->event.dedupe_key.empty()) {
    e.dedupe_key = &out->event.dedupe_key;  // the results outlive the group
    g.new_dedupe[out->event.dedupe_key] = &out->event;
  }
  return Status::OK();
}

// The retained event holding `dedupe_key`, if any (the dedupe index, engine/row_index.h).
Result<std::optional<Event>> EngineImpl::FindDuplicate(const std::string& dedupe_key) {
  auto stored = store_->Get(Family::kDedupe, storage::DedupeKey(dedupe_key));
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return std::optional<Event>();
  auto entry = DecodeDedupeEntry(**stored);
  if (!entry.ok()) return entry.status();
  // At or below the mark: the row cap removed the row; compaction drops the entry later.
  if (entry->sequence <= group_.meta.row_cap_mark) return std::optional<Event>();
  auto bytes = store_->Get(Family::kJournal, storage::JournalKey(entry->session, entry->sequence));
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) {
    return Status::Corruption("journal row " + std::to_string(entry->sequence) + " of session #" +
                              std::to_string(entry->session.value) +
                              " is indexed by dedupe key \"" + dedupe_key + "\" but missing");
  }
  auto e = DecodeEvent(**bytes);
  if (!e.ok()) return e.status();
  return std::optional<Event>(std::move(*e));
}

// Names: a new name is written with the group (refs family) and published in the fold.

namespace {
std::string NameIndexKey(const SessionName& n) {
  std::string k = n.agent_id;
  k.push_back('\0');
  k.append(n.session_key);
  return k;
}
}  // namespace

SessionRef EngineImpl::FindRef(const SessionName& name) const {
  auto it = refs_by_name_.find(NameIndexKey(name));
  return it == refs_by_name_.end() ? SessionRef{} : it->second;
}

SessionRef EngineImpl::LookupRef(const SessionName& name) const {
  std::string k = NameIndexKey(name);
  if (auto it = refs_by_name_.find(k); it != refs_by_name_.end()) return it->second;
  auto it = group_.new_refs.find(k);
  return it == group_.new_refs.end() ? SessionRef{} : it->second;
}

// New names are written with the group (refs family) and published when it is folded.
SessionRef EngineImpl::Intern(const SessionName& name) {
  std::string k = NameIndexKey(name);
  if (auto it = refs_by_name_.find(k); it != refs_by_name_.end()) return it->second;
  Group& g = group_;
  if (auto it = g.new_refs.find(k); it != g.new_refs.end()) return it->second;
  SessionRef ref{++g.meta.last_ref};
  g.new_refs.emplace(std::move(k), ref);
  g.new_names.emplace_back(ref, name);
  std::string raw_ref;
  storage::PutFixed64BE(&raw_ref, ref.value);
  g.batch.Put(Family::kRefs, storage::NameKey(name.agent_id, name.session_key), raw_ref);
  g.batch.Put(Family::kRefs, storage::RefKey(ref), EncodeSessionName(name));
  return ref;
}

void EngineImpl::RememberNameLocked(SessionRef ref, const SessionName& name) {
  refs_by_name_[NameIndexKey(name)] = ref;
  names_by_ref_[ref.value] = name;
  auto parsed = ParseSessionKey(name.session_key);
  if (parsed.ok() && IsSubagentKey(*parsed)) subagent_refs_.insert(ref.value);
}

// ---- 5. append --------------------------------------------------------------------------------

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

// ---- 6. fold ----------------------------------------------------------------------------------

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

// ---- 7. answer --------------------------------------------------------------------------------

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

}  // namespace statewatch::engine

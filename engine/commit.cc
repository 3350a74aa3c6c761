// EngineImpl: commands, the group-commit queue, and publishing after durability.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <unordered_set>

#include "engine/engine_impl.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {

// Commands that read the store directly, or replace state wholesale, run in a group of
// their own so they never see half of a group.
bool RunsAlone(Command::Type t) {
  return t == Command::Type::kPrune || t == Command::Type::kVerify || t == Command::Type::kRebuild;
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
  if (options_.read_only && cmd.type != Command::Type::kVerify) {
    return Status::FailedPrecondition("the database was opened read-only; writes are refused");
  }
  std::unique_lock<std::mutex> lock(queue_mu_);
  queue_.push_back(&cmd);
  while (!cmd.done && queue_.front() != &cmd) cmd.cv.wait(lock);
  if (cmd.done) return cmd.status;

  // This caller leads: it takes the commands queued behind it, up to the group limit.
  std::vector<Command*> group;
  for (Command* c : queue_) {
    if (!group.empty() && (RunsAlone(c->type) || RunsAlone(group.front()->type))) break;
    group.push_back(c);
    if (group.size() >= options_.max_group_commands) break;
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

void EngineImpl::RunGroup(const std::vector<Command*>& group) {
  Command::Type first = group.front()->type;
  if (first == Command::Type::kVerify || first == Command::Type::kRebuild) {
    ApplyVerify(*group.front(), first == Command::Type::kRebuild);
    return;
  }
  std::vector<std::pair<std::string, std::string>> wakes;  // (watcher key, target key)
  int64_t now = 0;
  {
    std::unique_lock lock(state_mu_);
    if (Status writable = WritableLocked(); !writable.ok()) {
      for (Command* c : group) c->status = writable;
      return;
    }
    Group g(*store_);
    g.now = now = clock_->NowMs();
    Status st;
    for (Command* c : group) {
      ApplyCommand(*c, g);
      if (!c->status.ok() && !c->status.IsInvalidArgument()) {
        st = c->status;
        break;
      }
    }
    PruneStats cap;
    if (st.ok()) st = EnforceRowCap(g, &cap);
    if (st.ok() && g.batch.Count() > 0) {
      FlushProjections(g);
      st = store_->Write(g.batch, options_.durability == Durability::kSync);
      if (!st.ok()) {
        NoteWriteFailureLocked(st);
      } else {
        // Only now may compaction drop what the row-cap mark covers.
        durable_cap_mark_->store(meta_.row_cap_mark, std::memory_order_release);
        counters_.commit_groups.fetch_add(1, std::memory_order_relaxed);
        counters_.notices_opened.fetch_add(g.fx.opened.size(), std::memory_order_relaxed);
        counters_.events_recorded.fetch_add(g.new_rows.size(), std::memory_order_relaxed);
        counters_.rows_pruned.fetch_add(g.rows_pruned, std::memory_order_relaxed);
        counters_.cursors_expired.fetch_add(g.cursors_expired, std::memory_order_relaxed);
      }
    }
    if (!st.ok()) {
      for (Command* c : group) {
        c->status = st;
        c->records.clear();
        c->notices.clear();
      }
      lock.unlock();
      Status reload = Load();  // back to the durable state
      if (!reload.ok()) spdlog::error("statewatch: reload after failure: {}", reload.ToString());
      return;
    }
    std::unordered_set<uint64_t> seen;
    for (const auto& o : g.fx.opened) {
      // One wake per watcher per group; nested sub-agents see notices on their next turn.
      if (subagent_refs_.count(o.watcher.value) || !seen.insert(o.watcher.value).second) continue;
      const SessionName* w = NameOf(o.watcher);
      const SessionName* t = NameOf(o.target);
      if (w && t) wakes.push_back({w->session_key, t->session_key});
    }
  }
  wakes_.NotifyMany(wakes, now);
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
    Command c;
    c.type = Command::Type::kPrune;
    RunGroup({&c});
  }
  Status st = MaybeCheckpoint();
  if (!st.ok()) spdlog::warn("statewatch: checkpoint failed: {}", st.ToString());
}

// ---- applying commands ----------------------------------------------------------------------

void EngineImpl::ApplyCommand(Command& cmd, Group& g) {
  switch (cmd.type) {
    case Command::Type::kRecord:
      ApplyRecord(cmd, g);
      break;
    case Command::Type::kWatch:
      ApplyWatch(cmd, g);
      break;
    case Command::Type::kAck:
      ApplyAck(cmd, g);
      break;
    case Command::Type::kReset:
      ApplyReset(cmd, g);
      break;
    case Command::Type::kDelete:
      ApplyDelete(cmd, g);
      break;
    case Command::Type::kSweep:
      ApplySweep(cmd, g);
      break;
    case Command::Type::kPrune:
      cmd.status = ApplyPrune(cmd, g);
      break;
    case Command::Type::kUpsertSession:
      ApplyUpsertSession(cmd, g);
      break;
    case Command::Type::kAux: {
      AuxContext ctx{*this, g.batch, g.now, meta_,
                     [&](const SessionName& n) { return Intern(n, g); }};
      cmd.status = cmd.aux(ctx);
      break;
    }
    case Command::Type::kVerify:
    case Command::Type::kRebuild:
      break;  // handled by RunGroup
  }
}

Sequence EngineImpl::AppendLog(LogRec& rec, Group& g) {
  rec.sequence = ++meta_.last_sequence;
  rec.committed_at = g.now;
  g.batch.Put(Family::kLog, storage::LogKey(rec.sequence), EncodeLog(rec));
  ++meta_.log_records_since_checkpoint;
  ApplyLog(rec, state_, &g.fx);
  return rec.sequence;
}

void EngineImpl::ApplyRecord(Command& cmd, Group& g) {
  cmd.records.resize(cmd.events.size());
  for (std::size_t i = 0; i < cmd.events.size(); ++i) {
    cmd.status = ApplyOneEvent(cmd.events[i], g, &cmd.records[i]);
    if (!cmd.status.ok()) return;
  }
}

Status EngineImpl::ApplyOneEvent(PreparedEvent& pe, Group& g, RecordResult* out) {
  const std::string& dk = pe.event.dedupe_key;
  if (!dk.empty()) {
    if (auto it = g.new_events.find(dk); it != g.new_events.end()) {
      *out = RecordResult{it->second, true};
      return Status::OK();
    }
    auto d = store_->Get(Family::kDedupe, storage::DedupeKey(dk));
    if (!d.ok()) return d.status();
    if (d->has_value()) {
      auto rec = DecodeDedupe(**d);
      if (!rec.ok()) return rec.status();
      if (rows_.count(rec->sequence)) {
        auto row = store_->Get(Family::kJournal, storage::JournalKey(rec->session, rec->sequence));
        if (!row.ok()) return row.status();
        if (row->has_value()) {
          auto e = DecodeEvent(**row);
          if (!e.ok()) return e.status();
          *out = RecordResult{std::move(*e), true};
          return Status::OK();
        }
      }
    }
  }
  SessionRef ref = Intern(pe.session, g);
  LogRec rec;
  rec.type = LogRec::Type::kEvent;
  rec.session = ref;
  rec.notifying = pe.kind.notifies;
  rec.seeds_cursor = pe.kind.seeds_cursor;
  for (const SessionName& w : pe.watchers) rec.refs.push_back(Intern(w, g));
  rec.actor = pe.actor_session ? FindRef(*pe.actor_session) : SessionRef{};
  Sequence seq = AppendLog(rec, g);

  pe.event.sequence = seq;
  g.batch.Put(Family::kJournal, storage::JournalKey(ref, seq), EncodeEvent(pe.event));
  g.batch.Put(Family::kBySeq, storage::BySeqKey(seq),
              EncodeRowIndex(RowIndexRec{ref, pe.event.occurred_at_ms, dk}));
  if (!dk.empty()) {
    g.batch.Put(Family::kDedupe, storage::DedupeKey(dk), EncodeDedupe(DedupeRec{ref, seq}));
    g.new_events[dk] = pe.event;
  }
  g.new_rows.push_back(Group::NewRow{ref, seq});
  rows_.emplace_hint(rows_.end(), seq, RowIndexRec{ref, pe.event.occurred_at_ms, dk});
  ++meta_.journal_rows;
  *out = RecordResult{pe.event, false};
  return Status::OK();
}

void EngineImpl::ApplyWatch(Command& cmd, Group& g) {
  SessionRef w = Intern(cmd.watcher, g);
  SessionRef t = Intern(cmd.target, g);
  cmd.watched = true;
  if (state_.FindCursor(w, t)) return;  // an existing cursor keeps its positions
  LogRec rec;
  rec.type = LogRec::Type::kRegister;
  rec.session = w;
  rec.target = t;
  AppendLog(rec, g);
}

void EngineImpl::ApplyAck(Command& cmd, Group& g) {
  SessionRef w = FindRef(cmd.watcher);
  if (!w) return;
  std::vector<SessionRef> targets;
  if (cmd.ack_all) {
    cmd.notices = PendingLocked(w);
    for (const Notice& n : cmd.notices) targets.push_back(FindRef(n.target));
  } else {
    for (const SessionName& t : cmd.targets) {
      SessionRef ref = FindRef(t);
      const projections::CursorRec* c = ref ? state_.FindCursor(w, ref) : nullptr;
      if (c && c->pending() && std::find(targets.begin(), targets.end(), ref) == targets.end()) {
        targets.push_back(ref);
      }
    }
  }
  if (targets.empty()) return;
  LogRec rec;
  rec.type = LogRec::Type::kAck;
  rec.session = w;
  rec.refs = std::move(targets);
  AppendLog(rec, g);
}

void EngineImpl::ApplyReset(Command& cmd, Group& g) {
  SessionRef w = FindRef(cmd.watcher);
  if (!w || !state_.TargetsOf(w)) return;
  LogRec rec;
  rec.type = LogRec::Type::kReset;
  rec.session = w;
  AppendLog(rec, g);
}

void EngineImpl::ApplyDelete(Command& cmd, Group& g) {
  SessionRef ref = FindRef(cmd.target);
  if (!ref) return;
  // The session's rows: durable ones from the store (keys only: rows_ knows each row's
  // dedupe key), and this group's own.
  std::vector<Sequence> rows;
  auto it = store_->NewIterator(Family::kJournal, storage::JournalKey(ref, meta_.row_cap_mark + 1),
                                storage::JournalPrefix(SessionRef{ref.value + 1}));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    rows.push_back(storage::ParseJournalKey(it->key())->sequence);
  }
  if (!it->status().ok()) {
    cmd.status = it->status();
    return;
  }
  for (const auto& r : g.new_rows) {
    if (r.session == ref) rows.push_back(r.sequence);
  }
  for (Sequence seq : rows) DeleteRow(seq, g);
  bool has_projection =
      state_.FindHead(ref) || state_.TargetsOf(ref) || !state_.WatchersOf(ref).empty();
  g.batch.Delete(Family::kSessions, storage::RegistryKey(ref));
  g.new_sessions.erase(ref.value);
  g.batch.DeleteRange(Family::kTranscripts, storage::TranscriptPrefix(ref),
                      storage::TranscriptPrefix(SessionRef{ref.value + 1}));
  g.batch.Delete(Family::kUpstream, storage::UpstreamKey(ref));
  if (!has_projection && rows.empty()) return;
  LogRec rec;
  rec.type = LogRec::Type::kDelete;
  rec.session = ref;
  AppendLog(rec, g);
}

void EngineImpl::ApplySweep(Command& cmd, Group& g) {
  if (state_.SweepWouldChange()) {
    LogRec rec;
    rec.type = LogRec::Type::kSweep;
    AppendLog(rec, g);
  }
  // Every pending notice is re-announced (wakes), whether or not the sweep moved it.
  state_.ForEachCursor([&](projections::CursorId id, const projections::CursorRec& c) {
    if (c.pending()) g.fx.opened.push_back(projections::OpenedNotice{id.watcher, id.target});
  });
  cmd.count = state_.pending_count();
}

void EngineImpl::FlushProjections(Group& g) {
  std::unordered_set<uint64_t> heads;
  for (SessionRef s : g.fx.heads) {
    if (!heads.insert(s.value).second) continue;
    if (const projections::HeadState* h = state_.FindHead(s)) {
      g.batch.Put(Family::kHeads, storage::HeadKey(s), EncodeHead(*h));
    } else {
      g.batch.Delete(Family::kHeads, storage::HeadKey(s));
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> cursors;
  cursors.reserve(g.fx.cursors.size());
  for (const projections::CursorId& id : g.fx.cursors) {
    cursors.push_back({id.target.value, id.watcher.value});  // key order: target, watcher
  }
  std::sort(cursors.begin(), cursors.end());
  cursors.erase(std::unique(cursors.begin(), cursors.end()), cursors.end());
  CursorEncoder encoder;
  for (const auto& [t, w] : cursors) {
    std::string key = storage::CursorKey(SessionRef{w}, SessionRef{t});
    if (const projections::CursorRec* c = state_.FindCursor(SessionRef{w}, SessionRef{t})) {
      g.batch.Put(Family::kCursors, key, encoder.Encode(*c));
    } else {
      g.batch.Delete(Family::kCursors, key);
    }
  }
  g.batch.Put(Family::kMeta, storage::MetaKey(), EncodeMeta(meta_));
}

// ---- public write methods -------------------------------------------------------------------

Result<RecordResult> EngineImpl::Record(const EventInput& input) {
  auto r = RecordMany({input});
  if (!r.ok()) return r.status();
  return std::move(r->front());
}

Result<std::vector<RecordResult>> EngineImpl::RecordMany(const std::vector<EventInput>& inputs) {
  Command cmd;
  cmd.type = Command::Type::kRecord;
  int64_t now = clock_->NowMs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto pe = PrepareEvent(inputs[i], kinds_, now, options_.summary_max_bytes);
    if (!pe.ok()) {
      if (inputs.size() == 1) return pe.status();
      return Status::InvalidArgument("events[" + std::to_string(i) + "]: " + pe.status().message());
    }
    cmd.events.push_back(std::move(*pe));
  }
  if (cmd.events.empty()) return std::vector<RecordResult>();
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(cmd.records);
}

Result<bool> EngineImpl::Watch(const std::string& watcher_key, const SessionName& target) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok() || !*w) return false;  // malformed or bare watcher: refused
  auto t = ParseSessionKey(target.session_key);
  if (!t.ok() || !t->agent_scoped) return false;
  auto resolved = ResolveSession(target.session_key, target.agent_id);
  if (!resolved.ok() || *resolved == **w) return false;
  Command cmd;
  cmd.type = Command::Type::kWatch;
  cmd.watcher = **w;
  cmd.target = *resolved;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return cmd.watched;
}

Result<std::vector<Notice>> EngineImpl::Drain(const std::string& watcher_key) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return std::vector<Notice>();
  Command cmd;
  cmd.type = Command::Type::kAck;
  cmd.watcher = **w;
  cmd.ack_all = true;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(cmd.notices);
}

Status EngineImpl::Acknowledge(const std::string& watcher_key,
                               const std::vector<SessionName>& targets) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return Status::OK();
  Command cmd;
  cmd.type = Command::Type::kAck;
  cmd.watcher = **w;
  for (const SessionName& t : targets) {
    auto resolved = ResolveSession(t.session_key, t.agent_id);
    if (!resolved.ok()) return resolved.status();
    cmd.targets.push_back(*resolved);
  }
  return Execute(cmd);
}

Status EngineImpl::ResetWatcher(const std::string& watcher_key) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return Status::OK();
  Command cmd;
  cmd.type = Command::Type::kReset;
  cmd.watcher = **w;
  return Execute(cmd);
}

Status EngineImpl::DeleteSession(const SessionName& session) {
  auto resolved = ResolveSession(session.session_key, session.agent_id);
  if (!resolved.ok()) return resolved.status();
  Command cmd;
  cmd.type = Command::Type::kDelete;
  cmd.target = *resolved;
  return Execute(cmd);
}

Result<uint64_t> EngineImpl::Sweep() {
  Command cmd;
  cmd.type = Command::Type::kSweep;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return cmd.count;
}

Status EngineImpl::Start() {
  auto swept = Sweep();
  return swept.status();
}

Result<PruneStats> EngineImpl::Prune() {
  Command cmd;
  cmd.type = Command::Type::kPrune;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return cmd.prune;
}

Result<VerifyReport> EngineImpl::Verify() {
  Command cmd;
  cmd.type = Command::Type::kVerify;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(cmd.verify);
}

Result<VerifyReport> EngineImpl::Rebuild() {
  Command cmd;
  cmd.type = Command::Type::kRebuild;
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(cmd.verify);
}

}  // namespace statewatch::engine

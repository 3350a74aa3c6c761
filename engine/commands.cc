// EngineImpl: building each command into the commit group (commit.cc runs the group), and the
// public write methods that queue them.
//
// A command is built against the projections as the last durable group left them (the
// leader is their only writer, so it reads them without the lock). What it does to them is
// not applied here: it becomes an entry of the group record — an event (its row carries its
// fold inputs) or an op with its own sequence — folded once the group is durable. A command
// that changes nothing takes no sequence (the reference model counts on it).
#include <algorithm>

#include "engine/agent_partition.h"
#include "engine/engine_impl.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;
using projections::LogOp;

LogOp& EngineImpl::AddOp(LogOp::Type type) {
  LogOp& op = group_.rec.ops.emplace_back();
  op.type = type;
  op.sequence = group_.meta.last_sequence = NextSequence(group_.meta, group_.meta.last_sequence);
  return op;
}

// ---- record ---------------------------------------------------------------------------------

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
  // The row's index entries (engine/row_index.h), durable with it.
  g.batch.Put(Family::kBySeq, storage::BySeqKeyFixed(e.sequence).view(),
              g.row_index_encoder.Encode(e.session, e.occurred_at, dk));
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

// ---- cursors --------------------------------------------------------------------------------

void EngineImpl::BuildWatch(WatchCmd& cmd) {
  SessionRef w = Intern(cmd.watcher);
  SessionRef t = Intern(cmd.target);
  cmd.watched = true;
  if (state_.FindCursor(w, t)) return;  // an existing cursor keeps its positions
  LogOp& op = AddOp(LogOp::Type::kRegister);
  op.session = w;
  op.target = t;
}

void EngineImpl::BuildAck(AckCmd& cmd) {
  SessionRef w = FindRef(cmd.watcher);
  if (!w) return;
  std::vector<SessionRef> targets;
  if (cmd.all) {
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
  LogOp& op = AddOp(LogOp::Type::kAck);
  op.session = w;
  op.refs = std::move(targets);
}

void EngineImpl::BuildReset(ResetCmd& cmd) {
  SessionRef w = FindRef(cmd.watcher);
  if (!w || !state_.TargetsOf(w)) return;
  AddOp(LogOp::Type::kReset).session = w;
}

void EngineImpl::BuildSweep(SweepCmd& cmd) {
  group_.sweep = &cmd;
  if (state_.SweepWouldChange()) AddOp(LogOp::Type::kSweep);
}

// Runs alone, after a checkpoint that covers every row it deletes (retention.cc): replay
// never needs a row this deletes.
Status EngineImpl::BuildDelete(DeleteCmd& cmd) {
  SessionRef ref = FindRef(cmd.target);
  if (!ref) return Status::OK();
  Group& g = group_;
  auto it = store_->NewIterator(Family::kJournal,
                                storage::JournalKey(ref, g.meta.row_cap_mark + 1),
                                storage::JournalPrefix(SessionRef{ref.value + 1}));
  StoredEventFold row;
  IndexedRow indexed;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Sequence seq = storage::ParseJournalKey(it->key())->sequence;
    // A damaged row is deleted all the same; its dedupe key is then the index's copy.
    std::string_view dedupe_key;
    if (DecodeEventFold(it->value(), &row).ok()) {
      dedupe_key = row.dedupe_key;
    } else if (auto idx = store_->Get(Family::kBySeq, storage::BySeqKey(seq));
               idx.ok() && idx->has_value() && DecodeRowIndex(**idx, &indexed).ok()) {
      dedupe_key = indexed.dedupe_key;
    }
    DeleteRowByKey(ref, seq, dedupe_key);
  }
  SW_RETURN_IF_ERROR(it->status());
  bool has_projection =
      state_.FindHead(ref) || state_.TargetsOf(ref) || !state_.WatchersOf(ref).empty();
  GroupWrite side = SideTableWrite();
  for (const DeleteStep& step : delete_steps_) step(side, ref);
  if (!has_projection && g.deleted_rows.empty()) return Status::OK();
  AddOp(LogOp::Type::kDelete).session = ref;
  return Status::OK();
}

// ---- names ----------------------------------------------------------------------------------

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

// ---- public write methods -------------------------------------------------------------------

Result<RecordResult> EngineImpl::Record(const EventInput& input) {
  auto r = RecordMany({input});
  if (!r.ok()) return r.status();
  return std::move(r->front());
}

Result<std::vector<RecordResult>> EngineImpl::RecordMany(const std::vector<EventInput>& inputs) {
  RecordCmd record;
  record.events.reserve(inputs.size());
  int64_t now = clock_->NowMs();
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto pe = PrepareEvent(inputs[i], kinds_, now, options_.summary_max_bytes);
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

Result<bool> EngineImpl::Watch(const std::string& watcher_key, const SessionName& target) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok() || !*w) return false;  // malformed or bare watcher: refused
  auto t = ParseSessionKey(target.session_key);
  if (!t.ok() || !t->agent_scoped) return false;
  auto resolved = ResolveSession(target.session_key, target.agent_id);
  if (!resolved.ok() || *resolved == **w) return false;
  SW_RETURN_IF_ERROR(CheckOwned(*resolved));  // a cursor lives in its target's partition
  Command cmd{WatchCmd{**w, *resolved}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<WatchCmd>(cmd.op).watched;
}

Result<std::vector<Notice>> EngineImpl::Drain(const std::string& watcher_key) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return std::vector<Notice>();
  Command cmd{AckCmd{**w, {}, /*all=*/true, {}}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(std::get<AckCmd>(cmd.op).notices);
}

Status EngineImpl::Acknowledge(const std::string& watcher_key,
                               const std::vector<SessionName>& targets) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return Status::OK();
  AckCmd ack{**w, {}, /*all=*/false, {}};
  for (const SessionName& t : targets) {
    auto resolved = ResolveSession(t.session_key, t.agent_id);
    if (!resolved.ok()) return resolved.status();
    // The cursor lives in its target's partition: acknowledging it here would do nothing.
    SW_RETURN_IF_ERROR(CheckOwned(*resolved));
    ack.targets.push_back(*resolved);
  }
  Command cmd{std::move(ack)};
  return Execute(cmd);
}

Status EngineImpl::ResetWatcher(const std::string& watcher_key) {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return Status::OK();
  Command cmd{ResetCmd{**w}};
  return Execute(cmd);
}

Status EngineImpl::DeleteSession(const SessionName& session) {
  auto resolved = ResolveSession(session.session_key, session.agent_id);
  if (!resolved.ok()) return resolved.status();
  SW_RETURN_IF_ERROR(CheckOwned(*resolved));
  Command cmd{DeleteCmd{*resolved}};
  return Execute(cmd);
}

Result<uint64_t> EngineImpl::Sweep() {
  Command cmd{SweepCmd{}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<SweepCmd>(cmd.op).pending;
}

Status EngineImpl::Start() { return Sweep().status(); }

Result<PruneStats> EngineImpl::Prune() {
  Command cmd{PruneCmd{}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<PruneCmd>(cmd.op).stats;
}

Result<VerifyReport> EngineImpl::Verify() {
  Command cmd{VerifyCmd{}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(std::get<VerifyCmd>(cmd.op).report);
}

Result<VerifyReport> EngineImpl::Rebuild() {
  Command cmd{VerifyCmd{/*replace=*/true, {}}};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::move(std::get<VerifyCmd>(cmd.op).report);
}

Status EngineImpl::CheckOwned(const SessionName& session) const {
  return CheckSessionPartition(session, options_.partition, options_.partitions);
}

Status EngineImpl::CheckOwnedForRead(const SessionName& session) const {
  if (options_.partitions <= 1) return Status::OK();  // no copy of the name on a single node
  auto resolved = ResolveSession(session.session_key, session.agent_id);
  return resolved.ok() ? CheckOwned(*resolved) : Status::OK();
}

// ---- the side tables' hook (engine/group_write.h) ---------------------------------------------

Status EngineImpl::WriteInGroup(WriteFn fn) {
  Command cmd{GroupWriteCmd{std::move(fn)}};
  return Execute(cmd);
}

GroupWrite EngineImpl::SideTableWrite() {
  Group& g = group_;
  return GroupWrite(g.batch, *store_, g.side_writes, g.now, g.meta.last_message_index,
                    g.meta.last_delivery_id, [this](const SessionName& n) { return Intern(n); });
}

SessionRef EngineImpl::FindSession(const SessionName& canonical) const {
  std::shared_lock lock(state_mu_);
  return FindRef(canonical);
}

}  // namespace statewatch::engine

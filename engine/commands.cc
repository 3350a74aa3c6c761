// EngineImpl: the commands other than Record — cursors (watch, unwatch, acknowledge, drain,
// reset), sweep, session delete, prune, verify — each a public method that queues one Command
// and a Build step that RunGroup calls (engine/write_path.cc reads the whole path in order).
//
// Builders run on the leader against the projections as the last durable group left them;
// what they change becomes an op of the group record, folded once the group is durable. A
// command that changes nothing takes no op and no sequence.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

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

// ---- cursors --------------------------------------------------------------------------------

void EngineImpl::BuildWatch(WatchCmd& cmd) {
  for (const auto& [watcher, target] : cmd.pairs) {
    SessionRef w = Intern(watcher);
    SessionRef t = Intern(target);
    ++cmd.result.watched;
    if (state_.FindCursor(w, t)) continue;  // an existing cursor keeps its positions
    ++cmd.result.created;
    LogOp& op = AddOp(LogOp::Type::kRegister);
    op.session = w;
    op.target = t;
  }
  cmd.watched = true;
}

void EngineImpl::BuildUnwatch(UnwatchCmd& cmd) {
  for (const auto& [watcher, target] : cmd.pairs) {
    ++cmd.result.watches;
    SessionRef w = FindRef(watcher);
    SessionRef t = FindRef(target);
    if (!w || !t || !state_.FindCursor(w, t)) continue;
    ++cmd.result.removed;
    LogOp& op = AddOp(LogOp::Type::kUnregister);
    op.session = w;
    op.target = t;
  }
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
  std::vector<RowRef> damaged;  // their dedupe keys are found in the dedupe index
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    Sequence seq = storage::ParseJournalKey(it->key())->sequence;
    // A damaged row is deleted all the same.
    std::string_view dedupe_key;
    if (DecodeEventFold(it->value(), &row).ok()) {
      dedupe_key = row.dedupe_key;
    } else {
      damaged.push_back(RowRef{seq, ref});
    }
    DeleteRowByKey(ref, seq, dedupe_key);
  }
  SW_RETURN_IF_ERROR(it->status());
  SW_RETURN_IF_ERROR(DeleteDedupeEntriesOf(damaged));
  bool has_projection =
      state_.FindHead(ref) || state_.TargetsOf(ref) || !state_.WatchersOf(ref).empty();
  GroupWrite side = SideTableWrite();
  for (const DeleteStep& step : delete_steps_) step(side, ref);
  if (!has_projection && g.deleted_rows.empty()) return Status::OK();
  AddOp(LogOp::Type::kDelete).session = ref;
  return Status::OK();
}

// ---- public write methods -------------------------------------------------------------------

Result<bool> EngineImpl::Watch(const std::string& watcher_key, const SessionName& target) {
  auto pair = ResolveWatchPair(watcher_key, target);
  if (!pair.ok()) return false;  // a refused registration, not an error
  SW_RETURN_IF_ERROR(CheckOwned(pair->second));  // a cursor lives in its target's partition
  WatchCmd watch;
  watch.pairs.push_back(std::move(*pair));
  Command cmd{std::move(watch)};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<WatchCmd>(cmd.op).watched;
}

// The canonical pairs of a list of watches, each once, or the error that refuses the list
// (WatchMany, Unwatch). A pair given twice is taken once: the builder sees cursors as the
// last durable group left them, so a second op of the same pair would not see the first.
// `numbered` prefixes an error with the pair's index ("watches[i]: ").
Status EngineImpl::ResolveWatchPairs(const std::vector<WatchSpec>& watches, bool numbered,
                                     std::vector<std::pair<SessionName, SessionName>>* out) {
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < watches.size(); ++i) {
    const std::string where = numbered ? "watches[" + std::to_string(i) + "]: " : "";
    auto pair = ResolveWatchPair(watches[i].watcher_key, watches[i].target);
    if (!pair.ok()) return Status::InvalidArgument(where + pair.status().message());
    // Another partition's target: the whole call is refused before a group is built.
    if (Status owned = CheckOwned(pair->second); !owned.ok()) {
      return Status::Misdirected(where + owned.message());
    }
    const auto& [w, t] = *pair;
    std::string id = w.agent_id + '\n' + w.session_key + '\n' + t.agent_id + '\n' + t.session_key;
    if (seen.insert(std::move(id)).second) out->push_back(std::move(*pair));
  }
  return Status::OK();
}

Result<WatchManyResult> EngineImpl::WatchMany(const std::vector<WatchSpec>& watches) {
  WatchCmd watch;
  watch.many = true;
  SW_RETURN_IF_ERROR(ResolveWatchPairs(watches, /*numbered=*/true, &watch.pairs));
  if (watch.pairs.empty()) return WatchManyResult{};
  Command cmd{std::move(watch)};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<WatchCmd>(cmd.op).result;
}

Result<UnwatchResult> EngineImpl::Unwatch(const std::vector<WatchSpec>& watches) {
  UnwatchCmd unwatch;
  SW_RETURN_IF_ERROR(ResolveWatchPairs(watches, watches.size() > 1, &unwatch.pairs));
  if (unwatch.pairs.empty()) return UnwatchResult{};
  Command cmd{std::move(unwatch)};
  SW_RETURN_IF_ERROR(Execute(cmd));
  return std::get<UnwatchCmd>(cmd.op).result;
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
                    g.meta.last_delivery_id, meta_.partition, meta_.partitions,
                    [this](const SessionName& n) { return Intern(n); });
}

SessionRef EngineImpl::FindSession(const SessionName& canonical) const {
  std::shared_lock lock(state_mu_);
  return FindRef(canonical);
}

}  // namespace statewatch::engine
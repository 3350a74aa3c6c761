// EngineImpl: opening, loading the projections into memory, and the read paths.
#include "engine/engine_impl.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <tuple>

#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

namespace {

const SessionName kNoName{};  // the sort key of a session whose name is gone (never pending)

// Compaction drops the journal rows the row-cap mark covers, and their index entries, once a
// checkpoint holds the mark (EngineImpl::durable_cap_mark_).
void InstallDropFilters(const std::shared_ptr<std::atomic<uint64_t>>& mark,
                        storage::StoreOptions* so) {
  so->drop_filters[Family::kJournal] = [mark](std::string_view key, std::string_view) {
    auto k = storage::ParseJournalKey(key);
    return k && k->sequence <= mark->load(std::memory_order_acquire);
  };
  // A by_seq run goes once its last member is at or below the mark.
  so->drop_filters[Family::kBySeq] = [mark](std::string_view key, std::string_view value) {
    auto first = storage::ParseSequenceKey(storage::kBySeqTag, key);
    const uint64_t m = mark->load(std::memory_order_acquire);
    if (!first || *first > m) return false;
    std::vector<IndexedRow> run;
    return DecodeRowRun(*first, value, &run).ok() && run.back().sequence <= m;
  };
  // A dedupe key may be written again once its row is gone, so an older version of the entry
  // can reappear when this one is dropped: it names an older sequence, at or below the mark
  // too, which FindDuplicate ignores.
  so->drop_filters[Family::kDedupe] = [mark](std::string_view, std::string_view value) {
    auto entry = DecodeDedupeEntry(value);
    return entry.ok() && entry->sequence <= mark->load(std::memory_order_acquire);
  };
}

// Why writes are refused, for Stats and Pulse: the sticky error first (it needs a reopen),
// else the disk-space refusal; empty while writes are accepted.
std::string WriteError(const Status& sticky, const Status& space) {
  if (!sticky.ok()) return sticky.message();
  if (!space.ok()) return space.message();
  return std::string();
}

}  // namespace

Result<std::unique_ptr<Engine>> OpenEngineWithHooks(const EngineOptions& options,
                                                    const std::string& path,
                                                    const EngineTestHooks& hooks) {
  // Before the store opens: bad options change nothing (not even create the directory).
  if (options.partitions == 0) {
    return Status::InvalidArgument("partitions must be at least 1 (got 0)");
  }
  if (options.partition >= options.partitions) {
    return Status::InvalidArgument("partition must be below partitions " +
                                   std::to_string(options.partitions) + " (got " +
                                   std::to_string(options.partition) + ")");
  }
  storage::StoreOptions so;
  so.create_if_missing = options.create_if_missing && !options.read_only;
  so.read_only = options.read_only;
  so.block_cache_bytes = options.block_cache_bytes;
  so.write_buffer_bytes = options.write_buffer_bytes;
  so.faults = hooks.faults;
  auto cap_mark = std::make_shared<std::atomic<uint64_t>>(0);
  InstallDropFilters(cap_mark, &so);
  auto store = storage::Store::Open(path, so);
  if (!store.ok()) return store.status();
  auto engine = std::make_unique<EngineImpl>(options, std::move(*store), cap_mark);
  engine->TEST_SetCrashPoint(hooks.crash_point);
  RegisterSideTables(*engine);
  SW_RETURN_IF_ERROR(engine->Load());
  if (options.prune_on_open && !options.read_only) {
    auto pruned = engine->Prune();
    if (!pruned.ok()) return pruned.status();
  }
  return std::unique_ptr<Engine>(std::move(engine));
}

EngineImpl::EngineImpl(const EngineOptions& options, std::unique_ptr<storage::Store> store,
                       std::shared_ptr<std::atomic<uint64_t>> durable_cap_mark)
    : options_(options),
      clock_(options.clock ? options.clock : NewSystemClock()),
      store_(std::move(store)),
      reader_(std::make_unique<ChangesReader>(*store_, options.row_cache_bytes)),
      kinds_(options.kinds),
      wakes_(options.wake_window_ms),
      group_(*store_),
      durable_cap_mark_(std::move(durable_cap_mark)) {}

EngineImpl::~EngineImpl() = default;

const SessionName* EngineImpl::NameOf(SessionRef ref) const {
  auto it = names_by_ref_.find(ref.value);
  return it == names_by_ref_.end() ? nullptr : &it->second;
}

// ---- reads ----------------------------------------------------------------------------------

Result<Sequence> EngineImpl::StateVersion(const SessionName& session) const {
  auto v = StateVersions({session});
  if (!v.ok()) return v.status();
  return v->front();
}

Result<std::vector<Sequence>> EngineImpl::StateVersions(
    const std::vector<SessionName>& sessions) const {
  // Another partition's session: this node does not hold its history, so a version of 0
  // here would be a wrong answer, not an empty one.
  for (std::size_t i = 0; options_.partitions > 1 && i < sessions.size(); ++i) {
    if (Status owned = CheckOwnedForRead(sessions[i]); !owned.ok()) {
      if (sessions.size() == 1) return owned;
      return Status::Misdirected("sessions[" + std::to_string(i) + "]: " + owned.message());
    }
  }
  std::vector<Sequence> out;
  out.reserve(sessions.size());
  std::shared_lock lock(state_mu_);
  for (const SessionName& s : sessions) {
    const projections::HeadState* h = state_.FindHead(FindRef(CanonicalSession(s)));
    out.push_back(h ? h->head : 0);
  }
  return out;
}

Status EngineImpl::ReadChanges(const SessionName& session, Sequence after, int limit,
                               RowRenderer render, ChangesView* page) const {
  page->Clear();
  SW_RETURN_IF_ERROR(CheckOwnedForRead(session));  // as StateVersions
  ChangesReader::Request req;
  req.after = after;
  req.limit = std::clamp(limit, 1, 200);
  ChangesReader::Lease lease;
  Sequence watermark = 0;
  {
    std::shared_lock lock(state_mu_);
    req.cap_mark = meta_.row_cap_mark;
    req.session = FindRef(CanonicalSession(session));
    if (const projections::HeadState* h = state_.FindHead(req.session)) {
      req.head = h->head;
      watermark = h->watermark;
    }
    // Under the lock, so that the iterator's snapshot (or the cached run) matches the head:
    // the page never runs ahead of the stateVersion it reports.
    if (req.session) SW_RETURN_IF_ERROR(reader_->Begin(req, &lease));
  }
  page->state_version = req.head;
  page->history_gap = after < watermark;
  if (!req.session) return Status::OK();
  return reader_->Finish(req, &lease, render, page);
}

Notice EngineImpl::MakeNotice(const SessionName& watcher, SessionRef target,
                              Sequence since) const {
  Notice n;
  n.watcher_key = watcher.session_key;
  if (const SessionName* t = NameOf(target)) n.target = *t;
  n.since = since;
  n.context_key = EncodeContextKey(n.target.session_key);
  n.text = NoticeText(n.target.session_key, since);
  return n;
}

std::vector<Notice> EngineImpl::PendingLocked(SessionRef watcher) const {
  return PendingIn(state_, watcher);
}

std::vector<Notice> EngineImpl::PendingIn(const projections::ProjectionState& state,
                                          SessionRef watcher) const {
  std::vector<std::pair<Sequence, SessionRef>> pending;
  if (const auto* targets = state.TargetsOf(watcher)) {
    for (SessionRef t : *targets) {
      const projections::CursorRec* c = state.FindCursor(watcher, t);
      if (c && c->pending()) pending.push_back({c->notified, t});
    }
  }
  // Oldest first: by the notified mark. A restart sweep reopens many notices at one mark;
  // those go by target key, so that every node — and a replay — answers in the same order
  // (SessionRefs are numbered in the order a process met the sessions).
  auto key_of = [this](SessionRef t) {
    const SessionName* n = NameOf(t);
    return n != nullptr ? std::tie(n->session_key, n->agent_id)
                        : std::tie(kNoName.session_key, kNoName.agent_id);
  };
  std::sort(pending.begin(), pending.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return key_of(a.second) < key_of(b.second);
  });
  std::vector<Notice> out;
  const SessionName* w = NameOf(watcher);
  for (const auto& [n, t] : pending) {
    const projections::CursorRec* c = state.FindCursor(watcher, t);
    out.push_back(MakeNotice(*w, t, c->last_seen));
  }
  return out;
}

Result<std::vector<Notice>> EngineImpl::PendingNotices(const std::string& watcher_key) const {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return std::vector<Notice>();  // bare keys never hold cursors
  std::shared_lock lock(state_mu_);
  SessionRef ref = FindRef(**w);
  if (!ref) return std::vector<Notice>();
  return PendingLocked(ref);
}

Result<std::optional<CursorState>> EngineImpl::Cursor(const std::string& watcher_key,
                                                      const SessionName& target) const {
  auto w = ParseWatcherKey(watcher_key);
  if (!w.ok()) return w.status();
  if (!*w) return std::optional<CursorState>();
  SW_RETURN_IF_ERROR(CheckOwnedForRead(target));  // the cursor lives in its target's partition
  std::shared_lock lock(state_mu_);
  SessionRef wr = FindRef(**w), tr = FindRef(CanonicalSession(target));
  const projections::CursorRec* c = wr && tr ? state_.FindCursor(wr, tr) : nullptr;
  if (!c) return std::optional<CursorState>();
  return std::optional<CursorState>(CursorState{c->last_seen, c->notified,
                                                state_.EffectiveMaterial(*c, wr, tr),
                                                state_.EffectiveUpdatedAt(*c, wr, tr)});
}

Result<std::vector<std::string>> EngineImpl::WatchersOf(const SessionName& target) const {
  SW_RETURN_IF_ERROR(CheckOwnedForRead(target));  // as Cursor
  std::vector<std::string> out;
  std::shared_lock lock(state_mu_);
  for (SessionRef w : state_.WatchersOf(FindRef(CanonicalSession(target)))) {
    if (const SessionName* n = NameOf(w)) out.push_back(n->session_key);
  }
  return out;
}

template <typename Out>
void EngineImpl::ReadPulseLocked(Out* out) const {
  out->last_sequence = meta_.last_sequence;
  out->pending_notices = state_.pending_count();
  out->notices_opened = counters_.notices_opened.load();
  out->write_error = WriteError(sticky_error_, space_error_);
}

Result<EngineStats> EngineImpl::Stats() const {
  EngineStats s;
  {
    std::shared_lock lock(state_mu_);
    ReadPulseLocked(&s);
    s.journal_rows = meta_.journal_rows;
    s.sessions = state_.head_count();
    s.cursors = state_.cursor_count();
    s.log_records_since_checkpoint =  // sequences, not the span: they are P apart
        (meta_.last_sequence - meta_.checkpoint_sequence) / meta_.partitions;
    s.events_recorded = counters_.events_recorded.load();
    s.rows_pruned = counters_.rows_pruned.load();
    s.cursors_expired = counters_.cursors_expired.load();
    s.commit_groups = counters_.commit_groups.load();
  }
  s.wal_bytes = store_->WalBytesWritten();
  s.wakes_sent = wakes_.wakes_sent();
  s.bytes_on_disk = store_->BytesOnDisk();
  s.commit_seconds = counters_.commit_seconds.Snapshot();
  s.wake_seconds = counters_.wake_seconds.Snapshot();
  s.group_commands = counters_.group_commands.Snapshot();
  s.group_events = counters_.group_events.Snapshot();
  s.wal_sync_seconds = store_->WalSyncLatency();
  s.rocksdb = store_->RocksDb();
  return s;
}

Result<EnginePulse> EngineImpl::Pulse() const {
  EnginePulse p;
  {
    std::shared_lock lock(state_mu_);
    ReadPulseLocked(&p);
  }
  p.wakes_sent = wakes_.wakes_sent();
  return p;
}

// ---- wakes ----------------------------------------------------------------------------------

uint64_t EngineImpl::SubscribeWakes(WakeCallback callback, std::string watcher_key) {
  if (!watcher_key.empty()) {
    auto w = ParseWatcherKey(watcher_key);
    if (w.ok() && *w) watcher_key = (*w)->session_key;
  }
  return wakes_.Subscribe(std::move(callback), std::move(watcher_key));
}
void EngineImpl::UnsubscribeWakes(uint64_t id) { wakes_.Unsubscribe(id); }
void EngineImpl::RunDueWakes() { wakes_.RunDue(clock_->NowMs()); }
std::optional<int64_t> EngineImpl::NextWakeDueMs() const { return wakes_.NextDue(); }

}  // namespace statewatch::engine

namespace statewatch {

Result<std::unique_ptr<Engine>> Engine::Open(const EngineOptions& options,
                                             const std::string& path) {
  return engine::OpenEngineWithHooks(options, path, engine::EngineTestHooks{});
}

Result<ChangesPage> Engine::ChangesSince(const SessionName& session, Sequence after,
                                         int limit) const {
  // One page per thread, reused: its arena and vectors keep their capacity across calls.
  thread_local ChangesView view;
  Status st = ReadChanges(session, after, limit, /*render=*/nullptr, &view);
  if (!st.ok()) {
    view.Clear();
    return st;
  }
  ChangesPage page = view.ToPage();
  view.Clear();  // releases the cached rows it held
  return page;
}

}  // namespace statewatch

// EngineImpl: the Engine behind include/statewatch/engine.h.
//
// The log is the one durable truth (docs/design.md, "The log-centric core"). Every mutation
// is a Command. Callers queue their commands; the caller at the front of the queue becomes
// the leader and takes the commands queued behind it (group commit). For the group it
//   1. builds, without any lock readers wait on: the journal rows and side-table writes in
//      one storage::Batch, and one compact GroupRecord (engine/records.h) saying what the
//      group does to the projections — sequences are assigned here;
//   2. appends the record with the batch as its keyed writes through log::LogBackend (the
//      local RocksDB log: one WAL write, fsynced under Durability::kSync);
//   3. only then folds the record into the in-memory projections under a brief exclusive
//      lock (projections/log_fold.h), answers the callers and publishes wakes.
// Readers take state_mu_ shared and so only ever see durable state, and never wait for an
// fsync. A failed append changes nothing in memory; it makes every later write fail
// (sticky) except a full disk, which is retryable.
//
// The projections (heads, watermarks, cursors, pending index, meta counters) are persisted
// by checkpoints: the keys changed since the last one, with the log position they cover, in
// one batch; the log before it is then purged. Opening loads the checkpoint and folds the log
// after it, and reads no journal row it does not replay: the journal's global-order index and
// the dedupe index are persisted beside the rows (engine/row_index.h), so memory and open time
// grow with sessions and cursors, not with the journal.
//
// Files: write_path.cc (the write path top to bottom: Record, the queue, group commit, the
// fold), commands.cc (the other commands: cursors, sweep, delete, prune, verify),
// engine_impl.cc (open, load, reads), retention.cc (pruning),
// checkpoint.cc (checkpoint, replay, format migration), verify.cc (verify, rebuild).
// The side tables (include/statewatch/session_tables.h) are not the engine's: they write
// through WriteInGroup (engine/group_write.h) and register their delete-session steps.
#ifndef STATEWATCH_ENGINE_ENGINE_IMPL_H_
#define STATEWATCH_ENGINE_ENGINE_IMPL_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#include "base/histogram.h"
#include "engine/changes_reader.h"
#include "engine/event_validation.h"
#include "engine/group_write.h"
#include "engine/records.h"
#include "engine/request_seal.h"
#include "engine/row_index.h"
#include "engine/wake_scheduler.h"
#include "log/log_backend.h"
#include "projections/projection_state.h"
#include "statewatch/engine.h"
#include "storage/store.h"

namespace statewatch::engine {

// Test-only hooks for Open.
struct EngineTestHooks {
  std::shared_ptr<storage::FaultInjector> faults;
  // Called at the points a crash image is taken in tests/recovery: "appended" (a group is in
  // the WAL, not yet folded) and "checkpointed" (a checkpoint is written, the log not yet
  // purged). Runs on the commit leader.
  std::function<void(const char* point)> crash_point;
};
Result<std::unique_ptr<Engine>> OpenEngineWithHooks(const EngineOptions& options,
                                                    const std::string& path,
                                                    const EngineTestHooks& hooks);

// ---- commands: inputs and, once done, outputs ----
struct RecordCmd {
  std::vector<PreparedEvent> events;
  std::vector<RecordResult> results;
};
struct WatchCmd {
  std::vector<std::pair<SessionName, SessionName>> pairs;  // (watcher, target), each once
  bool many = false;      // WatchMany: a request's seal renders `result`, else `watched`
  bool watched = false;   // once built: every pair holds its cursor
  WatchManyResult result;
};
struct UnwatchCmd {
  std::vector<std::pair<SessionName, SessionName>> pairs;  // (watcher, target), each once
  UnwatchResult result;
};
struct AckCmd {
  SessionName watcher;
  std::vector<SessionName> targets;  // ignored when all
  bool all = false;                  // drain: every pending notice
  std::vector<Notice> notices;       // drain: what was acknowledged
};
struct ResetCmd {
  SessionName watcher;
};
struct DeleteCmd {
  SessionName target;
};
struct PruneCmd {
  PruneStats stats;
};
struct SweepCmd {
  uint64_t pending = 0;
};
struct VerifyCmd {
  bool replace = false;  // Rebuild
  VerifyReport report;
};
// A side table's write inside the commit group (SideTableHost::WriteInGroup).
struct GroupWriteCmd {
  SideTableHost::WriteFn fn;
  bool changed = true;  // false when the write said GroupWrite::ChangedNothing
};

struct Command {
  template <typename Op>
  explicit Command(Op op) : op(std::move(op)) {}
  std::variant<RecordCmd, WatchCmd, UnwatchCmd, AckCmd, ResetCmd, DeleteCmd, PruneCmd, SweepCmd,
               VerifyCmd, GroupWriteCmd>
      op;
  Status status;
  // The X-Request-Id seal armed on the thread that made the command (engine/request_seal.h):
  // RunGroup runs it in the command's group once the command has built, with its outcome.
  SealWriteFn seal = TakeRequestSeal();
  // queue bookkeeping
  bool done = false;
  std::condition_variable cv;
};

class EngineImpl final : public Engine, public SideTableHost {
 public:
  EngineImpl(const EngineOptions& options, std::unique_ptr<storage::Store> store,
             std::shared_ptr<std::atomic<uint64_t>> durable_cap_mark);
  ~EngineImpl() override;

  // Reads the checkpoint and folds the log after it (migrating an older format).
  Status Load();

  Status Start() override;
  Result<RecordResult> Record(const EventInput& input) override;
  Result<std::vector<RecordResult>> RecordMany(const std::vector<EventInput>& inputs) override;
  Result<Sequence> StateVersion(const SessionName& session) const override;
  Result<std::vector<Sequence>> StateVersions(
      const std::vector<SessionName>& sessions) const override;
  Status ReadChanges(const SessionName& session, Sequence after, int limit, RowRenderer render,
                     ChangesView* page) const override;
  Status DeleteSession(const SessionName& session) override;
  Result<bool> Watch(const std::string& watcher_key, const SessionName& target) override;
  Result<WatchManyResult> WatchMany(const std::vector<WatchSpec>& watches) override;
  Result<UnwatchResult> Unwatch(const std::vector<WatchSpec>& watches) override;
  Result<std::vector<Notice>> PendingNotices(const std::string& watcher_key) const override;
  Result<std::vector<Notice>> Drain(const std::string& watcher_key) override;
  Status Acknowledge(const std::string& watcher_key,
                     const std::vector<SessionName>& targets) override;
  Result<std::optional<CursorState>> Cursor(const std::string& watcher_key,
                                            const SessionName& target) const override;
  Result<std::vector<std::string>> WatchersOf(const SessionName& target) const override;
  Status ResetWatcher(const std::string& watcher_key) override;
  Result<uint64_t> Sweep() override;
  uint64_t SubscribeWakes(WakeCallback callback, std::string watcher_key) override;
  void UnsubscribeWakes(uint64_t id) override;
  void RunDueWakes() override;
  std::optional<int64_t> NextWakeDueMs() const override;
  Result<PruneStats> Prune() override;
  Result<VerifyReport> Verify() override;
  Result<VerifyReport> Rebuild() override;
  Result<EngineStats> Stats() const override;
  Result<EnginePulse> Pulse() const override;
  Status Backup(const std::string& dir) const override;  // engine/backup.cc
  Result<SessionStatusAt> StatusAt(const SessionName& session, std::optional<Sequence> as_of,
                                   Sequence after, int limit) const override;  // engine/as_of.cc
  Status ReplayUntil(Sequence until, const std::string& dir) const override;
  Status ForEachEvent(const std::function<Status(const Event&)>& fn) const override;
  const Clock& clock() const override { return *clock_; }

  // SideTableHost (engine/group_write.h).
  Status WriteInGroup(WriteFn fn) override;
  void AddDeleteStep(DeleteStep step) override { delete_steps_.push_back(std::move(step)); }
  const storage::Store& store() const override { return *store_; }
  SessionRef FindSession(const SessionName& canonical) const override;
  // Misdirected when `session` belongs to another partition (engine/agent_partition.h).
  Status CheckOwned(const SessionName& session) const override;

  // Tests: commands waiting in the commit queue (including the one being committed).
  std::size_t TEST_QueueLength();
  void TEST_SetCrashPoint(std::function<void(const char*)> f) { crash_point_ = std::move(f); }

  // Tests: the by_seq entries read ahead for the row cap (bounded by kCapFrontChunk).
  std::size_t TEST_CapFrontSize() const { return cap_front_.size(); }

 private:
  // Engine's way in for the side tables: this engine is their host.
  SideTableHost* side_table_host() const override { return const_cast<EngineImpl*>(this); }

  // A retained journal row by its place in the global order.
  struct RowRef {
    Sequence sequence = 0;
    SessionRef session;
  };

  // The commit group being built by the leader. One per engine, reused: its buffers keep
  // their capacity from group to group. Touched by the leader only.
  struct Group {
    explicit Group(const storage::Store& store) : batch(store) {}
    void Reset(int64_t now, const MetaRec& meta);
    storage::Batch batch;  // journal rows and side-table writes (the record's keyed writes)
    GroupRec rec;          // the group's log record
    MetaRec meta;          // the counters as this group leaves them
    int64_t now = 0;
    // The events' fold inputs, for the live fold (replay reads them from the rows).
    struct NewEvent {
      SessionRef session;
      Sequence sequence = 0;
      bool notifies = false, seeds_cursor = false;
      SessionRef actor;
      uint32_t watchers_begin = 0, watchers_end = 0;  // into `watchers`
      int64_t occurred_at = 0;
      const std::string* dedupe_key = nullptr;  // owned by the command
    };
    std::vector<NewEvent> events;
    std::vector<SessionRef> watchers;
    std::unordered_map<std::string_view, const Event*> new_dedupe;  // this group's keys
    std::unordered_map<std::string, SessionRef> new_refs;           // names interned here
    std::vector<std::pair<SessionRef, SessionName>> new_names;
    GroupOverlay side_writes;  // what side tables wrote this group (GroupWrite::Get)
    std::vector<Sequence> deleted_rows;  // rows deleted by key (age pass, session delete),
                                         // in sequence order
    uint64_t rows_pruned = 0;            // by retention (row cap and age pass), for the counters
    PruneStats* prune_stats = nullptr;  // the group's PruneCmd, if any
    SweepCmd* sweep = nullptr;          // the group's SweepCmd, if any
    projections::FoldEffects fx;
    EventEncoder event_encoder;
    RowRunWriter row_runs;  // this group's rows, written as by_seq runs before the commit
    GroupEncoder group_encoder;
  };

  // ---- write_path.cc: the queue, group commit, the fold ----
  Status Execute(Command& cmd);
  Status WritableLocked();
  void NoteWriteFailureLocked(const Status& st);
  void RunGroup(const std::vector<Command*>& group);
  Status BuildCommand(Command& cmd);
  Status CommitGroup();
  void FoldGroupLocked();
  void FoldEventLocked(const Group::NewEvent& e);
  void FoldRowsOfOpLocked(const projections::LogOp& op);
  // `folded`: when the group became visible to readers (where wake_seconds starts).
  void PublishWakes(int64_t now, std::chrono::steady_clock::time_point folded);
  void MaybeMaintenance();

  void BuildRecord(RecordCmd& cmd, Status* st);
  Status BuildOneEvent(PreparedEvent& pe, RecordResult* out);
  Result<std::optional<Event>> FindDuplicate(const std::string& dedupe_key);
  SessionRef Intern(const SessionName& name);
  SessionRef LookupRef(const SessionName& name) const;  // including this group's names
  void RememberNameLocked(SessionRef ref, const SessionName& name);
  SessionRef FindRef(const SessionName& name) const;

  // ---- commands.cc: the other commands ----
  void BuildWatch(WatchCmd& cmd);
  void BuildUnwatch(UnwatchCmd& cmd);
  Status ResolveWatchPairs(const std::vector<WatchSpec>& watches, bool numbered,
                           std::vector<std::pair<SessionName, SessionName>>* out);
  void BuildAck(AckCmd& cmd);
  void BuildReset(ResetCmd& cmd);
  Status BuildDelete(DeleteCmd& cmd);
  void BuildSweep(SweepCmd& cmd);
  // A GroupWrite on the group being built.
  GroupWrite SideTableWrite();
  // Takes the next sequence for an op and adds it to the group record.
  projections::LogOp& AddOp(projections::LogOp::Type type);
  const SessionName* NameOf(SessionRef ref) const;
  Notice MakeNotice(const SessionName& watcher, SessionRef target, Sequence since) const;
  std::vector<Notice> PendingLocked(SessionRef watcher) const;
  // PendingLocked over another state (as_of.cc). REQUIRES: state_mu_ held (for the names).
  std::vector<Notice> PendingIn(const projections::ProjectionState& state,
                                SessionRef watcher) const;

  // ---- retention.cc ----
  // Row cap inside a commit group: the oldest rows past max_rows go by moving the mark. Also
  // settles the group's row count (rec.rows_removed, meta.journal_rows). Reads by_seq.
  Status EnforceRowCap();
  // Reads the next kCapFrontChunk by_seq entries after cap_front_'s last (or the mark) into
  // cap_front_; `*more` is false when there were none.
  Status ExtendCapFront(bool* more);
  // Calls `fn` for every retained row after `after` (every by_seq run member not removed),
  // in sequence order, until it returns false. Corruption for a run that does not decode.
  Status ForEachIndexedRow(Sequence after, const std::function<bool(const IndexedRow&)>& fn) const;
  // Puts the group's new runs and rewrites the runs holding the rows it deleted by key.
  Status WriteRowRuns();
  // The dedupe key of a row its run marks as keyed (the run holds only the mark); nullopt
  // when the row is missing or does not decode.
  Result<std::optional<std::string>> DedupeKeyOfRow(const IndexedRow& row) const;
  // Deletes the dedupe entries naming `rows` (one pass over the dedupe index): for rows
  // deleted by key whose own bytes cannot say their key.
  Status DeleteDedupeEntriesOf(const std::vector<RowRef>& rows);
  // Full pass: age, row cap, idle cursors.
  Status BuildPrune(PruneCmd& cmd);
  // Calls `fn` for every retained row that may be older than `cutoff`, in sequence order,
  // from by_seq: stops once no later row can be (occurredAt is clamped to at most
  // kClampWindowMs before its commit), so it reads the aged rows plus at most a day's rows.
  Status ForEachRowAgedBefore(int64_t cutoff, const std::function<void(const IndexedRow&)>& fn);
  // Deletes a retained row and its index entries by key in the group's batch.
  void DeleteRowByKey(SessionRef session, Sequence sequence, std::string_view dedupe_key);
  // Logs a prune raising the watermarks of `rows`' sessions.
  void AddPrune(const std::vector<RowRef>& rows, int64_t cursor_cutoff, Sequence new_cap_mark);
  // A group that deletes rows by key (age pass, session delete) first checkpoints when a
  // row it deletes is not covered yet: replay must never need a deleted row.
  Status CheckpointBeforeDeletes(const Command& cmd, int64_t now);
  // Whether a row of `session` (any, when null) after the checkpoint is older than
  // `cutoff` (any age, when 0): reads only the rows after the checkpoint.
  Result<bool> RowsAfterCheckpoint(SessionRef session, int64_t cutoff) const;

  // ---- checkpoint.cc ----
  Status MaybeCheckpoint();
  // Writes the dirty projections with the log position they cover, then purges the log.
  Status Checkpoint();
  // Adds the checkpoint's meta (covering everything folded) to `b` and writes `b`. On
  // failure notes it (sticky) and returns it; on success `*next` is the meta now durable.
  // Shared by Checkpoint and Rebuild.
  Status WriteCheckpoint(storage::Batch& b, MetaRec* next);
  bool CheckpointDue() const;
  Status LoadNumbering(bool stored);
  Status MaybeWriteNumbering(bool stored);
  Status CheckUnnumberedLog(bool stored) const;
  Status ClearOrRefuseInterruptedReplace();
  // CheckOwned for a read: a name that does not resolve matches nothing on any node, so it is
  // answered as today (empty), not misdirected.
  Status CheckOwnedForRead(const SessionName& session) const;
  // The fields of EnginePulse, which EngineStats has too, but wakes_sent (read outside the
  // state lock). Out is EnginePulse or EngineStats. REQUIRES: state_mu_ held (shared).
  template <typename Out>
  void ReadPulseLocked(Out* out) const;
  Status PurgeLog(log::LogPosition below);
  // The fold inputs of journal rows by sequence, each with the session whose row it is.
  struct RowFold {
    SessionRef session;
    StoredEventFold fold;
  };
  using RowFolds = std::unordered_map<Sequence, RowFold>;
  // Folds the log after `meta->applied_position` into `state` (replay), advancing the
  // counters (and the retained row count) in `meta`. Reads each event's fold inputs from its
  // journal row: from `rows` when given (a caller that walked the journal already), else with a
  // point Get per event. REQUIRES: `rows`, when given, holds every row with a sequence above
  // `meta->last_sequence`; a replayed event missing from it is Corruption, as a missing row is.
  Status ReplayLog(projections::ProjectionState& state, MetaRec* meta, uint64_t* records,
                   const RowFolds* rows = nullptr) const;
  // Load's part under the exclusive lock: the meta, names, projections and the replay.
  Status LoadState(bool* had_meta, bool* migrate_format2);
  Status LoadProjections(projections::ProjectionState& state) const;
  Status LoadNames();
  Status MigrateFormat1(MetaRec* meta);
  // Formats 2 and 3 -> 4, after the replay at open: rewrites the row indexes of every retained
  // row (one walk of the journal, in bounded batches; a run per row, as the journal is walked
  // in session order), counts them, and checkpoints as format 4. Idempotent: a crash part-way
  // leaves the old format in the meta and the next open starts again. A damaged retained row
  // is its Corruption (only the index entries are rewritten; the rows are untouched).
  Status MigrateRowIndexes();

  // ---- as_of.cc ----
  struct AsOfFold;
  // The projections right after `until` (retrying when a checkpoint moves under the fold).
  Status FoldAsOf(Sequence until, AsOfFold* out) const;
  Status FoldAsOfOnce(Sequence until, AsOfFold* out, bool* moved) const;
  Status FoldLogAsOf(Sequence until, MetaRec* m, AsOfFold* out) const;

  // ---- verify.cc ----
  Status RunVerify(VerifyCmd& cmd);
  // Runs the Verifier over every retained journal row (`*rows` counts them, `*digest` sums a
  // hash of each row's session and sequence) and keeps the fold inputs of every row above
  // `fold_after` in `*folds`, for ReplayLog.
  Status VerifyJournalRows(Sequence fold_after, uint64_t* rows, uint64_t* digest,
                           RowFolds* folds) const;
  // Checks by_seq and dedupe against the journal's count and digest; adds what differs.
  Status VerifyRowIndexes(uint64_t rows, uint64_t digest, VerifyReport* report) const;

  EngineOptions options_;
  std::shared_ptr<Clock> clock_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<log::LogBackend> log_;
  // The read side of changesSince: reused iterators and the row cache. Declared after
  // store_ so that its iterators are destroyed before the database closes.
  std::unique_ptr<ChangesReader> reader_;
  KindTable kinds_;
  WakeScheduler wakes_;

  // Guarded by state_mu_ (shared for readers; exclusive for the leader's fold).
  mutable std::shared_mutex state_mu_;
  projections::ProjectionState state_;
  MetaRec meta_;  // counters as of the last folded group; checkpoint fields as of the last one
  std::unordered_map<std::string, SessionRef> refs_by_name_;  // agent \0 key -> ref
  std::unordered_map<uint64_t, SessionName> names_by_ref_;
  std::unordered_set<uint64_t> subagent_refs_;  // sub-agent keys: notices but no wakes
  // A failed durable write (other than a full disk): every later write is refused until
  // the engine is reopened, as in LevelDB.
  Status sticky_error_;
  // The disk was full: writes are refused until RocksDB can resume (WritableLocked).
  Status space_error_;

  // Leader-only (the commit leader is the only one to read or write these).
  Group group_;
  // The oldest retained rows above the row-cap mark, read ahead from by_seq in chunks so
  // that the row cap (a few rows a group at the cap) needs no iterator per group. It holds
  // every retained row in (mark, back().sequence]: the fold pops what a prune's mark passes,
  // and drops it all when a group deletes rows by key. Bounded by the cap's excess and
  // kCapFrontChunk, not by the journal.
  std::deque<RowRef> cap_front_;
  static constexpr std::size_t kCapFrontChunk = 1024;
  // The row cap deletes a prefix of the global order by moving meta_.row_cap_mark: reads
  // start above it, and the compaction filter drops journal rows at or below this copy —
  // the mark of the last durable checkpoint, so that a row replay may still need is kept.
  std::shared_ptr<std::atomic<uint64_t>> durable_cap_mark_;

  // Cumulative counters for Stats(); written by the leader, read by anyone.
  struct Counters {
    std::atomic<uint64_t> events_recorded{0}, notices_opened{0}, rows_pruned{0}, cursors_expired{0},
        commit_groups{0};
    // Per durable group (EngineStats says what each times): two steady-clock reads a group,
    // a third when it fires wakes; never one per event.
    Histogram commit_seconds{kLatencyBounds}, wake_seconds{kLatencyBounds};
    Histogram group_commands{kSizeBounds}, group_events{kSizeBounds};
  };
  Counters counters_;

  std::function<void(const char*)> crash_point_;  // tests only (EngineTestHooks)
  // The side tables' shares of DeleteSession; registered at open, then read-only.
  std::vector<DeleteStep> delete_steps_;

  // The commit queue.
  std::mutex queue_mu_;
  std::deque<Command*> queue_;
};

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_ENGINE_IMPL_H_

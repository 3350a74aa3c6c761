// EngineImpl: the Engine behind include/statewatch/engine.h.
//
// Write path (architecture.md §3). Every mutation is a Command. Callers queue their
// commands; the caller at the front of the queue becomes the leader, takes up to
// max_group_commands queued commands (group commit), applies them one after another to the
// in-memory projections through the folds, gathers every change in one storage::Batch and
// writes it once (fsync under Durability::kSync). Then each caller learns its result, and
// the wakes of the notices that opened are published — never before the batch is durable.
//
// The leader holds state_mu_ exclusively from the first fold until the batch is durable, so
// readers (which take it shared) only ever see durable state; they wait at most for one
// group commit. On a failed write the in-memory state is reloaded from the store and every
// later write fails (sticky error); reads go on.
//
// Files: engine_impl.cc (open, load, reads), commit.cc (commands and group commit),
// retention.cc (pruning), verify.cc (checkpoint, verify, rebuild).
#ifndef STATEWATCH_ENGINE_ENGINE_IMPL_H_
#define STATEWATCH_ENGINE_ENGINE_IMPL_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/event_validation.h"
#include "engine/records.h"
#include "engine/wake_scheduler.h"
#include "projections/projection_state.h"
#include "statewatch/engine.h"
#include "storage/store.h"

namespace statewatch::engine {

// Test-only hooks for Open.
struct EngineTestHooks {
  std::shared_ptr<storage::FaultInjector> faults;
};
Result<std::unique_ptr<Engine>> OpenEngineWithHooks(const EngineOptions& options,
                                                    const std::string& path,
                                                    const EngineTestHooks& hooks);

struct AuxContext;

// One queued mutation and, once done, its result.
struct Command {
  enum class Type {
    kRecord,
    kWatch,
    kAck,
    kReset,
    kDelete,
    kPrune,
    kSweep,
    kVerify,
    kRebuild,
    kUpsertSession,
    kAux
  };
  Type type = Type::kRecord;
  // inputs
  std::vector<PreparedEvent> events;  // kRecord
  SessionName watcher;                // kWatch, kAck, kReset
  SessionName target;                 // kWatch, kDelete
  std::vector<SessionName> targets;   // kAck (ignored when ack_all)
  bool ack_all = false;               // kAck: drain every pending notice
  SessionRecord session_record;       // kUpsertSession
  // kAux: a side-table change (transcripts, runs, deliveries, upstream links) made inside the
  // commit group; it may intern names and read the store.
  std::function<Status(struct AuxContext&)> aux;
  // outputs
  Status status;
  std::vector<RecordResult> records;
  bool watched = false;
  std::vector<Notice> notices;
  PruneStats prune;
  uint64_t count = 0;
  VerifyReport verify;
  // queue bookkeeping
  bool done = false;
  std::condition_variable cv;
};

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineOptions& options, std::unique_ptr<storage::Store> store,
             std::shared_ptr<std::atomic<uint64_t>> durable_cap_mark);
  ~EngineImpl() override;

  Status Load();  // reads meta, names, projections into memory

  Status Start() override;
  Result<RecordResult> Record(const EventInput& input) override;
  Result<std::vector<RecordResult>> RecordMany(const std::vector<EventInput>& inputs) override;
  Result<Sequence> StateVersion(const SessionName& session) const override;
  Result<std::vector<Sequence>> StateVersions(
      const std::vector<SessionName>& sessions) const override;
  Result<ChangesPage> ChangesSince(const SessionName& session, Sequence after,
                                   int limit) const override;
  Status DeleteSession(const SessionName& session) override;
  Result<bool> Watch(const std::string& watcher_key, const SessionName& target) override;
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
  Status AppendTranscript(const SessionName& session,
                          std::vector<TranscriptMessage> messages) override;
  Result<std::vector<TranscriptMessage>> RecentTranscript(const SessionName& session,
                                                          std::size_t limit) const override;
  Result<std::vector<TranscriptMessage>> FirstTranscript(const SessionName& session,
                                                         std::size_t limit) const override;
  Status PutRun(const RunRecord& run) override;
  Result<std::optional<RunRecord>> GetRun(const std::string& run_id) const override;
  Result<std::vector<RunRecord>> ListRuns() const override;
  Result<uint64_t> EnqueueDelivery(const Delivery& delivery) override;
  Result<bool> AckDelivery(uint64_t id) override;
  Result<std::vector<Delivery>> PendingDeliveries(const std::string& agent_id) const override;
  Status PutUpstreamLink(const UpstreamLink& link) override;
  Status DeleteUpstreamLink(const SessionName& session) override;
  Result<std::optional<UpstreamLink>> GetUpstreamLink(const SessionName& session) const override;
  Result<std::vector<UpstreamLink>> ListUpstreamLinks() const override;
  Status UpsertSession(const SessionRecord& record) override;
  Result<std::optional<SessionRecord>> GetSession(const SessionName& name) const override;
  Result<std::vector<SessionRecord>> ListSessions() const override;
  Result<PruneStats> Prune() override;
  Result<VerifyReport> Verify() override;
  Result<VerifyReport> Rebuild() override;
  Result<EngineStats> Stats() const override;
  Status Backup(const std::string& dir) const override;  // engine/backup.cc
  Status ForEachEvent(const std::function<Status(const Event&)>& fn) const override;
  const Clock& clock() const override { return *clock_; }

 private:
  // The batch being built by the leader for one commit group.
  struct Group {
    explicit Group(const storage::Store& store) : batch(store) {}
    storage::Batch batch;
    int64_t now = 0;
    projections::FoldEffects fx;
    std::unordered_map<std::string, Event> new_events;  // by dedupe key, for replies
    struct NewRow {
      SessionRef session;
      Sequence sequence;
    };
    std::vector<NewRow> new_rows;  // journal rows added this group
    uint64_t rows_pruned = 0;      // counted for Stats() once durable
    uint64_t cursors_expired = 0;
    std::unordered_map<uint64_t, SessionRecord> new_sessions;  // registry entries this group
  };

  // ---- commit.cc ----
  Status Execute(Command& cmd);
  // OK when writes may go ahead; otherwise why not (FailedPrecondition after a failed
  // durable write, NoSpace while the disk stays full). Tries to resume after NoSpace.
  Status WritableLocked();
  // Records a failed store write: NoSpace is retryable, anything else sticky.
  void NoteWriteFailureLocked(const Status& st);
  void RunGroup(const std::vector<Command*>& group);
  void ApplyCommand(Command& cmd, Group& g);
  void ApplyRecord(Command& cmd, Group& g);
  Status ApplyOneEvent(PreparedEvent& pe, Group& g, RecordResult* out);
  void ApplyWatch(Command& cmd, Group& g);
  void ApplyAck(Command& cmd, Group& g);
  void ApplyReset(Command& cmd, Group& g);
  void ApplyDelete(Command& cmd, Group& g);
  void ApplySweep(Command& cmd, Group& g);
  void ApplyUpsertSession(Command& cmd, Group& g);
  Status RunAux(std::function<Status(AuxContext&)> fn);
  friend struct AuxContext;
  // Appends a log record (assigning it the next sequence) and folds it.
  Sequence AppendLog(LogRec& rec, Group& g);
  void FlushProjections(Group& g);
  void PublishWakes(const std::vector<projections::OpenedNotice>& opened, int64_t now);
  SessionRef Intern(const SessionName& name, Group& g);
  void RememberName(SessionRef ref, const SessionName& name);
  SessionRef FindRef(const SessionName& name) const;
  const SessionName* NameOf(SessionRef ref) const;
  Notice MakeNotice(const SessionName& watcher, SessionRef target, Sequence since) const;
  std::vector<Notice> PendingLocked(SessionRef watcher) const;
  void MaybeMaintenance();

  // ---- retention.cc ----
  // Row cap inside a commit group: deletes the oldest durable rows past max_rows.
  Status EnforceRowCap(Group& g, PruneStats* stats);
  // Full pass: age, row cap, idle cursors.
  Status ApplyPrune(Command& cmd, Group& g);
  // Deletes the rows with these sequences and logs the prune (raising watermarks). With
  // `by_mark` the rows are the oldest retained ones, and instead of a delete per row the
  // row-cap mark moves past them (see row_cap_mark_).
  Status DeleteRows(const std::vector<Sequence>& rows, Group& g, PruneStats* stats,
                    int64_t cursor_cutoff, bool by_mark);
  // Deletes one retained row; false when it is not retained.
  bool DeleteRow(Sequence seq, Group& g);

  // ---- verify.cc ----
  Status MaybeCheckpoint();
  bool CheckpointDueLocked() const;
  Result<projections::ProjectionState> RebuildFromLog(VerifyReport* report) const;
  void ApplyVerify(Command& cmd, bool replace);
  Status VerifyJournalRows() const;

  Status LoadProjections(projections::ProjectionState& state, storage::Family family) const;

  EngineOptions options_;
  std::shared_ptr<Clock> clock_;
  std::unique_ptr<storage::Store> store_;
  KindTable kinds_;
  WakeScheduler wakes_;

  // Guarded by state_mu_ (shared for readers, exclusive for the leader).
  mutable std::shared_mutex state_mu_;
  projections::ProjectionState state_;
  MetaRec meta_;
  std::unordered_map<std::string, SessionRef> refs_by_name_;  // agent \0 key -> ref
  std::unordered_map<uint64_t, SessionName> names_by_ref_;
  std::unordered_set<uint64_t> subagent_refs_;  // sub-agent keys: notices but no wakes
  // The retained journal rows in global order: an in-memory mirror of the by_seq family, so
  // the row cap and the age pass find their rows without an iterator or a decode. ~100
  // bytes a row (5 MB at the default cap of 50,000).
  std::map<Sequence, RowIndexRec> rows_;
  // The row cap deletes a prefix of the global order, so it does not delete rows one by one:
  // meta_.row_cap_mark says every row at or below it is gone. Reads start above it, and
  // compaction filters drop journal, by_seq and dedupe records below it. This copy is what
  // the filters read; it moves only once the meta holding the mark is durable.
  std::shared_ptr<std::atomic<uint64_t>> durable_cap_mark_;
  // A failed durable write (other than a full disk): every later write is refused until
  // the engine is reopened, as in LevelDB.
  Status sticky_error_;
  // The disk was full: writes are refused until RocksDB can resume (WritableLocked).
  Status space_error_;

  // Cumulative counters for Stats(); written by the leader, read by anyone.
  struct Counters {
    std::atomic<uint64_t> events_recorded{0}, notices_opened{0}, rows_pruned{0}, cursors_expired{0},
        commit_groups{0};
  };
  Counters counters_;

  // The commit queue.
  std::mutex queue_mu_;
  std::deque<Command*> queue_;
};

// What a kAux command may touch inside its commit group.
struct AuxContext {
  EngineImpl& engine;
  storage::Batch& batch;
  int64_t now;
  MetaRec& meta;
  std::function<SessionRef(const SessionName&)> intern;
};

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_ENGINE_IMPL_H_

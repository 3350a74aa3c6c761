// statewatch::Engine — start here.
//
// An Engine owns one database directory: the durable signal journal of every session, the
// watchers' cursors, and the projections derived from them (heads, watermarks, pending
// notices). See docs/semantics.md for the behaviour reference.
//
//   auto engine = statewatch::Engine::Open(options, "./data");
//   if (!engine.ok()) ... engine.status().ToString() ...
//   (*engine)->Start();                       // long-lived processes: restart sweep
//   auto r = (*engine)->Record(input);        // durable when it returns OK
//
// Errors are values: no call throws. Writes are grouped (group commit): concurrent callers
// share one atomic RocksDB batch and one fsync, and each learns its own result when the
// batch is durable. Notices and wakes are published only after that.
//
// After a failed durable write every later write fails with FailedPrecondition until the
// engine is reopened (as in LevelDB); reads keep working.
//
// Thread-safe.
#ifndef STATEWATCH_ENGINE_H_
#define STATEWATCH_ENGINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/changes_view.h"
#include "statewatch/options.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

class Engine;

namespace engine {
class SideTableHost;
// The side tables' way in (the commit-group hook and the store, engine/group_write.h), given
// to each table once, when it is made. The engine Engine::Open makes is its own host; for any
// other Engine subclass this stops the process with a message naming `table` (a programming
// error, not a run-time condition). Defined in engine/group_write.cc.
SideTableHost& SideTableHostOf(const Engine& engine, const char* table);
}  // namespace engine

// The figures a frequent probe reads (the console's pulse, /healthz, /readyz), as Stats()
// has them, without the storage properties and distributions that make Stats() costly.
struct EnginePulse {
  Sequence last_sequence = 0;
  uint64_t pending_notices = 0;
  uint64_t notices_opened = 0;  // since open
  uint64_t wakes_sent = 0;      // since open
  std::string write_error;      // empty while writes are accepted
};

class Engine {
 public:
  // Opens (or creates) the database at `path`. Fails with Busy when another process holds
  // it, Corruption when a record fails verification.
  static Result<std::unique_ptr<Engine>> Open(const EngineOptions& options,
                                              const std::string& path);

  virtual ~Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The start step of a long-lived process (daemon or gateway): runs the restart sweep
  // (pending notices re-opened from durable cursors, docs/semantics.md,
  // "The transition table"). One-shot tools that only inspect the database do not call it.
  virtual Status Start() = 0;

  // ---- the journal ---------------------------------------------------------------------

  // Records one event atomically (docs/semantics.md, "Recording is one atomic step"). With a
  // dedupe key already present, returns the existing event with deduplicated = true and
  // changes nothing.
  // InvalidArgument names the bad field and value; nothing is written then.
  virtual Result<RecordResult> Record(const EventInput& input) = 0;

  // Records several events in order in one atomic batch. All inputs are validated first:
  // one bad input fails the call and nothing is written.
  virtual Result<std::vector<RecordResult>> RecordMany(const std::vector<EventInput>& inputs) = 0;

  // The session's state version: the highest sequence it ever recorded (0 if none). Never
  // goes backwards, also after pruning; only DeleteSession removes it.
  virtual Result<Sequence> StateVersion(const SessionName& session) const = 0;
  // Batched: one answer per session, same order.
  virtual Result<std::vector<Sequence>> StateVersions(
      const std::vector<SessionName>& sessions) const = 0;

  // The one read of a session's changes: the events of `session` with sequence > after,
  // ascending, at most `limit` (clamped to 1..200), with truncated /
  // earliestAvailableSequence / historyGap (docs/semantics.md, "Catching up: `changesSince`"),
  // into `*page` without a copy per field (include/statewatch/changes_view.h): events are
  // views into rows the page holds, shared with the engine's cache of recent rows when it has
  // them. `*page` is refilled (reuse one page to keep its capacity). With `render`,
  // page->rendered(i) holds render(event i), memoized with each cached row, so a row is
  // rendered once however often it is read. nullptr: no rendering. Never moves a cursor.
  // InvalidArgument for a malformed name; the page is then unspecified.
  virtual Status ReadChanges(const SessionName& session, Sequence after, int limit,
                             RowRenderer render, ChangesView* page) const = 0;
  // ReadChanges copied out into owning values (one page per thread is reused underneath):
  // for callers that keep the events. Not virtual: it is ReadChanges.
  Result<ChangesPage> ChangesSince(const SessionName& session, Sequence after,
                                   int limit = 200) const;

  // Removes the session's events, head and every cursor naming it (as watcher or target).
  // Other agents' sessions with the same key are untouched. OK when it did not exist.
  virtual Status DeleteSession(const SessionName& session) = 0;

  // ---- watchers and notices ------------------------------------------------------------

  // Explicit registration (docs/semantics.md, "How a watcher starts watching"): the watcher
  // follows `target` from its current state version. Returns false (and changes nothing)
  // when the watcher equals the target or either key is bare or malformed; an existing
  // cursor keeps its positions (true).
  virtual Result<bool> Watch(const std::string& watcher_key, const SessionName& target) = 0;

  // Many registrations in one atomic step (one commit group), as RecordMany is for events:
  // either every pair is watched afterwards or, when one is refused, nothing changes. A pair
  // Watch would refuse (false) is an error here: InvalidArgument "watches[i]: …" naming the
  // first such pair and why; Misdirected when a target lives in another partition. Pairs
  // that already have a cursor keep its positions; an empty list changes nothing.
  virtual Result<WatchManyResult> WatchMany(const std::vector<WatchSpec>& watches) = 0;

  // Removes watches in one atomic step (one commit group): each named pair's cursor and its
  // pending notice go; a pair without a cursor is counted and left alone. The pairs are
  // checked as WatchMany checks them, and a refused one changes nothing: InvalidArgument (a
  // list of more than one says "watches[i]: …"), Misdirected for another partition's target.
  // A later notifying event that passes the watcher, or a watch, starts a new cursor at the
  // target's head. An empty list changes nothing.
  virtual Result<UnwatchResult> Unwatch(const std::vector<WatchSpec>& watches) = 0;

  // The watcher's pending notices, oldest first. No side effects.
  virtual Result<std::vector<Notice>> PendingNotices(const std::string& watcher_key) const = 0;

  // Returns the pending notices and acknowledges them in one atomic step: L advances to the
  // frozen N; where notifying events arrived since, exactly one new notice opens.
  virtual Result<std::vector<Notice>> Drain(const std::string& watcher_key) = 0;

  // Acknowledges the pending notices of these targets only (others stay pending).
  virtual Status Acknowledge(const std::string& watcher_key,
                             const std::vector<SessionName>& targets) = 0;

  // The cursor of (watcher, target), or nullopt when there is none.
  virtual Result<std::optional<CursorState>> Cursor(const std::string& watcher_key,
                                                    const SessionName& target) const = 0;

  // The watchers holding a cursor on `target` (canonical keys, unordered).
  virtual Result<std::vector<std::string>> WatchersOf(const SessionName& target) const = 0;

  // Deletes every cursor held by the watcher (watcher session reset).
  virtual Status ResetWatcher(const std::string& watcher_key) = 0;

  // The restart sweep on demand: cursors with material past last-seen become pending again
  // (N = M). Every pending notice is then re-announced with a wake. Returns how many notices
  // are pending after the sweep.
  virtual Result<uint64_t> Sweep() = 0;

  // ---- wakes ---------------------------------------------------------------------------

  using WakeCallback = std::function<void(const Wake&)>;
  // Subscribes to wakes (all watchers when `watcher_key` is empty). The callback runs on the
  // thread that made the wake due (a writer, or RunDueWakes); it must be quick and must not
  // call back into the engine's write methods. Returns an id for Unsubscribe.
  virtual uint64_t SubscribeWakes(WakeCallback callback, std::string watcher_key = "") = 0;
  virtual void UnsubscribeWakes(uint64_t id) = 0;
  // Fires the merged wakes whose window has ended by the clock's now. Hosts call it from a
  // timer (the daemon does); tests call it after moving a ManualClock.
  virtual void RunDueWakes() = 0;
  // When RunDueWakes next has work (ms since epoch), if any.
  virtual std::optional<int64_t> NextWakeDueMs() const = 0;

  // ---- maintenance ---------------------------------------------------------------------

  // Pruning on demand: age (retention_ms), row cap (max_rows), idle cursors.
  virtual Result<PruneStats> Prune() = 0;

  // Rebuilds every projection from the snapshot and the retained log and diffs it with the
  // live one. Read-only.
  virtual Result<VerifyReport> Verify() = 0;
  // Replaces the live projections with the rebuilt ones.
  virtual Result<VerifyReport> Rebuild() = 0;

  virtual Result<EngineStats> Stats() const = 0;
  // A few counters of Stats(), cheap enough to ask every second per open console tab.
  virtual Result<EnginePulse> Pulse() const = 0;

  // Writes a consistent copy of the whole database (a RocksDB checkpoint: hard links where
  // `dir` is on the same file system, copies otherwise) into `dir`, which must not exist.
  // Writers go on meanwhile; the copy holds every write acknowledged before the call and no
  // partial batch. Engine::Open on `dir` opens it like the original.
  virtual Status Backup(const std::string& dir) const = 0;
  // ---- as of a past sequence (post-mortems) ----------------------------------------------

  // The session's status as it was right after sequence `as_of` (nullopt: now): its state
  // version, its changes (events with after < sequence <= as_of, paged as ChangesSince,
  // `limit` clamped to 1..200), the cursors it holds and the cursors on it (L/N/M), and its
  // pending notices with their exact text. The projections are rebuilt by the same folds as
  // replay, from the checkpoint and the retained log, up to and including as_of (also part
  // of a commit group); the live state is not touched and writers do not wait. Events that
  // existed at as_of but were pruned since are gone: pruning since as_of raises the answer's
  // watermark, so that historyGap says so exactly as ChangesSince does; a session deleted
  // since has deleted_at set and no events. Costs a fold of the log from the checkpoint to
  // as_of (one point read per event in it) and a walk of the log after it.
  // InvalidArgument when as_of is past the last sequence (or the name is malformed);
  // FailedPrecondition naming the earliest sequence it can rebuild when as_of is before it
  // (the log before the last checkpoint is gone); Busy when checkpoints kept moving under
  // the fold (ask again). An Engine other than Open's answers FailedPrecondition.
  virtual Result<SessionStatusAt> StatusAt(const SessionName& session,
                                           std::optional<Sequence> as_of, Sequence after = 0,
                                           int limit = 200) const;

  // Writes a new database into `dir` (which must not exist) holding the projections as they
  // were right after `until`, rebuilt as StatusAt does, with the journal rows up to `until`
  // that are still retained; the other tables (registry, transcripts, deliveries, links)
  // are copied as they are now. Engine::Open opens it like any other database; its next
  // sequence is until + 1. Read-only: works on a read-only engine. Errors as StatusAt, and
  // InvalidArgument when `dir` exists.
  virtual Status ReplayUntil(Sequence until, const std::string& dir) const;

  // Calls `fn` with every retained journal event, grouped by session and ascending within
  // one; stops at the first non-OK status `fn` returns and returns it. Read-only.
  virtual Status ForEachEvent(const std::function<Status(const Event&)>& fn) const = 0;

  // The engine's clock (the one in the options, or the system clock).
  virtual const Clock& clock() const = 0;

 protected:
  Engine() = default;

 private:
  friend engine::SideTableHost& engine::SideTableHostOf(const Engine& engine, const char* table);
  // The engine Open makes returns itself; any other subclass returns nullptr.
  virtual engine::SideTableHost* side_table_host() const { return nullptr; }
};

}  // namespace statewatch

#endif  // STATEWATCH_ENGINE_H_

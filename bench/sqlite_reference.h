// SqliteReference: the incumbent design on SQLite — the reference gateway's session-state
// tables — the baseline statewatch's benchmarks compare against in the same run.
//
// It keeps session state awareness the way the reference gateway does: three STRICT tables in
// one WAL-mode database, every operation a fixed sequence of prepared statements inside one
// write transaction, notices queued in memory after the commit. It is written to do the same
// logical work as statewatch per operation (docs/semantics.md,
// "Recording is one atomic step", "The transition table", "Catching up: `changesSince`" and
// "Retention"), not to be clever: the point is to measure the design as it is.
//
// Deliberate simplifications, none of which changes the work done per operation:
//  - inputs are taken as already normalised (no summary folding, no key parsing beyond the
//    `agent:` prefix that decides whether a key may watch);
//  - wakes are not modelled (the reference fires them from the in-memory queue).
//
// Several SqliteReference objects may open the same file, each its own connection (as
// several writers of a gateway would): SQLite serialises their write transactions with its
// file lock, and a writer that cannot take the lock within the busy timeout (default 5 s)
// gets a Busy status, nothing written.
//
// Not thread-safe: one caller at a time per object (the reference runs on the gateway's
// event loop).
#ifndef STATEWATCH_BENCH_SQLITE_REFERENCE_H_
#define STATEWATCH_BENCH_SQLITE_REFERENCE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "statewatch/status.h"

struct sqlite3;

namespace statewatch::bench {

// SQLite's `PRAGMA synchronous` in WAL mode.
enum class SqliteSync {
  kNormal,  // the reference's setting: durable across a process crash, not an OS crash
  kFull,    // fsync on every commit: durable across an OS crash (matches Durability::kSync)
};
const char* SqliteSyncName(SqliteSync s);  // "NORMAL" | "FULL"

// One event to record, already normalised. Empty optional strings are stored as NULL.
struct RefEventInput {
  std::string session_key;
  std::string agent_id;
  std::string session_id;
  std::string kind;
  std::string actor_type = "system";  // human | agent | system
  std::string actor_id;
  std::string run_id;
  int64_t occurred_at_ms = 0;
  std::string summary;
  std::string payload_json;
  std::string dedupe_key;
  std::vector<std::string> watchers;  // the producer's watchers
};

struct RefEvent {
  int64_t sequence = 0;
  std::string kind;
  std::string actor_type;
  std::string actor_id;
  std::string run_id;
  int64_t occurred_at_ms = 0;
  std::string summary;
  std::string payload_json;
};

struct RefRecordResult {
  int64_t sequence = 0;
  bool deduplicated = false;
};

// A queued notice: `changesSince since` on `target_key` for `watcher_key`.
struct RefNotice {
  std::string watcher_key;
  std::string target_key;
  int64_t since = 0;
  std::string text;  // docs/semantics.md, "One notice, not many", byte-exact
};

struct RefChangesPage {
  int64_t state_version = 0;
  std::vector<RefEvent> events;
  bool truncated = false;
  int64_t earliest_available_sequence = 0;
  bool history_gap = false;
};

struct RefPruneStats {
  int64_t rows_deleted = 0;
  int64_t sessions_touched = 0;
  int64_t cursors_expired = 0;
};

class SqliteReference {
 public:
  // Opens or creates the database file at `path` (WAL mode, the given synchronous level, the
  // given busy timeout) and creates the reference tables and indexes when missing.
  static Result<std::unique_ptr<SqliteReference>> Open(const std::string& path, SqliteSync sync,
                                                       int busy_timeout_ms = 5000);
  ~SqliteReference();
  SqliteReference(const SqliteReference&) = delete;
  SqliteReference& operator=(const SqliteReference&) = delete;

  // Records one event in one write transaction (as the reference design does; docs/benchmarks.md).
  // The notices it opens are appended to `notices` (when non-null) and to the in-memory
  // queue, after the commit.
  Result<RefRecordResult> RecordEvent(const RefEventInput& input,
                                      std::vector<RefNotice>* notices = nullptr);

  // Records `inputs` in order inside one write transaction (the same statements per event).
  Result<std::vector<RefRecordResult>> RecordBatch(const std::vector<RefEventInput>& inputs,
                                                   std::vector<RefNotice>* notices = nullptr);

  // Explicit registration (docs/semantics.md, "How a watcher starts watching"): a cursor
  // at the target's head unless one exists. False when the watcher equals the target or
  // either key is not agent-scoped.
  Result<bool> Watch(const std::string& watcher_key, const std::string& target_key,
                     const std::string& target_agent_id);

  // The session's events with sequence > after, ascending, at most `limit` (clamped to
  // 1..200): head/watermark select, up to limit + 1 rows, minimum retained sequence.
  Result<RefChangesPage> ChangesSince(const std::string& session_key, const std::string& agent_id,
                                      int64_t after, int limit = 200);

  // Drains the watcher's queued notices and acknowledges them in one transaction: per
  // target L = N, N = max(M, N). Returns the drained notices; where M > N a new notice
  // (`changesSince` old N) is queued for the next drain.
  Result<std::vector<RefNotice>> Acknowledge(const std::string& watcher_key);

  // One transaction: age pass (rows with occurred_at < cutoff), row-cap pass (keep the
  // newest `max_rows`), idle cursors (updated_at < cutoff). Watermarks rise to what is
  // actually deleted.
  Result<RefPruneStats> Prune(int64_t cutoff_ms, int64_t max_rows);

  // Cursors with M > L become pending again (N = M) in one transaction; their notices are
  // queued. Returns how many.
  Result<int64_t> RestartSweep();

  // The in-memory queue (one notice per (watcher, target)).
  std::size_t QueuedNotices() const;

  // Test helper: the cursor's (L, N, M), or all -1 when there is none.
  struct CursorRow {
    int64_t last_seen = -1, notified = -1, material = -1;
  };
  Result<CursorRow> ReadCursor(const std::string& watcher_key, const std::string& target_key);

  // The clock used for updated_at columns (ms since the epoch). Default: system clock.
  void SetNowForTesting(int64_t now_ms) { fixed_now_ms_ = now_ms; }

 private:
  struct Statements;
  SqliteReference(sqlite3* db, std::unique_ptr<Statements> stmts);

  int64_t NowMs() const;
  Status Begin();
  Status Commit();
  void Rollback();

  // The body of one event, inside an open transaction. Notices go to `pending`.
  Result<RefRecordResult> RecordLocked(const RefEventInput& input, int64_t now_ms,
                                       std::vector<RefNotice>* pending);
  Status UpdateCursorsLocked(const RefEventInput& input, int64_t sequence, int64_t now_ms,
                             std::vector<RefNotice>* pending);
  void Queue(const std::vector<RefNotice>& notices, std::vector<RefNotice>* out);

  sqlite3* db_;
  std::unique_ptr<Statements> stmts_;
  int64_t fixed_now_ms_ = 0;
  // watcher -> target -> notice. A pending notice's text never changes, so a map keeps one.
  std::map<std::string, std::map<std::string, RefNotice>> queue_;
};

// The notice text of docs/semantics.md, "One notice, not many".
std::string RefNoticeText(const std::string& target_key, int64_t since);

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_SQLITE_REFERENCE_H_

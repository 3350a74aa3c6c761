#include "bench/sqlite_reference.h"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <unordered_set>

namespace statewatch::bench {
namespace {

// The reference gateway's schema, verbatim.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS session_state_events (
  sequence INTEGER PRIMARY KEY AUTOINCREMENT,
  dedupe_key TEXT UNIQUE,
  session_key TEXT NOT NULL,
  session_id TEXT,
  agent_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  actor_type TEXT NOT NULL,
  actor_id TEXT,
  run_id TEXT,
  occurred_at INTEGER NOT NULL,
  summary TEXT NOT NULL,
  payload_json TEXT
) STRICT;
CREATE INDEX IF NOT EXISTS idx_session_state_events_session_sequence
  ON session_state_events(session_key, sequence DESC);
CREATE INDEX IF NOT EXISTS idx_session_state_events_time
  ON session_state_events(occurred_at DESC, sequence DESC);

CREATE TABLE IF NOT EXISTS session_state_heads (
  session_key TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  last_sequence INTEGER NOT NULL,
  pruned_max_sequence INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (session_key, agent_id)
) STRICT;

CREATE TABLE IF NOT EXISTS session_watch_cursors (
  watcher_session_key TEXT NOT NULL,
  target_session_key TEXT NOT NULL,
  last_seen_sequence INTEGER NOT NULL DEFAULT 0,
  notified_sequence INTEGER NOT NULL DEFAULT 0,
  material_sequence INTEGER NOT NULL DEFAULT 0,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (watcher_session_key, target_session_key)
) STRICT;
CREATE INDEX IF NOT EXISTS idx_session_watch_cursors_target
  ON session_watch_cursors(target_session_key);
)sql";

// docs/semantics.md, "Kinds": the kinds that open notices, and the one that seeds cursors.
bool IsNotifyingKind(const std::string& kind) {
  return kind == "human_direct_message" || kind == "upstream_missing" || kind == "goal_changed";
}
bool IsSeedingKind(const std::string& kind) { return kind == "child_spawned"; }

// Only agent-scoped keys (`agent:<id>:<rest>`) may watch. The full grammar is the engine's
// business; the reference checks the shape.
bool IsAgentScoped(const std::string& key) {
  if (key.size() < 9 || strncasecmp(key.c_str(), "agent:", 6) != 0) return false;
  std::size_t colon = key.find(':', 6);
  return colon != std::string::npos && colon > 6 && colon + 1 < key.size() && key[colon + 1] != ':';
}

// SQLITE_BUSY (another connection holds the write lock past busy_timeout) is Busy, so that
// a caller with several connections can tell contention from failure.
Status SqlError(sqlite3* db, const char* what) {
  std::string msg = std::string(what) + ": " + sqlite3_errmsg(db);
  if ((sqlite3_extended_errcode(db) & 0xff) == SQLITE_BUSY) return Status::Busy(std::move(msg));
  return Status::IOError(std::move(msg));
}

}  // namespace

// One prepared statement, reset after every use.
class Stmt {
 public:
  Stmt() = default;
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  Status Prepare(sqlite3* db, const char* sql) {
    db_ = db;
    if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt_, nullptr) != SQLITE_OK)
      return SqlError(db, sql);
    return Status::OK();
  }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  // Empty text binds NULL when `null_if_empty` (the optional columns).
  Stmt& Bind(int i, const std::string& v, bool null_if_empty = false) {
    if (null_if_empty && v.empty()) {
      sqlite3_bind_null(stmt_, i);
    } else {
      sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
    return *this;
  }
  // SQLITE_ROW -> true, SQLITE_DONE -> false, anything else -> error.
  Result<bool> Step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqlError(db_, sqlite3_sql(stmt_));
  }
  // Runs a statement that returns no rows, then resets it.
  Status Run() {
    Result<bool> r = Step();
    Reset();
    return r.status();
  }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
};

struct SqliteReference::Statements {
  Stmt begin, commit, rollback;
  Stmt insert_event, select_dedupe, upsert_head;
  Stmt select_watchers, select_cursor, upsert_cursor, insert_cursor_if_absent;
  Stmt select_head, select_page, select_min;
  Stmt update_ack;
  Stmt age_groups, age_delete, cap_offset, cap_groups, cap_delete, raise_watermark;
  Stmt delete_idle_cursors;
  Stmt sweep_select, sweep_update;

  Status PrepareAll(sqlite3* db) {
    const std::pair<Stmt*, const char*> all[] = {
        {&begin, "BEGIN IMMEDIATE"},
        {&commit, "COMMIT"},
        {&rollback, "ROLLBACK"},
        {&insert_event,
         "INSERT INTO session_state_events (dedupe_key, session_key, session_id, agent_id, "
         "kind, actor_type, actor_id, run_id, occurred_at, summary, payload_json) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
         "ON CONFLICT (dedupe_key) DO NOTHING"},
        {&select_dedupe, "SELECT sequence FROM session_state_events WHERE dedupe_key = ?1"},
        {&upsert_head,
         "INSERT INTO session_state_heads (session_key, agent_id, last_sequence, updated_at) "
         "VALUES (?1, ?2, ?3, ?4) ON CONFLICT (session_key, agent_id) DO UPDATE SET "
         "last_sequence = excluded.last_sequence, updated_at = excluded.updated_at"},
        {&select_watchers,
         "SELECT watcher_session_key FROM session_watch_cursors WHERE target_session_key = ?1"},
        {&select_cursor,
         "SELECT last_seen_sequence, notified_sequence, material_sequence "
         "FROM session_watch_cursors WHERE watcher_session_key = ?1 AND target_session_key = ?2"},
        {&upsert_cursor,
         "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key, "
         "last_seen_sequence, notified_sequence, material_sequence, updated_at) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
         "ON CONFLICT (watcher_session_key, target_session_key) DO UPDATE SET "
         "last_seen_sequence = excluded.last_seen_sequence, "
         "notified_sequence = excluded.notified_sequence, "
         "material_sequence = excluded.material_sequence, updated_at = excluded.updated_at"},
        {&insert_cursor_if_absent,
         "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key, "
         "last_seen_sequence, notified_sequence, material_sequence, updated_at) "
         "VALUES (?1, ?2, ?3, ?3, ?3, ?4) "
         "ON CONFLICT (watcher_session_key, target_session_key) DO NOTHING"},
        {&select_head,
         "SELECT last_sequence, pruned_max_sequence FROM session_state_heads "
         "WHERE session_key = ?1 AND agent_id = ?2"},
        {&select_page,
         "SELECT sequence, kind, actor_type, actor_id, run_id, occurred_at, summary, "
         "payload_json FROM session_state_events "
         "WHERE session_key = ?1 AND agent_id = ?2 AND sequence > ?3 "
         "ORDER BY sequence ASC LIMIT ?4"},
        {&select_min,
         "SELECT MIN(sequence) FROM session_state_events "
         "WHERE session_key = ?1 AND agent_id = ?2"},
        {&update_ack,
         "UPDATE session_watch_cursors SET last_seen_sequence = ?3, notified_sequence = ?4, "
         "updated_at = ?5 WHERE watcher_session_key = ?1 AND target_session_key = ?2"},
        {&age_groups,
         "SELECT session_key, agent_id, MAX(sequence), COUNT(*) FROM session_state_events "
         "WHERE occurred_at < ?1 GROUP BY session_key, agent_id"},
        {&age_delete,
         "DELETE FROM session_state_events "
         "WHERE session_key = ?1 AND agent_id = ?2 AND occurred_at < ?3"},
        {&cap_offset,
         "SELECT sequence FROM session_state_events ORDER BY sequence DESC LIMIT 1 OFFSET ?1"},
        {&cap_groups,
         "SELECT session_key, agent_id, MAX(sequence), COUNT(*) FROM session_state_events "
         "WHERE sequence <= ?1 GROUP BY session_key, agent_id"},
        {&cap_delete,
         "DELETE FROM session_state_events "
         "WHERE session_key = ?1 AND agent_id = ?2 AND sequence <= ?3"},
        {&raise_watermark,
         "UPDATE session_state_heads SET pruned_max_sequence = MAX(pruned_max_sequence, ?3) "
         "WHERE session_key = ?1 AND agent_id = ?2"},
        {&delete_idle_cursors, "DELETE FROM session_watch_cursors WHERE updated_at < ?1"},
        {&sweep_select,
         "SELECT watcher_session_key, target_session_key, last_seen_sequence "
         "FROM session_watch_cursors WHERE material_sequence > last_seen_sequence"},
        {&sweep_update,
         "UPDATE session_watch_cursors SET notified_sequence = material_sequence, "
         "updated_at = ?1 WHERE material_sequence > last_seen_sequence"},
    };
    for (const auto& [stmt, sql] : all) SW_RETURN_IF_ERROR(stmt->Prepare(db, sql));
    return Status::OK();
  }
};

const char* SqliteSyncName(SqliteSync s) { return s == SqliteSync::kFull ? "FULL" : "NORMAL"; }

std::string RefNoticeText(const std::string& target_key, int64_t since) {
  return "Session \"" + target_key +
         "\" changed (other actor). Reconcile before acting: session_status sessionKey \"" +
         target_key + "\" changesSince " + std::to_string(since) + ".";
}

Result<std::unique_ptr<SqliteReference>> SqliteReference::Open(const std::string& path,
                                                               SqliteSync sync,
                                                               int busy_timeout_ms) {
  sqlite3* db = nullptr;
  int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    Status st = SqlError(db, ("open " + path).c_str());
    sqlite3_close(db);
    return st;
  }
  std::string pragmas = std::string("PRAGMA journal_mode=WAL; PRAGMA synchronous=") +
                        SqliteSyncName(sync) +
                        "; PRAGMA busy_timeout=" + std::to_string(busy_timeout_ms) + ";";
  auto stmts = std::make_unique<Statements>();
  char* err = nullptr;
  for (const std::string& sql : {pragmas, std::string(kSchema)}) {
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      Status st = Status::IOError(std::string("schema: ") + (err ? err : "?"));
      sqlite3_free(err);
      sqlite3_close(db);
      return st;
    }
  }
  if (Status st = stmts->PrepareAll(db); !st.ok()) {
    stmts.reset();
    sqlite3_close(db);
    return st;
  }
  return std::unique_ptr<SqliteReference>(new SqliteReference(db, std::move(stmts)));
}

SqliteReference::SqliteReference(sqlite3* db, std::unique_ptr<Statements> stmts)
    : db_(db), stmts_(std::move(stmts)) {}

SqliteReference::~SqliteReference() {
  stmts_.reset();  // statements must be finalized before the connection closes
  sqlite3_close(db_);
}

int64_t SqliteReference::NowMs() const {
  if (fixed_now_ms_ != 0) return fixed_now_ms_;
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Status SqliteReference::Begin() { return stmts_->begin.Run(); }
Status SqliteReference::Commit() { return stmts_->commit.Run(); }
void SqliteReference::Rollback() { (void)stmts_->rollback.Run(); }

void SqliteReference::Queue(const std::vector<RefNotice>& notices, std::vector<RefNotice>* out) {
  for (const RefNotice& n : notices) {
    queue_[n.watcher_key].insert_or_assign(n.target_key, n);
    if (out) out->push_back(n);
  }
}

std::size_t SqliteReference::QueuedNotices() const {
  std::size_t n = 0;
  for (const auto& [watcher, targets] : queue_) n += targets.size();
  return n;
}

Result<RefRecordResult> SqliteReference::RecordEvent(const RefEventInput& input,
                                                     std::vector<RefNotice>* notices) {
  Result<std::vector<RefRecordResult>> r = RecordBatch({input}, notices);
  if (!r.ok()) return r.status();
  return r->front();
}

Result<std::vector<RefRecordResult>> SqliteReference::RecordBatch(
    const std::vector<RefEventInput>& inputs, std::vector<RefNotice>* notices) {
  int64_t now = NowMs();
  std::vector<RefNotice> pending;
  std::vector<RefRecordResult> results;
  results.reserve(inputs.size());
  SW_RETURN_IF_ERROR(Begin());
  for (const RefEventInput& input : inputs) {
    Result<RefRecordResult> r = RecordLocked(input, now, &pending);
    if (!r.ok()) {
      Rollback();
      return r.status();
    }
    results.push_back(*r);
  }
  if (Status st = Commit(); !st.ok()) {
    Rollback();
    return st;
  }
  Queue(pending, notices);  // only once the transaction is durable
  return results;
}

Result<RefRecordResult> SqliteReference::RecordLocked(const RefEventInput& in, int64_t now,
                                                      std::vector<RefNotice>* pending) {
  Stmt& ins = stmts_->insert_event;
  ins.Bind(1, in.dedupe_key, true).Bind(2, in.session_key).Bind(3, in.session_id, true);
  ins.Bind(4, in.agent_id).Bind(5, in.kind).Bind(6, in.actor_type).Bind(7, in.actor_id, true);
  ins.Bind(8, in.run_id, true).Bind(9, in.occurred_at_ms).Bind(10, in.summary);
  ins.Bind(11, in.payload_json, true);
  SW_RETURN_IF_ERROR(ins.Run());
  if (sqlite3_changes(db_) == 0) {  // the dedupe key exists: return that event, stop
    Stmt& sel = stmts_->select_dedupe;
    sel.Bind(1, in.dedupe_key);
    Result<bool> row = sel.Step();
    int64_t seq = (row.ok() && *row) ? sel.Int(0) : 0;
    sel.Reset();
    if (!row.ok()) return row.status();
    return RefRecordResult{seq, /*deduplicated=*/true};
  }
  int64_t seq = sqlite3_last_insert_rowid(db_);
  Stmt& head = stmts_->upsert_head;
  head.Bind(1, in.session_key).Bind(2, in.agent_id).Bind(3, seq).Bind(4, now);
  SW_RETURN_IF_ERROR(head.Run());
  SW_RETURN_IF_ERROR(UpdateCursorsLocked(in, seq, now, pending));
  return RefRecordResult{seq, /*deduplicated=*/false};
}

// docs/semantics.md, "Recording is one atomic step" (step 3) and "The transition table", one
// cursor at a time: the reference reads each watcher's cursor and upserts it, also when the notice
// is already pending (only M moves then) — the per-watcher write statewatch's coalescing avoids.
Status SqliteReference::UpdateCursorsLocked(const RefEventInput& in, int64_t seq, int64_t now,
                                            std::vector<RefNotice>* pending) {
  bool notifying = IsNotifyingKind(in.kind);
  bool seeding = IsSeedingKind(in.kind);
  if (!notifying && !seeding) return Status::OK();  // journal-only: no cursor moves

  std::vector<std::string> watchers = in.watchers;
  if (notifying) {
    Stmt& sel = stmts_->select_watchers;
    sel.Bind(1, in.session_key);
    Result<bool> row = sel.Step();
    for (; row.ok() && *row; row = sel.Step()) watchers.push_back(sel.Text(0));
    sel.Reset();
    SW_RETURN_IF_ERROR(row.status());
  }
  std::unordered_set<std::string> seen;
  for (std::size_t i = 0; i < watchers.size(); ++i) {
    const std::string& w = watchers[i];
    if (!IsAgentScoped(w) || !seen.insert(w).second) continue;
    bool producer_passed = i < in.watchers.size();
    int64_t l = 0, n = 0, m = 0;
    bool notice = false;
    if (seeding) {
      if (!producer_passed) continue;
      l = n = m = seq;  // spawn seed: overwrite any earlier cursor on the pair
    } else {
      if (w == in.actor_id) continue;  // self-suppression
      Stmt& cur = stmts_->select_cursor;
      cur.Bind(1, w).Bind(2, in.session_key);
      Result<bool> row = cur.Step();
      bool exists = row.ok() && *row;
      if (exists) l = cur.Int(0), n = cur.Int(1), m = cur.Int(2);
      cur.Reset();
      SW_RETURN_IF_ERROR(row.status());
      if (!exists) l = 0, n = 0;
      if (n <= l) {  // no notice pending: open one at L, freeze N
        n = seq;
        notice = true;
      }
      m = seq;
    }
    Stmt& up = stmts_->upsert_cursor;
    up.Bind(1, w).Bind(2, in.session_key).Bind(3, l).Bind(4, n).Bind(5, m).Bind(6, now);
    SW_RETURN_IF_ERROR(up.Run());
    if (notice) pending->push_back({w, in.session_key, l, RefNoticeText(in.session_key, l)});
  }
  return Status::OK();
}

Result<bool> SqliteReference::Watch(const std::string& watcher_key, const std::string& target_key,
                                    const std::string& target_agent_id) {
  if (watcher_key == target_key || !IsAgentScoped(watcher_key) || !IsAgentScoped(target_key))
    return false;
  SW_RETURN_IF_ERROR(Begin());
  Stmt& head = stmts_->select_head;
  head.Bind(1, target_key).Bind(2, target_agent_id);
  Result<bool> row = head.Step();
  int64_t version = (row.ok() && *row) ? head.Int(0) : 0;
  head.Reset();
  Stmt& ins = stmts_->insert_cursor_if_absent;
  ins.Bind(1, watcher_key).Bind(2, target_key).Bind(3, version).Bind(4, NowMs());
  Status st = row.ok() ? ins.Run() : row.status();
  if (st.ok()) st = Commit();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  return true;
}

Result<RefChangesPage> SqliteReference::ChangesSince(const std::string& session_key,
                                                     const std::string& agent_id, int64_t after,
                                                     int limit) {
  limit = std::clamp(limit, 1, 200);
  RefChangesPage page;
  int64_t watermark = 0;
  Stmt& head = stmts_->select_head;
  head.Bind(1, session_key).Bind(2, agent_id);
  Result<bool> row = head.Step();
  if (row.ok() && *row) page.state_version = head.Int(0), watermark = head.Int(1);
  head.Reset();
  SW_RETURN_IF_ERROR(row.status());

  Stmt& sel = stmts_->select_page;
  sel.Bind(1, session_key).Bind(2, agent_id).Bind(3, after).Bind(4, int64_t{limit} + 1);
  for (row = sel.Step(); row.ok() && *row; row = sel.Step()) {
    if (static_cast<int>(page.events.size()) == limit) {
      page.truncated = true;
      break;
    }
    page.events.push_back({sel.Int(0), sel.Text(1), sel.Text(2), sel.Text(3), sel.Text(4),
                           sel.Int(5), sel.Text(6), sel.Text(7)});
  }
  sel.Reset();
  SW_RETURN_IF_ERROR(row.status());

  Stmt& min = stmts_->select_min;
  min.Bind(1, session_key).Bind(2, agent_id);
  row = min.Step();
  bool has_min = row.ok() && *row && !min.IsNull(0);
  int64_t earliest = has_min ? min.Int(0) : 0;
  min.Reset();
  SW_RETURN_IF_ERROR(row.status());
  if (!has_min) earliest = page.state_version > 0 ? page.state_version + 1 : 0;
  page.earliest_available_sequence = earliest;
  page.history_gap = after < watermark;
  return page;
}

Result<std::vector<RefNotice>> SqliteReference::Acknowledge(const std::string& watcher_key) {
  auto it = queue_.find(watcher_key);
  if (it == queue_.end()) return std::vector<RefNotice>{};
  int64_t now = NowMs();
  std::vector<RefNotice> drained, reopened;
  SW_RETURN_IF_ERROR(Begin());
  Status st;
  for (const auto& [target, notice] : it->second) {
    Stmt& cur = stmts_->select_cursor;
    cur.Bind(1, watcher_key).Bind(2, target);
    Result<bool> row = cur.Step();
    bool exists = row.ok() && *row;
    int64_t n = exists ? cur.Int(1) : 0, m = exists ? cur.Int(2) : 0;
    cur.Reset();
    if (st = row.status(); !st.ok()) break;
    drained.push_back(notice);
    if (!exists) continue;  // the cursor went away (reset, delete, expiry)
    Stmt& ack = stmts_->update_ack;
    ack.Bind(1, watcher_key).Bind(2, target).Bind(3, n).Bind(4, std::max(m, n)).Bind(5, now);
    if (st = ack.Run(); !st.ok()) break;
    if (m > n) reopened.push_back({watcher_key, target, n, RefNoticeText(target, n)});
  }
  if (st.ok()) st = Commit();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  queue_.erase(it);
  Queue(reopened, nullptr);
  return drained;
}

Result<RefPruneStats> SqliteReference::Prune(int64_t cutoff_ms, int64_t max_rows) {
  RefPruneStats stats;
  SW_RETURN_IF_ERROR(Begin());
  // Collect the groups first: SQLite does not define a SELECT's result while the same
  // connection deletes from the table it reads.
  struct Group {
    std::string session_key, agent_id;
    int64_t max_sequence, rows;
  };
  auto groups_of = [](Stmt& sel, int64_t bound, std::vector<Group>* out) -> Status {
    sel.Bind(1, bound);
    Result<bool> row = sel.Step();
    for (; row.ok() && *row; row = sel.Step())
      out->push_back({sel.Text(0), sel.Text(1), sel.Int(2), sel.Int(3)});
    sel.Reset();
    return row.status();
  };
  auto raise_and_delete = [&](const std::vector<Group>& groups, Stmt& del,
                              int64_t bound) -> Status {
    for (const Group& g : groups) {
      Stmt& raise = stmts_->raise_watermark;
      raise.Bind(1, g.session_key).Bind(2, g.agent_id).Bind(3, g.max_sequence);
      SW_RETURN_IF_ERROR(raise.Run());  // watermark first, never creating a head
      del.Bind(1, g.session_key).Bind(2, g.agent_id).Bind(3, bound);
      SW_RETURN_IF_ERROR(del.Run());
      stats.rows_deleted += g.rows;
      stats.sessions_touched += 1;
    }
    return Status::OK();
  };
  Status st = [&]() -> Status {
    std::vector<Group> groups;
    SW_RETURN_IF_ERROR(groups_of(stmts_->age_groups, cutoff_ms, &groups));
    SW_RETURN_IF_ERROR(raise_and_delete(groups, stmts_->age_delete, cutoff_ms));

    Stmt& off = stmts_->cap_offset;
    off.Bind(1, max_rows);
    Result<bool> row = off.Step();
    int64_t cap_bound = (row.ok() && *row) ? off.Int(0) : 0;
    off.Reset();
    SW_RETURN_IF_ERROR(row.status());
    if (cap_bound > 0) {
      groups.clear();
      SW_RETURN_IF_ERROR(groups_of(stmts_->cap_groups, cap_bound, &groups));
      SW_RETURN_IF_ERROR(raise_and_delete(groups, stmts_->cap_delete, cap_bound));
    }
    stmts_->delete_idle_cursors.Bind(1, cutoff_ms);
    SW_RETURN_IF_ERROR(stmts_->delete_idle_cursors.Run());
    stats.cursors_expired = sqlite3_changes(db_);
    return Commit();
  }();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  return stats;
}

Result<int64_t> SqliteReference::RestartSweep() {
  std::vector<RefNotice> notices;
  SW_RETURN_IF_ERROR(Begin());
  Stmt& sel = stmts_->sweep_select;
  Result<bool> row = sel.Step();
  for (; row.ok() && *row; row = sel.Step()) {
    std::string target = sel.Text(1);
    int64_t l = sel.Int(2);
    notices.push_back({sel.Text(0), target, l, RefNoticeText(target, l)});
  }
  sel.Reset();
  Status st = row.status();
  if (st.ok()) {
    stmts_->sweep_update.Bind(1, NowMs());
    st = stmts_->sweep_update.Run();
  }
  if (st.ok()) st = Commit();
  if (!st.ok()) {
    Rollback();
    return st;
  }
  Queue(notices, nullptr);
  return static_cast<int64_t>(notices.size());
}

Result<SqliteReference::CursorRow> SqliteReference::ReadCursor(const std::string& watcher_key,
                                                               const std::string& target_key) {
  CursorRow out;
  Stmt& cur = stmts_->select_cursor;
  cur.Bind(1, watcher_key).Bind(2, target_key);
  Result<bool> row = cur.Step();
  if (row.ok() && *row) out = {cur.Int(0), cur.Int(1), cur.Int(2)};
  cur.Reset();
  if (!row.ok()) return row.status();
  return out;
}

}  // namespace statewatch::bench

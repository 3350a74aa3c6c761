// The reference design in a Node gateway: the session-state tables of the reference gateway on
// better-sqlite3, one connection, WAL mode, every operation a fixed sequence of prepared
// statements in one write transaction, notices queued in memory after the commit. The same
// schema, statements and order as the C++ baseline (bench/sqlite_reference.cc), so that the
// Node benchmark (bench/node/gateway_bench.mjs) compares the daemon with the design a Node
// gateway runs today, doing the same logical work per operation (docs/semantics.md,
// "Recording is one atomic step", "The transition table", "How a watcher starts watching").
//
// As in the C++ baseline, inputs are taken as already normalised and wakes are not modelled.
// better-sqlite3's API is synchronous: a call holds the event loop until its commit returns.

const SCHEMA = `
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
`;

// docs/semantics.md, "Kinds": the kinds that open notices, and the one that seeds cursors.
const NOTIFYING = new Set(["human_direct_message", "upstream_missing", "goal_changed"]);
const SEEDING = "child_spawned";

// agent:<agentId>:<rest> with a non-empty agent id and rest (the C++ baseline's IsAgentScoped).
export function isAgentScoped(key) {
  if (key.length < 9 || key.slice(0, 6).toLowerCase() !== "agent:") return false;
  const colon = key.indexOf(":", 6);
  return colon > 6 && colon + 1 < key.length && key[colon + 1] !== ":";
}

// The agent id of an agent-scoped key (what the gateway derives before it records).
export const agentIdOf = (key) => key.slice(6, key.indexOf(":", 6));

// docs/semantics.md, "One notice, not many", byte-exact.
export const noticeText = (target, since) =>
  `Session "${target}" changed (other actor). Reconcile before acting: session_status ` +
  `sessionKey "${target}" changesSince ${since}.`;

export class ReferenceSqlite {
  // `Database` is better-sqlite3's constructor; `synchronous` "NORMAL" (the reference's
  // setting) or "FULL" (an fsync a commit, as the daemon's `sync` durability).
  constructor(Database, path, synchronous) {
    this.db = new Database(path);
    this.db.pragma("journal_mode = WAL");
    this.db.pragma(`synchronous = ${synchronous}`);
    this.db.pragma("busy_timeout = 5000");
    this.db.exec(SCHEMA);
    const p = (sql) => this.db.prepare(sql);
    this.s = {
      insertEvent: p(
        "INSERT INTO session_state_events (dedupe_key, session_key, session_id, agent_id, " +
          "kind, actor_type, actor_id, run_id, occurred_at, summary, payload_json) " +
          "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (dedupe_key) DO NOTHING"),
      selectDedupe: p("SELECT sequence FROM session_state_events WHERE dedupe_key = ?").pluck(),
      upsertHead: p(
        "INSERT INTO session_state_heads (session_key, agent_id, last_sequence, updated_at) " +
          "VALUES (?, ?, ?, ?) ON CONFLICT (session_key, agent_id) DO UPDATE SET " +
          "last_sequence = excluded.last_sequence, updated_at = excluded.updated_at"),
      selectWatchers: p(
        "SELECT watcher_session_key FROM session_watch_cursors WHERE target_session_key = ?")
        .pluck(),
      selectCursor: p(
        "SELECT last_seen_sequence, notified_sequence, material_sequence " +
          "FROM session_watch_cursors WHERE watcher_session_key = ? AND target_session_key = ?")
        .raw(),
      upsertCursor: p(
        "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key, " +
          "last_seen_sequence, notified_sequence, material_sequence, updated_at) " +
          "VALUES (?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT (watcher_session_key, target_session_key) DO UPDATE SET " +
          "last_seen_sequence = excluded.last_seen_sequence, " +
          "notified_sequence = excluded.notified_sequence, " +
          "material_sequence = excluded.material_sequence, updated_at = excluded.updated_at"),
      insertCursorIfAbsent: p(
        "INSERT INTO session_watch_cursors (watcher_session_key, target_session_key, " +
          "last_seen_sequence, notified_sequence, material_sequence, updated_at) " +
          "VALUES (?, ?, ?, ?, ?, ?) " +
          "ON CONFLICT (watcher_session_key, target_session_key) DO NOTHING"),
      selectHead: p(
        "SELECT last_sequence FROM session_state_heads WHERE session_key = ? AND agent_id = ?")
        .pluck(),
    };
    // BEGIN IMMEDIATE, as the C++ baseline: the write lock is taken before the first read.
    this.recordTx = this.db.transaction((events, pending) =>
      events.map((e) => this.#recordLocked(e, Date.now(), pending))).immediate;
    this.watchTx = this.db.transaction((pairs) => pairs.map((w) => this.#watchLocked(w)))
      .immediate;
    this.queue = new Map();  // watcher -> target -> notice text, one notice per pair
  }

  // Records `events` (one or an array) in one write transaction; returns [{sequence,
  // deduplicated}], and queues the notices they open once the commit has returned.
  // An event: {sessionKey, kind, actorType, actorId?, summary, payloadJson?, dedupeKey?,
  // watchers?: the producer's watchers}.
  record(events) {
    const list = Array.isArray(events) ? events : [events];
    const pending = [];
    const results = this.recordTx(list, pending);
    for (const n of pending) {
      if (!this.queue.has(n.watcher)) this.queue.set(n.watcher, new Map());
      this.queue.get(n.watcher).set(n.target, n.text);
    }
    return results;
  }

  // Explicit registrations, one transaction for the list: a cursor at the target's head unless
  // one exists. [true | false] per pair (false when the watcher is the target or either key is
  // not agent-scoped), as the C++ baseline's Watch.
  watch(pairs) {
    return this.watchTx(Array.isArray(pairs) ? pairs : [pairs]);
  }

  queuedNotices() {
    let n = 0;
    for (const targets of this.queue.values()) n += targets.size;
    return n;
  }

  close() {
    this.db.close();
  }

  #recordLocked(e, now, pending) {
    const agentId = agentIdOf(e.sessionKey);
    const info = this.s.insertEvent.run(e.dedupeKey ?? null, e.sessionKey, null, agentId, e.kind,
      e.actorType, e.actorId ?? null, null, now, e.summary ?? "", e.payloadJson ?? null);
    if (info.changes === 0) {  // the dedupe key exists: that event, nothing more
      return { sequence: this.s.selectDedupe.get(e.dedupeKey), deduplicated: true };
    }
    const seq = Number(info.lastInsertRowid);
    this.s.upsertHead.run(e.sessionKey, agentId, seq, now);
    this.#updateCursorsLocked(e, seq, now, pending);
    return { sequence: seq, deduplicated: false };
  }

  // One cursor at a time, as the reference does: read each watcher's cursor and upsert it,
  // also when its notice is already pending (only M moves then).
  #updateCursorsLocked(e, seq, now, pending) {
    const notifying = NOTIFYING.has(e.kind);
    const seeding = e.kind === SEEDING;
    if (!notifying && !seeding) return;  // journal-only: no cursor moves
    const producers = e.watchers ?? [];
    const watchers = notifying ? [...producers, ...this.s.selectWatchers.all(e.sessionKey)]
      : producers;
    const seen = new Set();
    watchers.forEach((w, i) => {
      if (!isAgentScoped(w) || seen.has(w)) return;
      seen.add(w);
      let l = 0, n = 0, m = 0, notice = false;
      if (seeding) {
        if (i >= producers.length) return;
        l = n = m = seq;  // spawn seed: overwrite any earlier cursor on the pair
      } else {
        if (w === e.actorId) return;  // self-suppression
        const row = this.s.selectCursor.get(w, e.sessionKey);
        if (row) [l, n, m] = row;
        if (n <= l) {  // no notice pending: open one at L, freeze N
          n = seq;
          notice = true;
        }
        m = seq;
      }
      this.s.upsertCursor.run(w, e.sessionKey, l, n, m, now);
      if (notice) pending.push({ watcher: w, target: e.sessionKey, text: noticeText(e.sessionKey, l) });
    });
  }

  #watchLocked({ watcher, target }) {
    if (watcher === target || !isAgentScoped(watcher) || !isAgentScoped(target)) return false;
    const version = this.s.selectHead.get(target, agentIdOf(target)) ?? 0;
    this.s.insertCursorIfAbsent.run(watcher, target, version, version, version, Date.now());
    return true;
  }
}

// Checks, on a new database at `path`, that the port does the reference's work before a
// benchmark trusts its figures (docs/semantics.md, "The transition table"): a watch takes
// the target's head; a notifying event opens one notice at L, a second one only moves M;
// the actor's own event opens nothing for it; a dedupe key records once. Throws on a miss.
export function checkReference(Database, path) {
  const ref = new ReferenceSqlite(Database, path, "NORMAL");
  const fail = (what) => {
    ref.close();
    throw new Error(`reference_sqlite: ${what}`);
  };
  const cursor = (w, t) => ref.s.selectCursor.get(w, t);
  const w = "agent:main:main";
  const t = "agent:main:worker";
  const human = { sessionKey: t, kind: "human_direct_message", actorType: "human" };
  ref.record({ sessionKey: t, kind: "run_started", actorType: "system" });
  ref.watch({ watcher: w, target: t });
  if (JSON.stringify(cursor(w, t)) !== "[1,1,1]") fail(`watch: cursor ${cursor(w, t)}`);
  ref.record(human);
  if (JSON.stringify(cursor(w, t)) !== "[1,2,2]") fail(`first event: cursor ${cursor(w, t)}`);
  if (ref.queue.get(w)?.get(t) !== noticeText(t, 1)) fail("first event: no notice at L = 1");
  ref.record(human);
  if (JSON.stringify(cursor(w, t)) !== "[1,2,3]") fail(`second event: cursor ${cursor(w, t)}`);
  if (ref.queuedNotices() !== 1) fail(`second event: ${ref.queuedNotices()} notices queued`);
  ref.record({ ...human, actorType: "agent", actorId: w });
  if (JSON.stringify(cursor(w, t)) !== "[1,2,3]") fail(`own event: cursor ${cursor(w, t)}`);
  const [a] = ref.record({ ...human, dedupeKey: "k" });
  const [b] = ref.record({ ...human, dedupeKey: "k" });
  if (a.deduplicated || !b.deduplicated || a.sequence !== b.sequence) {
    fail(`dedupe: ${JSON.stringify([a, b])}`);
  }
  ref.close();
}

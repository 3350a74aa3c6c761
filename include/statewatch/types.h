// Value types of the statewatch API: events, pages of changes, notices, cursors, wakes.
//
// Thread-safe: plain values.
#ifndef STATEWATCH_TYPES_H_
#define STATEWATCH_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace statewatch {

// A position in the engine-wide order. One counter for the whole engine: strictly
// increasing, never reused (also after pruning and restarts). 0 means "nothing".
using Sequence = std::uint64_t;

// Persisted (journal rows): DO NOT CHANGE the values; retired values are never reused.
// A stored value outside them is Corruption, never silently kSystem.
enum class ActorType { kHuman = 0, kAgent = 1, kSystem = 2 };
const char* ActorTypeName(ActorType t);  // "human" | "agent" | "system"
std::optional<ActorType> ParseActorType(const std::string& s);

// A session in the journal: (agentId, sessionKey). For an agent-scoped key
// (`agent:<id>:<rest>`) the agent comes from the key; a bare key needs the agent given
// separately (the CLI and HTTP default it to "main").
struct SessionName {
  std::string agent_id;
  std::string session_key;
  bool operator==(const SessionName&) const = default;
};

// What a producer hands to Record(). Validated and normalised by the engine.
struct EventInput {
  std::string session_key;
  std::string agent_id;    // empty: from the key, or "main" for a bare key
  std::string session_id;  // optional incarnation id
  std::string kind;        // a kind of the engine's kind table
  ActorType actor_type = ActorType::kSystem;
  std::string actor_id;  // optional; an agent actor's session key (self-suppression)
  std::string run_id;    // optional
  std::optional<int64_t> occurred_at_ms;  // default now; clamped into [now - 24 h, now]
  std::string summary;       // one line; newlines folded, capped on a UTF-8 boundary
  std::string payload_json;  // optional JSON; kept only when it is an object
  std::string dedupe_key;    // optional, unique across the engine
  std::vector<std::string> watchers;  // the producer's watchers (agent-scoped keys)
  // Optional W3C trace context of the write (`00-<trace-id>-<parent-id>-<flags>`), stored
  // with the event and returned with it. InvalidArgument when given and not a valid
  // traceparent (the HTTP edge drops an invalid header before it gets here).
  std::string traceparent;
};

// A stored event.
struct Event {
  Sequence sequence = 0;
  std::string session_key;
  std::string agent_id;
  std::string session_id;
  std::string kind;
  ActorType actor_type = ActorType::kSystem;
  std::string actor_id;
  std::string run_id;
  int64_t occurred_at_ms = 0;
  std::string summary;
  std::string payload_json;  // "" when absent
  std::string dedupe_key;
  std::string traceparent;   // "" when the write carried none (always version 00)
};

struct RecordResult {
  Event event;
  bool deduplicated = false;  // an existing event with the same dedupe key came back
};

// The answer of ChangesSince (docs/semantics.md, "Catching up: `changesSince`").
struct ChangesPage {
  Sequence state_version = 0;
  std::vector<Event> events;
  bool truncated = false;
  Sequence earliest_available_sequence = 0;
  bool history_gap = false;
};

// One pending notice for (watcher, target).
struct Notice {
  std::string watcher_key;
  SessionName target;
  Sequence since = 0;        // L: the text says `changesSince <since>`
  std::string context_key;   // session-state:<hex of target key>
  std::string text;          // byte-exact notice text
};

// One registration of Engine::WatchMany: the watcher's agent-scoped key and its target.
struct WatchSpec {
  std::string watcher_key;
  SessionName target;
};

// What Engine::WatchMany did: every pair it was given is watched; `created` of them are new
// cursors (the others existed and kept their positions), and a pair given twice counts once.
struct WatchManyResult {
  uint64_t watched = 0;
  uint64_t created = 0;
};

// What Engine::Unwatch did: `watches` distinct pairs were named (a pair given twice counts
// once); `removed` of them held a cursor, which is gone with its pending notice.
struct UnwatchResult {
  uint64_t watches = 0;
  uint64_t removed = 0;
};

// A cursor's positions as the semantics define them (M includes coalesced material).
struct CursorState {
  Sequence last_seen = 0;  // L
  Sequence notified = 0;   // N
  Sequence material = 0;   // M
  int64_t updated_at_ms = 0;
  bool pending() const { return notified > last_seen; }
};

// A wake for a watcher (the gateway's heartbeat).
struct Wake {
  std::string watcher_key;
  std::string reason;  // "session-state:<target key>"
  int64_t at_ms = 0;
};

struct PruneStats {
  uint64_t rows_deleted = 0;
  uint64_t sessions_touched = 0;
  uint64_t cursors_expired = 0;
};

// A distribution as read at one moment, for metrics. counts[i] observations were at most
// bounds[i] (and above bounds[i-1]); counts.back(), one past the bounds, those above every
// bound. `count` is the sum of `counts`; `sum` adds up the observed values.
struct HistogramData {
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  uint64_t count = 0;
  double sum = 0;
};

// RocksDB's own figures, read when EngineStats is taken.
struct RocksDbStats {
  bool write_stopped = false;          // rocksdb.is-write-stopped
  uint64_t delayed_write_rate = 0;     // rocksdb.actual-delayed-write-rate, bytes/s (0: none)
  uint64_t running_compactions = 0;    // rocksdb.num-running-compactions
  uint64_t running_flushes = 0;        // rocksdb.num-running-flushes
  uint64_t compactions_pending = 0;    // column families with rocksdb.compaction-pending
  uint64_t pending_compaction_bytes = 0;  // rocksdb.estimate-pending-compaction-bytes, summed
  // Write stalls since open (from RocksDB's stall notifications): times a column family
  // entered the delayed or stopped condition, and the time spent with any of them stalled.
  uint64_t stalls_delayed = 0;
  uint64_t stalls_stopped = 0;
  double stall_seconds = 0;
};

struct EngineStats {
  uint64_t journal_rows = 0;
  uint64_t sessions = 0;  // sessions with a head
  uint64_t cursors = 0;
  uint64_t pending_notices = 0;
  Sequence last_sequence = 0;
  uint64_t bytes_on_disk = 0;
  uint64_t log_records_since_checkpoint = 0;
  // Cumulative since this engine was opened (for metrics).
  uint64_t events_recorded = 0;
  uint64_t notices_opened = 0;  // including re-opened ones (drain with intervening changes)
  uint64_t wakes_sent = 0;
  uint64_t rows_pruned = 0;     // by any pass: row cap, age, on demand
  uint64_t cursors_expired = 0;
  uint64_t commit_groups = 0;   // durable batches written (group commit)
  // Bytes written to the write-ahead log since open: every record's batch plus its 7-byte
  // record header. wal_bytes / events_recorded is the WAL cost of an event.
  uint64_t wal_bytes = 0;
  // Distributions since open, timed with a steady clock (not the engine's Clock):
  //   commit_seconds: a commit group, from its leader taking it off the queue to the group
  //     durable and folded into what readers see (the writers are answered then);
  //   wal_sync_seconds: one fsync of RocksDB's write-ahead log (Durability::kSync);
  //   group_commands, group_events: write calls and events per durable commit group;
  //   wake_seconds: from a group folded (durable, visible to readers) to its immediate
  //     wakes handed to the wake subscribers; wakes merged into a coalescing window, which
  //     wait on purpose, are not timed.
  HistogramData commit_seconds, wal_sync_seconds, group_commands, group_events, wake_seconds;
  RocksDbStats rocksdb;
  // Empty while writes are accepted; otherwise why they are refused (e.g. "no space left
  // on device"). Reads keep working either way.
  std::string write_error;
};

struct VerifyReport {
  bool ok = true;
  uint64_t records_replayed = 0;
  uint64_t heads_checked = 0;
  uint64_t cursors_checked = 0;
  std::vector<std::string> differences;  // human-readable, capped
  // Retained journal rows read back and passed through the FlatBuffers Verifier.
  uint64_t rows_checked = 0;
};

// One cursor in a session's status (Engine::StatusAt): who watches whom, and where.
struct CursorEntry {
  SessionName watcher;
  SessionName target;
  CursorState cursor;  // M and updatedAt include coalesced material, as Cursor() answers
};

// A session's status at one point of the log (Engine::StatusAt): what a database that
// stopped right after sequence `as_of` would answer for it.
struct SessionStatusAt {
  Sequence as_of = 0;            // the sequence the answer is as of (live: the last one)
  Sequence last_sequence = 0;    // the database's last sequence when asked
  Sequence earliest_as_of = 0;   // the earliest sequence the retained log can rebuild
  Sequence state_version = 0;    // the session's head at as_of
  Sequence watermark = 0;        // its prune mark, raised by pruning done since as_of
  Sequence deleted_at = 0;       // the DeleteSession after as_of that removed it (0: none)
  ChangesPage changes;           // its events <= as_of, paged as ChangesSince
  std::vector<CursorEntry> watching;  // cursors it holds as watcher, by target key
  std::vector<CursorEntry> watchers;  // cursors on it as target, by watcher key
  std::vector<Notice> pending;        // its pending notices as watcher, as PendingNotices
};

}  // namespace statewatch

#endif  // STATEWATCH_TYPES_H_

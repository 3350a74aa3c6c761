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
};

struct RecordResult {
  Event event;
  bool deduplicated = false;  // an existing event with the same dedupe key came back
};

// The answer of ChangesSince (semantics.md §4).
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

// Where a gateway posts a session's messages: the last route it delivered on (registry
// fields lastChannel, lastTo, lastAccountId, lastThreadId). Empty strings are unknown.
struct DeliveryRoute {
  std::string channel;     // e.g. "telegram", "discord", "slack"
  std::string to;          // the chat / channel / user id on that channel
  std::string account_id;  // the gateway account that posts there
  std::string thread_id;   // a thread or topic inside `to`
  bool empty() const {
    return channel.empty() && to.empty() && account_id.empty() && thread_id.empty();
  }
  bool operator==(const DeliveryRoute&) const = default;
};

// The clearable fields of a SessionRecord, for SessionRecord::clear.
enum class SessionField {
  kSessionId,
  kKind,
  kChannel,
  kLabel,
  kModel,
  kParentSessionKey,
  kContextTokens,
  kTotalTokens,
  kSandboxed,
  kDisplayName,
  kModelOverride,
  kThinking,
  kRuntime,
  kInputTokens,
  kOutputTokens,
  kCacheReadTokens,
  kCacheWriteTokens,
  kLastChannel,
  kLastTo,
  kLastAccountId,
  kLastThreadId,
};

// A session registry entry (what sessions_list, session_status and visibility know about a
// session). In an upsert, fields left as std::nullopt keep their stored value and the fields
// named in `clear` are removed; createdAt never ends up later than updatedAt.
struct SessionRecord {
  SessionName name;
  std::optional<std::string> session_id;
  std::optional<std::string> kind;     // main | group | cron | hook | node | other
  std::optional<std::string> channel;
  std::optional<std::string> label;
  std::optional<std::string> model;  // the model the gateway runs the session on
  std::optional<std::string> parent_session_key;
  std::optional<int64_t> context_tokens;  // the model's context window
  std::optional<int64_t> total_tokens;    // tokens in the context now
  std::optional<bool> sandboxed;
  std::optional<int64_t> created_at_ms;
  std::optional<int64_t> updated_at_ms;
  std::optional<std::string> extra_json;  // further fields, a JSON object
  std::optional<std::string> display_name;
  std::optional<std::string> model_override;  // a per-session override (session_status model)
  std::optional<std::string> thinking;        // the thinking level (off | minimal | ... )
  std::optional<std::string> runtime;         // subagent | acp, for spawned sessions
  std::optional<int64_t> input_tokens;
  std::optional<int64_t> output_tokens;
  std::optional<int64_t> cache_read_tokens;
  std::optional<int64_t> cache_write_tokens;
  std::optional<std::string> last_channel;  // the delivery route (DeliveryRoute)
  std::optional<std::string> last_to;
  std::optional<std::string> last_account_id;
  std::optional<std::string> last_thread_id;
  std::vector<SessionField> clear;  // upsert only: fields to remove; never stored

  DeliveryRoute route() const {
    return DeliveryRoute{last_channel.value_or(""), last_to.value_or(""),
                         last_account_id.value_or(""), last_thread_id.value_or("")};
  }
};

// Token counts of one model call (a transcript message's usage).
struct TokenUsage {
  int64_t input = 0;
  int64_t output = 0;
  int64_t cache_read = 0;
  int64_t cache_write = 0;
  int64_t total = 0;  // as reported; input + output when not reported
};

// Where a message came from when it was not typed by the session's own user: another
// session's sessions_send, an announcement, a spawn's task. The receiving model must read
// such a message as inter-session data, never as its user's instruction.
struct MessageProvenance {
  std::string kind = "inter_session";
  std::string source_session_key;
  std::string source_tool;     // sessions_send | sessions_spawn | subagents | ...
  std::string source_channel;  // the source session's channel, when known
  std::string run_id;
};

// One transcript message (sessions_history; the session's own messages for self-echo).
struct TranscriptMessage {
  uint64_t index = 0;        // assigned by the engine, increasing
  std::string role;          // "user" | "assistant" | "tool" | "system" ...
  std::string content_json;  // a JSON string or a JSON array of content blocks
  std::string tool_name;
  int64_t timestamp_ms = 0;  // 0: the engine's now
  std::optional<MessageProvenance> provenance;
  std::optional<TokenUsage> usage;  // the model call that produced it (assistant messages)
};

// How a sessions_spawn run is to be started (the options the gateway reads from the task).
struct SpawnOptions {
  std::string runtime = "subagent";  // subagent | acp
  std::string model;                 // "" = the gateway's default
  std::string thinking;              // "" = the gateway's default
  bool thread = false;               // bind the run to a thread; announce there
  std::string sandbox = "inherit";   // inherit | require
  std::string context = "isolated";  // isolated | fork
  std::string label;
  int depth = 1;  // the child's spawn depth
};

// The state of a sessions_send run (the reply-back loop of semantics.md §9).
struct SendRunState {
  // Persisted (runs): DO NOT CHANGE the values; retired values are never reused. A stored
  // value outside them is Corruption.
  enum class Phase { kAwaiting = 0, kPingPong = 1, kDone = 2 };
  Phase phase = Phase::kAwaiting;
  int turn = 0;  // ping-pong deliveries made
  int max_turns = 0;
  bool next_is_requester = false;  // whose reply is awaited
  int64_t timeout_ms = 0;          // 0: fire and forget
  int64_t deadline_ms = 0;         // 0: none
  bool watch = false;
  bool watched = false;
  std::string last_reply;
  std::string outcome;  // how the loop ended: skip | turns | single | timeout | finished
};

// A run started by sessions_send or sessions_spawn.
struct RunRecord {
  std::string run_id;
  std::string kind;  // "send" | "spawn" | "yield"
  SessionName requester;
  SessionName target;  // the receiving session / the child
  std::string status = "running";  // running | ok | error | timeout | cancelled
  std::string label;
  std::string task;
  int64_t created_at_ms = 0;
  int64_t ended_at_ms = 0;
  std::string result;
  std::string reply;
  int64_t last_steer_at_ms = 0;
  std::string extra_json;             // tool-specific state, a JSON object (yield results)
  std::optional<SendRunState> send;   // kind "send"
  std::optional<SpawnOptions> spawn;  // kind "spawn"
  DeliveryRoute requester_route;      // where the requester's answers go (at spawn time)
};

// Work handed to the gateway through the delivery feed; kept until acknowledged.
struct Delivery {
  uint64_t id = 0;  // assigned by the engine
  std::string agent_id;
  std::string type;  // message | task | steer | announce
  std::string session_key;
  std::string run_id;
  std::string text;
  std::string source_session_key;
  std::string source_tool;
  int64_t created_at_ms = 0;
  std::string source_channel;         // the source session's channel, for the marker
  DeliveryRoute route;                // task: the requester's; announce: where to post it
  std::optional<SpawnOptions> spawn;  // task: how to start the run
};

// The upstream link of an adopted session (semantics.md §7).
struct UpstreamLink {
  SessionName session;
  std::string catalog_id;
  std::string host_id;
  std::string thread_id;
  std::string upstream_kind;  // "jsonl"
  std::string upstream_ref;   // for jsonl: the file path
  uint64_t marker = 0;        // for jsonl: a byte offset
  int64_t last_scanned_at_ms = 0;
  uint32_t missing_count = 0;
};

}  // namespace statewatch

#endif  // STATEWATCH_TYPES_H_

// The gateway's records that statewatch keeps beside the journal (SessionTables): the
// session registry's entries, transcript messages, runs, deliveries and upstream links.
// The journal's own types (events, pages of changes, notices, cursors) are in types.h.
//
// Thread-safe: plain values.
#ifndef STATEWATCH_SESSION_RECORDS_H_
#define STATEWATCH_SESSION_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/types.h"

namespace statewatch {

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

// The state of a sessions_send run (the reply-back loop of docs/semantics.md, "Session tools").
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
  // The W3C traceparent of the call that started the run ("" if none): every delivery of
  // the run (the message, ping-pong turns, the task, the announcement) carries it.
  std::string traceparent;
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
  std::string traceparent;  // the W3C traceparent of the call that caused it ("" if none)
};

// The upstream link of an adopted session (docs/semantics.md,
// "Upstream monitor (adopted sessions)").
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

#endif  // STATEWATCH_SESSION_RECORDS_H_

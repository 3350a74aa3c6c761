// The session tools of docs/semantics.md, "Session tools" that the engine answers on its
// own: `session_status` (tools/session_status.cc) and `sessions_list`
// (tools/sessions_list.cc). JSON in (the tool's parameters, exactly as an agent passes
// them), JSON out (the tool's result). No HTTP here, and no profile check:
// SessionMessaging::CallTool (tools/session_messaging.h) is the one entry point that checks
// the caller's tool policy first; the daemon and an embedding gateway call that.
//
// Errors are values:
//   InvalidArgument  — a bad or unknown parameter; the message is byte-exact as in
//                      semantics.md (`changesSince must be a non-negative integer`,
//                      `limit must be a positive integer`, ...);
//   PermissionDenied — a visibility refusal (tools/visibility.h);
//   NotFound         — `Unknown sessionKey: <k>`;
//   anything else    — the engine failed.
//
// Thread-safe: reads the engine (session_status `model` also writes the registry).
#ifndef STATEWATCH_TOOLS_SESSION_TOOLS_H_
#define STATEWATCH_TOOLS_SESSION_TOOLS_H_

#include <boost/json.hpp>
#include <cstddef>
#include <optional>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"
#include "tools/visibility.h"

namespace statewatch::tools {

// The gateway settings the tools answer under (tools.sessions.visibility and
// tools.agentToAgent).
struct SessionToolsOptions {
  Visibility visibility = Visibility::kTree;
  AgentToAgentPolicy agent_to_agent;
  // Cluster mode: the caller's visibility as its home partition resolved it (the sandbox
  // clamp applied: server/internal_handlers.h), used as is instead of reading the caller's
  // registry row, which another partition does not hold. Unset everywhere else.
  std::optional<Visibility> caller_visibility;
};

// Bounds of sessions_list's messageLimit.
inline constexpr int kMaxMessageLimit = 20;
// sessions_list rows per page: `limit` defaults to 100 and at most 200 are applied.
inline constexpr int kDefaultListLimit = 100;
inline constexpr int kMaxListLimit = 200;
// The serialized sessions_list answer stays within this many bytes.
inline constexpr std::size_t kListResultBudgetBytes = 64 * 1024;

// session_status — the `/status` card. Parameters: `sessionKey?` (absent, blank or
// "current" = the caller; a key — a bare one is of the caller's agent — or a registry
// sessionId), `changesSince?`, `model?` ("<id>" sets the session's model override, "default"
// clears it; the card shows the result). Answers
//   {"sessionKey", "agentId", "sessionId"?, "kind", "channel", "label"?, "displayName"?,
//    "model"?, "modelOverride" (bool), "defaultModel"?, "runtime"?, "thinking"?,
//    "contextTokens"?, "totalTokens"?,
//    "usage": {"inputTokens"?, "outputTokens"?, "totalTokens"?, "cacheReadTokens"?,
//              "cacheWriteTokens"?, "contextTokens"?, "contextPercent"?,
//              "source": "registry" | "transcript" | "registry+transcript" | "none"},
//    "parentSessionKey"?, "sandboxed", "createdAt"?, "updatedAt"?, "ageMs"?,
//    "activeRun"?: {"runId", "kind", "status", "startedAt", "requesterSessionKey"},
//    "backgroundTasks": [{"runId", "sessionKey", "label"?, "runtime", "startedAt"}...],
//    "stateVersion", "stateChanges"?}
// `model` is the override when one is set, else the registry's model. Usage counters the
// registry lacks are backfilled from the last usage a transcript message reported.
// `updatedAt` is the last activity (tools/session_activity.h), `ageMs` the time since it.
// stateChanges only when changesSince is given. A session is known when the registry has
// it, it recorded an event or it has a transcript; the caller itself is always known.
// REQUIRES: `caller` is resolved (ResolveSession).
Result<boost::json::object> SessionStatus(Engine& engine, const SessionToolsOptions& options,
                                          const SessionName& caller,
                                          const boost::json::object& params);

// session_status answered as JSON text: the bytes json::serialize(SessionStatus(...)) would
// give, without building the events' JSON objects — each event's JSON is rendered once and
// kept with the engine's cached row (Engine::ReadChanges). The daemon's route.
Result<std::string> SessionStatusJson(Engine& engine, const SessionToolsOptions& options,
                                      const SessionName& caller, const boost::json::object& params);

// sessions_list — filters `kinds?` (array of main|group|cron|hook|node|other, or one string),
// `label?` (exact), `agentId?` (exact), `search?` (case-insensitive substring of key, label,
// display name, sessionId, channel, model), `activeMinutes?` (any activity within),
// `limit?` (positive integer, default 100, at most 200 applied), `offset?` (>= 0),
// `messageLimit?` (0..20), `includeDerivedTitles?`, `includeLastMessage?`. Every parameter
// is validated before any work. Answers
//   {"count", "sessions": [row...], "hasMore", "nextOffset"?, "limitApplied",
//    "enrichmentOmitted"?, "truncationReason"? ("byte-limit"),
//    "visibility"?: {"mode", "restricted": true, "warning"}}
// rows newest activity first, only the sessions the caller may see (others are left out,
// not refused):
//   {"key", "agentId", "kind", "channel", "displayName"?, "label"?, "model"?,
//    "contextTokens"?, "totalTokens"?, "updatedAt", "parentSessionKey"?, "stateVersion"?,
//    "status"? (running | done | failed | killed | timeout: the latest spawn run of a child),
//    "childSessions"? (visible children), "derivedTitle"?, "lastMessagePreview"?,
//    "messages"? (the last messageLimit messages, cleaned as sessions_history cleans them)}.
// Delivery routes never appear in rows. The answer fits kListResultBudgetBytes: previews and
// messages go first (enrichmentOmitted), then rows from the end (truncationReason,
// hasMore, nextOffset at the first row left out). `visibility` appears unless it is `all`.
Result<boost::json::object> SessionsList(const Engine& engine, const SessionToolsOptions& options,
                                         const SessionName& caller,
                                         const boost::json::object& params);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_TOOLS_H_

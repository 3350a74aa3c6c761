// The read-only session tools of semantics.md §9 that the engine answers on its own:
// `session_status` and `sessions_list`. JSON in (the tool's parameters, exactly as an agent
// passes them), JSON out (the tool's result). No HTTP here: the daemon and any embedding
// gateway call these directly.
//
// Errors are values:
//   InvalidArgument  — a bad parameter; the message is byte-exact as in semantics.md
//                      (`changesSince must be a non-negative integer`,
//                      `limit must be a positive integer`, ...);
//   PermissionDenied — a visibility refusal (tools/visibility.h);
//   NotFound         — `Unknown sessionKey: <k>`;
//   anything else    — the engine failed.
//
// Thread-safe: reads the engine only.
#ifndef STATEWATCH_TOOLS_SESSION_TOOLS_H_
#define STATEWATCH_TOOLS_SESSION_TOOLS_H_

#include <boost/json.hpp>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"
#include "tools/visibility.h"

namespace statewatch::tools {

// The gateway settings the tools answer under (tools.sessions.visibility and
// tools.agentToAgent).
struct SessionToolsOptions {
  Visibility visibility = Visibility::kTree;
  AgentToAgentPolicy agent_to_agent;
};

// Bounds of sessions_list's messageLimit.
inline constexpr int kMaxMessageLimit = 20;

// session_status: `sessionKey?` (absent, blank or "current" = the caller; a bare key is of
// the caller's agent), `changesSince?`. Answers
//   {"sessionKey", "agentId", "kind", "channel", "label"?, "model"?, "sessionId"?,
//    "contextTokens"?, "totalTokens"?, "parentSessionKey"?, "sandboxed", "createdAt"?,
//    "updatedAt"?, "stateVersion", "stateChanges"?}
// with stateChanges only when changesSince is given. A session is known when the registry
// has it or it ever recorded an event; the caller itself is always known.
// REQUIRES: `caller` is resolved (ResolveSession).
Result<boost::json::object> SessionStatus(const Engine& engine, const SessionToolsOptions& options,
                                          const SessionName& caller,
                                          const boost::json::object& params);

// sessions_list: filters `kinds?` (array of main|group|cron|hook|node|other, or one string),
// `label?` (exact), `agentId?` (exact), `search?` (case-insensitive substring of key, label,
// sessionId, channel, model), `activeMinutes?` (updated within), `limit?` (positive
// integer), `messageLimit?` (0..20). Every parameter is validated before any work.
// Answers {"count", "sessions": [row...]}, rows newest updatedAt first, only the sessions
// the caller may see (others are left out, not refused), each with stateVersion when > 0
// (one batched lookup). With messageLimit > 0 each row also carries "messages": its last
// messageLimit transcript messages, cleaned as sessions_history cleans them (tool results
// left out; tools/history_sanitizer.h).
Result<boost::json::object> SessionsList(const Engine& engine, const SessionToolsOptions& options,
                                         const SessionName& caller,
                                         const boost::json::object& params);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_TOOLS_H_

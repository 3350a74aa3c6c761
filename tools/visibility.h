// Visibility of the session tools (docs/semantics.md, "Session tools"): which sessions a calling
// session may look at with session_status, sessions_history, sessions_send and sessions_list.
//
//   self  — only the caller;
//   tree  — the caller and the sessions it spawned (registry parentSessionKey == caller);
//   agent — every session of the caller's agent;
//   all   — every session; a session of another agent also needs agent-to-agent access
//           enabled and both agents in its allow list.
//
// A sandboxed caller is clamped to `tree` (never widened: `self` stays `self`). A refusal is
// PermissionDenied whose message says which setting refuses it, byte-exact as in "Session tools".
//
// Thread-safe: pure functions and immutable values.
#ifndef STATEWATCH_TOOLS_VISIBILITY_H_
#define STATEWATCH_TOOLS_VISIBILITY_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::tools {

enum class Visibility { kSelf, kTree, kAgent, kAll };

// "self" | "tree" | "agent" | "all".
const char* VisibilityName(Visibility v);
// Case-insensitive; nullopt for anything else.
std::optional<Visibility> ParseVisibility(std::string_view text);

// The visibility a caller actually gets: `agent` and `all` become `tree` for a sandboxed
// caller.
Visibility EffectiveVisibility(Visibility configured, bool sandboxed);

// Cross-agent access (the gateway's tools.agentToAgent settings).
struct AgentToAgentPolicy {
  bool enabled = false;
  // Agent id patterns: an exact id, "*", or a glob with `*` (case-insensitive). Empty means
  // every agent. A cross-agent access needs both agents to match.
  std::vector<std::string> allow;

  bool MatchesAllow(std::string_view agent_id) const;
  bool IsAllowed(std::string_view requester_agent, std::string_view target_agent) const;
};

// The operation whose refusal text is rendered ("Session <action> visibility ...").
enum class SessionAction { kStatus, kHistory, kSend, kList };

// What the visibility check knows about a target session.
struct VisibilityTarget {
  SessionName name;
  // The registry's parentSessionKey of the target, when it has one.
  std::optional<std::string> parent_session_key;
};

// OK when `caller` may act on `target` under `visibility` (already clamped) and `policy`,
// else PermissionDenied with the refusal text. Mirrors the reference order: a session the
// caller spawned is visible under `tree` and `all` whatever its agent; then cross-agent
// rules; then `self` / `tree`.
Status CheckVisibility(SessionAction action, const SessionName& caller, Visibility visibility,
                       const AgentToAgentPolicy& policy, const VisibilityTarget& target);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_VISIBILITY_H_

// Tool profiles (docs/semantics.md, "Session tools"): which of the seven session tools a calling
// session may call at all, under a resolved ToolPolicy (tools/tool_policy.h: ToolPolicy::ForAgent).
// Visibility (tools/visibility.h) then decides which sessions a permitted call may act on.
//
//   minimal   — session_status
//   coding    — every session tool
//   messaging — sessions_list, sessions_history, sessions_send, session_status
//   full      — every session tool (the default)
//
// `alsoAllow` adds tools to the profile (tool names, or "group:sessions" for all seven);
// `deny` removes them whatever grants them. Sub-agents are narrowed further, whatever the
// profile says: a *leaf* sub-agent (spawn depth >= maxSpawnDepth) gets no session tool; with
// maxSpawnDepth >= 2 a sub-agent above the last level is an *orchestrator* and keeps
// sessions_spawn, subagents, sessions_list and sessions_history. tools.subagents.tools.allow
// gives sub-agents named tools back (still only those the profile grants), .deny takes them
// away. A refusal is PermissionDenied and names the setting that refuses.
//
// Thread-safe: pure functions, except SpawnDepth which reads the engine.
#ifndef STATEWATCH_TOOLS_TOOL_PROFILES_H_
#define STATEWATCH_TOOLS_TOOL_PROFILES_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"
#include "tools/tool_policy.h"

namespace statewatch::tools {

// The seven session tools, in the order listings use.
inline constexpr std::string_view kSessionToolNames[] = {
    "session_status", "sessions_list",  "sessions_history", "sessions_send",
    "sessions_spawn", "sessions_yield", "subagents"};
bool IsSessionTool(std::string_view tool);

// The session tools a caller at `spawn_depth` (0 = not a sub-agent) may call, in
// kSessionToolNames order.
std::vector<std::string> AllowedSessionTools(const ToolPolicy& policy, int spawn_depth);

// OK when the caller may call `tool`; NotFound `Unknown tool: <tool>` for a name that is not
// a session tool; otherwise PermissionDenied naming the setting, e.g.
//   `Tool sessions_spawn is not allowed by tools.profile=messaging (add it to tools.alsoAllow
//    to allow it).`
//   `Tool sessions_send is not available to leaf sub-agents (spawn depth 1,
//    agents.defaults.subagents.maxSpawnDepth=1).`
//   `Tool sessions_send is denied by tools.deny.`
// REQUIRES: `policy` is resolved for the caller's agent (ToolPolicy::ForAgent).
Status CheckToolAllowed(const ToolPolicy& policy, std::string_view tool, int spawn_depth);

// The spawn depth of a session: 0 for a session that is not a sub-agent; otherwise 1 + the
// depth of its registry parent (parentSessionKey), following the chain through sub-agent
// sessions. A sub-agent key without a registry entry counts its `subagent:` segments.
Result<int> SpawnDepth(const Engine& engine, const SessionName& session);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_TOOL_PROFILES_H_

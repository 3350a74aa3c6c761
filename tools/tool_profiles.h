// Tool profiles (semantics.md §9): which of the seven session tools a calling session may
// call at all. Visibility (tools/visibility.h) then decides which sessions a permitted call
// may act on.
//
//   minimal   — session_status
//   coding    — every session tool
//   messaging — sessions_list, sessions_history, sessions_send, session_status
//   full      — every session tool (the default)
//
// `alsoAllow` adds tools to the profile (tool names, or "group:sessions" for all seven).
// Sub-agents are narrowed further, whatever the profile says: a *leaf* sub-agent (spawn depth
// >= maxSpawnDepth) gets no session tool; with maxSpawnDepth >= 2 a sub-agent above the
// last level is an *orchestrator* and keeps sessions_spawn, subagents, sessions_list and
// sessions_history — those of them its profile (with alsoAllow) grants. A refusal is
// PermissionDenied and names the setting that refuses.
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

namespace statewatch::tools {

enum class ToolProfile { kMinimal, kCoding, kMessaging, kFull };

// "minimal" | "coding" | "messaging" | "full".
const char* ToolProfileName(ToolProfile profile);
// Case-insensitive; nullopt for anything else.
std::optional<ToolProfile> ParseToolProfile(std::string_view text);

// The seven session tools, in the order listings use.
inline constexpr std::string_view kSessionToolNames[] = {
    "session_status", "sessions_list",  "sessions_history", "sessions_send",
    "sessions_spawn", "sessions_yield", "subagents"};
bool IsSessionTool(std::string_view tool);

// The deepest spawn depth maxSpawnDepth may name.
inline constexpr int kMaxSpawnDepthLimit = 5;

// The gateway settings behind the profile check.
struct ToolPolicy {
  // tools.profile. Default full (a gateway without a profile hands out every tool).
  ToolProfile profile = ToolProfile::kFull;
  // tools.alsoAllow: extra tool names, or "group:sessions". Names of tools that are not
  // session tools are ignored here (they are the gateway's).
  std::vector<std::string> also_allow;
  // agents.defaults.subagents.maxSpawnDepth, 1..5. Default 1: sub-agents never spawn.
  int max_spawn_depth = 1;
};

// InvalidArgument when max_spawn_depth is outside 1..5 or the profile is out of range.
Status ValidateToolPolicy(const ToolPolicy& policy);

// The session tools a caller at `spawn_depth` (0 = not a sub-agent) may call, in
// kSessionToolNames order.
std::vector<std::string> AllowedSessionTools(const ToolPolicy& policy, int spawn_depth);

// OK when the caller may call `tool`; NotFound `Unknown tool: <tool>` for a name that is not
// a session tool; otherwise PermissionDenied naming the setting, e.g.
//   `Tool sessions_spawn is not allowed by tools.profile=messaging (add it to tools.alsoAllow
//    to allow it).`
//   `Tool sessions_send is not available to leaf sub-agents (spawn depth 1,
//    agents.defaults.subagents.maxSpawnDepth=1).`
Status CheckToolAllowed(const ToolPolicy& policy, std::string_view tool, int spawn_depth);

// The spawn depth of a session: 0 for a session that is not a sub-agent; otherwise 1 + the
// depth of its registry parent (parentSessionKey), following the chain through sub-agent
// sessions. A sub-agent key without a registry entry counts its `subagent:` segments.
Result<int> SpawnDepth(const Engine& engine, const SessionName& session);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_TOOL_PROFILES_H_

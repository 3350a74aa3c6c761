// ToolPolicy: which session tools a calling session may call, and how far it may spawn —
// the gateway settings of docs/semantics.md, "Session tools" under the reference's own key
// names, so that a refusal naming a key is literally true of the configuration file
// (config/config_file.h):
//
//   tools.profile                          minimal | coding | messaging | full
//   tools.alsoAllow / tools.deny           tool names (or "group:sessions") added / removed
//   tools.subagents.tools.allow / .deny    what sub-agents get back / lose beyond their depth's
//                                          share (a leaf gets no session tool otherwise)
//   agents.defaults.subagents.maxSpawnDepth        1..5, default 1
//   agents.defaults.subagents.maxChildrenPerAgent  running children per session, default 5
//   agents.defaults.subagents.allowAgents          agent id patterns a session may spawn into
//   agents.list[].tools / agents.list[].subagents  the same per agent id
//
// ForAgent() resolves one agent's policy (the defaults overlaid with its agents.list entry);
// the profile check (tools/tool_profiles.h) and sessions_spawn read only resolved policies.
//
// Thread-safe: a plain value.
#ifndef STATEWATCH_TOOLS_TOOL_POLICY_H_
#define STATEWATCH_TOOLS_TOOL_POLICY_H_

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::tools {

enum class ToolProfile { kMinimal, kCoding, kMessaging, kFull };

// "minimal" | "coding" | "messaging" | "full".
const char* ToolProfileName(ToolProfile profile);
// Case-insensitive; nullopt for anything else.
std::optional<ToolProfile> ParseToolProfile(std::string_view text);

// The deepest spawn depth maxSpawnDepth may name.
inline constexpr int kMaxSpawnDepthLimit = 5;
// The most running children maxChildrenPerAgent may allow.
inline constexpr int kMaxChildrenLimit = 100;

// agents.list[i]: one agent's overrides. Unset fields keep the defaults.
struct AgentPolicyOverride {
  std::string id;  // the agent id (lower-case)
  std::optional<ToolProfile> profile;
  std::optional<std::vector<std::string>> also_allow;
  std::optional<std::vector<std::string>> deny;
  std::optional<int> max_spawn_depth;
  std::optional<int> max_children_per_agent;
  std::optional<std::vector<std::string>> allow_agents;
};

struct ToolPolicy {
  // tools.profile. Default full (a gateway without a profile hands out every tool).
  ToolProfile profile = ToolProfile::kFull;
  // tools.alsoAllow: tool names, or "group:sessions" for all seven. Names of tools that are
  // not session tools are ignored here (they are the gateway's).
  std::vector<std::string> also_allow;
  // tools.deny: removed whatever else grants them (deny wins).
  std::vector<std::string> deny;
  // tools.subagents.tools.allow: session tools every sub-agent keeps beyond its depth's
  // share (e.g. session_status for leaves that get notices). Default none.
  std::vector<std::string> subagent_allow;
  // tools.subagents.tools.deny: session tools no sub-agent gets.
  std::vector<std::string> subagent_deny;
  // agents.defaults.subagents.maxSpawnDepth, 1..5. Default 1: sub-agents never spawn.
  int max_spawn_depth = 1;
  // agents.defaults.subagents.maxChildrenPerAgent: running children per requester session,
  // 1..100. Default 5. Bounds the work one session can fan out.
  int max_children_per_agent = 5;
  // agents.defaults.subagents.allowAgents: agent id patterns ("*", exact, glob with `*`) a
  // session may spawn into besides its own agent. Default none.
  std::vector<std::string> allow_agents;
  // agents.list[]: per-agent overrides.
  std::vector<AgentPolicyOverride> agents;

  // Which fields of a resolved policy came from an agents.list entry (refusals name the key
  // that actually decided). Set by ForAgent only.
  bool profile_from_agent = false;
  bool deny_from_agent = false;
  bool depth_from_agent = false;
  bool children_from_agent = false;
  bool allow_agents_from_agent = false;

  // The policy of `agent_id`: the defaults overlaid with its agents.list entry (if any);
  // `agents` is empty in the result.
  ToolPolicy ForAgent(std::string_view agent_id) const;

  // The key a refusal names, e.g. "tools.profile" or "agents.list[ops].tools.profile".
  std::string ProfileKey() const;
  std::string DenyKey() const;
  std::string DepthKey() const;
  std::string ChildrenKey() const;
  std::string AllowAgentsKey() const;

  std::string agent_id;  // set by ForAgent: whose policy this is ("" = the defaults)

 private:
  std::string AgentKey(bool from_agent, const char* agent_part, const char* default_key) const;
  int agent_index_ = -1;  // set by ForAgent: the agents.list entry that applied
};

// InvalidArgument naming the key and the value, e.g.
// `agents.defaults.subagents.maxSpawnDepth must be an integer from 1 to 5 (got 0)`.
Status ValidateToolPolicy(const ToolPolicy& policy);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_TOOL_POLICY_H_

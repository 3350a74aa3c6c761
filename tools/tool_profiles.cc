#include "tools/tool_profiles.h"

#include <algorithm>

#include "base/ascii.h"
#include "codecs/json_fields.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"

namespace statewatch::tools {
namespace {

constexpr std::string_view kMessagingTools[] = {"sessions_list", "sessions_history",
                                                "sessions_send", "session_status"};
// What an orchestrator sub-agent (depth < maxSpawnDepth) keeps.
constexpr std::string_view kOrchestratorTools[] = {"sessions_spawn", "subagents", "sessions_list",
                                                   "sessions_history"};

template <std::size_t N>
bool In(const std::string_view (&set)[N], std::string_view tool) {
  return std::find(std::begin(set), std::end(set), tool) != std::end(set);
}

bool ProfileGrants(ToolProfile profile, std::string_view tool) {
  switch (profile) {
    case ToolProfile::kMinimal:
      return tool == "session_status";
    case ToolProfile::kMessaging:
      return In(kMessagingTools, tool);
    case ToolProfile::kCoding:
    case ToolProfile::kFull:
      return true;
  }
  return false;
}

// A tools list entry names `tool`: its name (case-insensitive) or "group:sessions".
bool ListNames(const std::vector<std::string>& list, std::string_view tool) {
  return std::any_of(list.begin(), list.end(), [&](const std::string& entry) {
    std::string e = ascii::AsciiToLower(Trim(entry));
    return e == tool || e == "group:sessions";
  });
}

bool PolicyGrants(const ToolPolicy& policy, std::string_view tool) {
  return ProfileGrants(policy.profile, tool) || ListNames(policy.also_allow, tool);
}

// The sub-agent rules: a leaf gets nothing, an orchestrator its four, both plus
// tools.subagents.tools.allow, minus .deny.
Status CheckSubagentTool(const ToolPolicy& policy, const std::string& tool, int spawn_depth) {
  const std::string depth_setting = " (spawn depth " + std::to_string(spawn_depth) + ", " +
                                    policy.DepthKey() + "=" +
                                    std::to_string(policy.max_spawn_depth) + ").";
  if (ListNames(policy.subagent_deny, tool)) {
    return Status::PermissionDenied("Tool " + tool +
                                    " is denied to sub-agents by tools.subagents.tools.deny.");
  }
  if (ListNames(policy.subagent_allow, tool)) return Status::OK();
  if (spawn_depth >= policy.max_spawn_depth) {
    return Status::PermissionDenied("Tool " + tool + " is not available to leaf sub-agents" +
                                    depth_setting);
  }
  if (!In(kOrchestratorTools, tool)) {
    return Status::PermissionDenied("Tool " + tool + " is not available to sub-agents" +
                                    depth_setting);
  }
  return Status::OK();
}

}  // namespace

bool IsSessionTool(std::string_view tool) { return In(kSessionToolNames, tool); }

std::vector<std::string> AllowedSessionTools(const ToolPolicy& policy, int spawn_depth) {
  std::vector<std::string> out;
  for (std::string_view tool : kSessionToolNames) {
    if (CheckToolAllowed(policy, tool, spawn_depth).ok()) out.emplace_back(tool);
  }
  return out;
}

Status CheckToolAllowed(const ToolPolicy& policy, std::string_view tool, int spawn_depth) {
  if (!IsSessionTool(tool)) return Status::NotFound("Unknown tool: " + std::string(tool));
  const std::string t(tool);
  if (ListNames(policy.deny, tool)) {
    return Status::PermissionDenied("Tool " + t + " is denied by " + policy.DenyKey() + ".");
  }
  // The sub-agent rules come first: no profile or alsoAllow widens a leaf.
  if (spawn_depth >= 1) SW_RETURN_IF_ERROR(CheckSubagentTool(policy, t, spawn_depth));
  if (!PolicyGrants(policy, tool)) {
    return Status::PermissionDenied("Tool " + t + " is not allowed by " + policy.ProfileKey() +
                                    "=" + ToolProfileName(policy.profile) +
                                    " (add it to tools.alsoAllow to allow it).");
  }
  return Status::OK();
}

Result<int> SpawnDepth(const Engine& engine, const SessionName& session) {
  int depth = 0;
  SessionName current = session;
  // Bounded: a registry with a parent cycle must not hang a tool call.
  for (int hop = 0; hop < 32; ++hop) {
    auto parsed = ParseSessionKey(current.session_key);
    if (!parsed.ok() || !IsSubagentKey(*parsed)) return depth;
    auto record = SessionTablesView(engine).GetSession(current);
    if (!record.ok()) return record.status();
    if (!record->has_value() || !(*record)->parent_session_key) {
      return depth + SubagentDepth(*parsed);
    }
    ++depth;
    auto parent = ResolveSession(*(*record)->parent_session_key, "", current.agent_id);
    if (!parent.ok()) return depth;
    current = *parent;
  }
  return depth;
}

}  // namespace statewatch::tools

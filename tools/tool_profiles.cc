#include "tools/tool_profiles.h"

#include <algorithm>

#include "statewatch/session_key.h"
#include "tools/json_fields.h"

namespace statewatch::tools {
namespace {

constexpr NamedValue<ToolProfile> kProfileNames[] = {{ToolProfile::kMinimal, "minimal"},
                                                     {ToolProfile::kCoding, "coding"},
                                                     {ToolProfile::kMessaging, "messaging"},
                                                     {ToolProfile::kFull, "full"}};

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

bool AlsoAllowGrants(const std::vector<std::string>& also_allow, std::string_view tool) {
  return std::any_of(also_allow.begin(), also_allow.end(), [&](const std::string& entry) {
    std::string e = Lower(entry);
    return e == tool || e == "group:sessions";
  });
}

bool PolicyGrants(const ToolPolicy& policy, std::string_view tool) {
  return ProfileGrants(policy.profile, tool) || AlsoAllowGrants(policy.also_allow, tool);
}

}  // namespace

const char* ToolProfileName(ToolProfile profile) { return NameOf(kProfileNames, profile, "full"); }

std::optional<ToolProfile> ParseToolProfile(std::string_view text) {
  return ValueNamed(kProfileNames, text);
}

bool IsSessionTool(std::string_view tool) { return In(kSessionToolNames, tool); }

Status ValidateToolPolicy(const ToolPolicy& policy) {
  if (policy.max_spawn_depth < 1 || policy.max_spawn_depth > kMaxSpawnDepthLimit) {
    return Status::InvalidArgument("maxSpawnDepth must be an integer from 1 to 5 (got " +
                                   std::to_string(policy.max_spawn_depth) + ")");
  }
  int p = static_cast<int>(policy.profile);
  if (p < 0 || p > static_cast<int>(ToolProfile::kFull)) {
    return Status::InvalidArgument("tools.profile must be minimal, coding, messaging or full");
  }
  return Status::OK();
}

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
  const std::string depth_setting =
      " (spawn depth " + std::to_string(spawn_depth) +
      ", agents.defaults.subagents.maxSpawnDepth=" + std::to_string(policy.max_spawn_depth) + ").";
  // The sub-agent rules come first: no profile or alsoAllow widens a leaf.
  if (spawn_depth >= 1 && spawn_depth >= policy.max_spawn_depth) {
    return Status::PermissionDenied("Tool " + t + " is not available to leaf sub-agents" +
                                    depth_setting);
  }
  if (spawn_depth >= 1 && !In(kOrchestratorTools, tool)) {
    return Status::PermissionDenied("Tool " + t + " is not available to sub-agents" +
                                    depth_setting);
  }
  if (!PolicyGrants(policy, tool)) {
    return Status::PermissionDenied(
        "Tool " + t + " is not allowed by tools.profile=" + ToolProfileName(policy.profile) +
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
    auto record = engine.GetSession(current);
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

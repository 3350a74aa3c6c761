#include "tools/tool_policy.h"

#include <algorithm>

#include "base/ascii.h"
#include "codecs/json_fields.h"
#include "statewatch/session_key.h"

namespace statewatch::tools {

namespace {

constexpr NamedValue<ToolProfile> kProfileNames[] = {{ToolProfile::kMinimal, "minimal"},
                                                     {ToolProfile::kCoding, "coding"},
                                                     {ToolProfile::kMessaging, "messaging"},
                                                     {ToolProfile::kFull, "full"}};

template <typename T>
void OverlayIf(const std::optional<T>& from, T* to, bool* from_agent) {
  if (!from) return;
  *to = *from;
  *from_agent = true;
}

Status CheckRange(const std::string& key, int value, int min, int max) {
  if (value >= min && value <= max) return Status::OK();
  return Status::InvalidArgument(key + " must be an integer from " + std::to_string(min) + " to " +
                                 std::to_string(max) + " (got " + std::to_string(value) + ")");
}

}  // namespace

const char* ToolProfileName(ToolProfile profile) { return NameOf(kProfileNames, profile, "full"); }

std::optional<ToolProfile> ParseToolProfile(std::string_view text) {
  return ValueNamed(kProfileNames, text);
}

ToolPolicy ToolPolicy::ForAgent(std::string_view agent) const {
  ToolPolicy out = *this;
  out.agents.clear();
  out.agent_id = std::string(agent);
  for (std::size_t i = 0; i < agents.size(); ++i) {
    const AgentPolicyOverride& a = agents[i];
    if (a.id != ascii::AsciiToLower(agent)) continue;
    OverlayIf(a.profile, &out.profile, &out.profile_from_agent);
    bool also_from_agent = false;
    OverlayIf(a.also_allow, &out.also_allow, &also_from_agent);
    OverlayIf(a.deny, &out.deny, &out.deny_from_agent);
    OverlayIf(a.max_spawn_depth, &out.max_spawn_depth, &out.depth_from_agent);
    OverlayIf(a.max_children_per_agent, &out.max_children_per_agent, &out.children_from_agent);
    OverlayIf(a.allow_agents, &out.allow_agents, &out.allow_agents_from_agent);
    out.agent_index_ = static_cast<int>(i);
    break;
  }
  return out;
}

std::string ToolPolicy::AgentKey(bool from_agent, const char* agent_part,
                                 const char* default_key) const {
  if (!from_agent || agent_index_ < 0) return default_key;
  return "agents.list[" + std::to_string(agent_index_) + "]." + agent_part;
}

std::string ToolPolicy::ProfileKey() const {
  return AgentKey(profile_from_agent, "tools.profile", "tools.profile");
}
std::string ToolPolicy::DenyKey() const {
  return AgentKey(deny_from_agent, "tools.deny", "tools.deny");
}
std::string ToolPolicy::DepthKey() const {
  return AgentKey(depth_from_agent, "subagents.maxSpawnDepth",
                  "agents.defaults.subagents.maxSpawnDepth");
}
std::string ToolPolicy::ChildrenKey() const {
  return AgentKey(children_from_agent, "subagents.maxChildrenPerAgent",
                  "agents.defaults.subagents.maxChildrenPerAgent");
}
std::string ToolPolicy::AllowAgentsKey() const {
  return AgentKey(allow_agents_from_agent, "subagents.allowAgents",
                  "agents.defaults.subagents.allowAgents");
}

Status ValidateToolPolicy(const ToolPolicy& policy) {
  int p = static_cast<int>(policy.profile);
  if (p < 0 || p > static_cast<int>(ToolProfile::kFull)) {
    return Status::InvalidArgument("tools.profile must be minimal, coding, messaging or full");
  }
  SW_RETURN_IF_ERROR(CheckRange("agents.defaults.subagents.maxSpawnDepth", policy.max_spawn_depth,
                                1, kMaxSpawnDepthLimit));
  SW_RETURN_IF_ERROR(CheckRange("agents.defaults.subagents.maxChildrenPerAgent",
                                policy.max_children_per_agent, 1, kMaxChildrenLimit));
  for (std::size_t i = 0; i < policy.agents.size(); ++i) {
    const AgentPolicyOverride& a = policy.agents[i];
    std::string at = "agents.list[" + std::to_string(i) + "].";
    if (auto id = NormalizeAgentId(a.id); !id.ok()) {
      return Status::InvalidArgument(at + "id: " + id.status().message());
    }
    if (a.max_spawn_depth) {
      SW_RETURN_IF_ERROR(
          CheckRange(at + "subagents.maxSpawnDepth", *a.max_spawn_depth, 1, kMaxSpawnDepthLimit));
    }
    if (a.max_children_per_agent) {
      SW_RETURN_IF_ERROR(CheckRange(at + "subagents.maxChildrenPerAgent", *a.max_children_per_agent,
                                    1, kMaxChildrenLimit));
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (policy.agents[j].id == a.id) {
        return Status::InvalidArgument(at + "id \"" + a.id + "\" is already agents.list[" +
                                       std::to_string(j) + "].id");
      }
    }
  }
  return Status::OK();
}

}  // namespace statewatch::tools

#include "tools/visibility.h"

#include <algorithm>

#include "base/ascii.h"
#include "codecs/json_fields.h"

namespace statewatch::tools {
namespace {

constexpr NamedValue<Visibility> kVisibilityNames[] = {{Visibility::kSelf, "self"},
                                                       {Visibility::kTree, "tree"},
                                                       {Visibility::kAgent, "agent"},
                                                       {Visibility::kAll, "all"}};

const char* ActionPrefix(SessionAction action) {
  switch (action) {
    case SessionAction::kStatus:
      return "Session status";
    case SessionAction::kHistory:
      return "Session history";
    case SessionAction::kSend:
      return "Session send";
    case SessionAction::kList:
      return "Session list";
  }
  return "Session list";
}

// The agent-to-agent refusals are not in semantics.md; these are the reference gateway's
// wording, so that an agent sees the same advice from statewatch as from the gateway.
std::string AgentToAgentDisabled(SessionAction action) {
  switch (action) {
    case SessionAction::kStatus:
      return "Agent-to-agent status is disabled. Set tools.agentToAgent.enabled=true to allow "
             "cross-agent access.";
    case SessionAction::kHistory:
      return "Agent-to-agent history is disabled. Set tools.agentToAgent.enabled=true to allow "
             "cross-agent access.";
    case SessionAction::kSend:
      return "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow "
             "cross-agent sends.";
    case SessionAction::kList:
      return "Agent-to-agent listing is disabled. Set tools.agentToAgent.enabled=true to allow "
             "cross-agent visibility.";
  }
  return "";
}

std::string AgentToAgentDenied(SessionAction action) {
  switch (action) {
    case SessionAction::kStatus:
      return "Agent-to-agent status denied by tools.agentToAgent.allow.";
    case SessionAction::kHistory:
      return "Agent-to-agent history denied by tools.agentToAgent.allow.";
    case SessionAction::kSend:
      return "Agent-to-agent messaging denied by tools.agentToAgent.allow.";
    case SessionAction::kList:
      return "Agent-to-agent listing denied by tools.agentToAgent.allow.";
  }
  return "";
}

// `*` matches any run of characters; everything else literally (already lower-cased).
bool GlobMatch(std::string_view pattern, std::string_view text) {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool IsCaller(const SessionName& caller, const SessionName& target) { return caller == target; }

// The reference decides ownership by key alone; a bare caller key (`global`) exists once
// per agent, so for it the target must also be of the caller's agent.
bool OwnedByCaller(const SessionName& caller, const VisibilityTarget& target) {
  if (!target.parent_session_key || *target.parent_session_key != caller.session_key) return false;
  bool caller_scoped = caller.session_key.rfind("agent:", 0) == 0;
  return caller_scoped || target.name.agent_id == caller.agent_id;
}

}  // namespace

const char* VisibilityName(Visibility v) { return NameOf(kVisibilityNames, v, "tree"); }

std::optional<Visibility> ParseVisibility(std::string_view text) {
  return ValueNamed(kVisibilityNames, text);
}

Visibility EffectiveVisibility(Visibility configured, bool sandboxed) {
  if (sandboxed && (configured == Visibility::kAgent || configured == Visibility::kAll)) {
    return Visibility::kTree;
  }
  return configured;
}

bool AgentToAgentPolicy::MatchesAllow(std::string_view agent_id) const {
  if (allow.empty()) return true;
  std::string id = ascii::AsciiToLower(agent_id);
  return std::any_of(allow.begin(), allow.end(), [&](const std::string& pattern) {
    std::string p = ascii::AsciiToLower(pattern);
    if (p.empty()) return false;
    return GlobMatch(p, id);
  });
}

bool AgentToAgentPolicy::IsAllowed(std::string_view requester_agent,
                                   std::string_view target_agent) const {
  if (requester_agent == target_agent) return true;
  if (!enabled) return false;
  return MatchesAllow(requester_agent) && MatchesAllow(target_agent);
}

Status CheckVisibility(SessionAction action, const SessionName& caller, Visibility visibility,
                       const AgentToAgentPolicy& policy, const VisibilityTarget& target) {
  if (IsCaller(caller, target.name)) return Status::OK();
  bool owned = OwnedByCaller(caller, target);
  if (owned && (visibility == Visibility::kTree || visibility == Visibility::kAll)) {
    return Status::OK();
  }
  const std::string prefix = ActionPrefix(action);
  if (target.name.agent_id != caller.agent_id) {
    if (visibility != Visibility::kAll) {
      return Status::PermissionDenied(
          prefix +
          " visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent "
          "access.");
    }
    if (!policy.enabled) return Status::PermissionDenied(AgentToAgentDisabled(action));
    if (!policy.IsAllowed(caller.agent_id, target.name.agent_id)) {
      return Status::PermissionDenied(AgentToAgentDenied(action));
    }
    return Status::OK();
  }
  if (visibility == Visibility::kSelf) {
    return Status::PermissionDenied(
        prefix +
        " visibility is restricted to the current session (tools.sessions.visibility=self).");
  }
  if (visibility == Visibility::kTree && !owned) {
    return Status::PermissionDenied(
        prefix +
        " visibility is restricted to the current session tree (tools.sessions.visibility=tree).");
  }
  return Status::OK();
}

}  // namespace statewatch::tools

#include "tools/visibility.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "base/ascii.h"
#include "codecs/json_fields.h"

namespace statewatch::tools {
namespace {

constexpr NamedValue<Visibility> kVisibilityNames[] = {{Visibility::kSelf, "self"},
                                                       {Visibility::kTree, "tree"},
                                                       {Visibility::kAgent, "agent"},
                                                       {Visibility::kAll, "all"}};

// How each action is named in its refusals. The agent-to-agent refusals are not in
// semantics.md; they are the reference gateway's wording, so that an agent sees the same
// advice from statewatch as from the gateway.
struct ActionWords {
  SessionAction action;
  const char* prefix;     // "Session status visibility is restricted…"
  const char* a2a;        // "Agent-to-agent status is disabled / denied…"
  const char* a2a_allow;  // "…to allow cross-agent access."
};

constexpr ActionWords kActionWords[] = {
    {SessionAction::kStatus, "Session status", "status", "access"},
    {SessionAction::kHistory, "Session history", "history", "access"},
    {SessionAction::kSend, "Session send", "messaging", "sends"},
    {SessionAction::kList, "Session list", "listing", "visibility"},
};

const ActionWords& WordsOf(SessionAction action) {
  for (const ActionWords& words : kActionWords) {
    if (words.action == action) return words;
  }
  return kActionWords[std::size(kActionWords) - 1];  // an out-of-range enum: worded as a list
}

std::string AgentToAgentDisabled(const ActionWords& words) {
  return std::string("Agent-to-agent ") + words.a2a +
         " is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent " +
         words.a2a_allow + ".";
}

std::string AgentToAgentDenied(const ActionWords& words) {
  return std::string("Agent-to-agent ") + words.a2a + " denied by tools.agentToAgent.allow.";
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
  const ActionWords& words = WordsOf(action);
  const std::string prefix = words.prefix;
  if (target.name.agent_id != caller.agent_id) {
    if (visibility != Visibility::kAll) {
      return Status::PermissionDenied(
          prefix +
          " visibility is restricted. Set tools.sessions.visibility=all to allow cross-agent "
          "access.");
    }
    if (!policy.enabled) return Status::PermissionDenied(AgentToAgentDisabled(words));
    if (!policy.IsAllowed(caller.agent_id, target.name.agent_id)) {
      return Status::PermissionDenied(AgentToAgentDenied(words));
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

// Session keys, context keys and notice text (include/statewatch/session_key.h).
#include "statewatch/session_key.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "base/ascii.h"
#include "base/hex.h"

namespace statewatch {

namespace {

bool IsAgentIdChar(char c, bool first) {
  unsigned char u = static_cast<unsigned char>(c);
  if (std::isdigit(u) || (u >= 'a' && u <= 'z')) return true;
  return !first && (c == '_' || c == '-');
}

// Finds the last case-insensitive occurrence of `marker` in `s`.
std::size_t RFindNoCase(std::string_view s, std::string_view marker) {
  std::string lower = ascii::AsciiToLower(s);
  return lower.rfind(marker);
}

}  // namespace

Result<std::string> NormalizeAgentId(std::string_view agent_id) {
  std::string id = ascii::AsciiToLower(agent_id);
  bool ok = !id.empty() && id.size() <= 64;
  for (std::size_t i = 0; ok && i < id.size(); ++i) ok = IsAgentIdChar(id[i], i == 0);
  if (!ok) {
    return Status::InvalidArgument("agentId must match ^[a-z0-9][a-z0-9_-]{0,63}$ (got \"" +
                                   std::string(agent_id) + "\")");
  }
  return id;
}

Result<ParsedKey> ParseSessionKey(std::string_view key) {
  if (ascii::Trim(key).empty()) return Status::InvalidArgument("sessionKey must not be empty");
  if (!IsValidUtf8(key)) return Status::InvalidArgument("sessionKey is not valid UTF-8");
  if (key.find('\0') != std::string_view::npos) {
    return Status::InvalidArgument("sessionKey must not contain a NUL character (\\u0000)");
  }
  ParsedKey out;
  if (!ascii::StartsWithIgnoreCase(key, "agent:")) {
    out.rest = std::string(key);
    out.canonical = out.rest;
    return out;
  }
  auto malformed = [&] {
    return Status::InvalidArgument("malformed agent session key (expected agent:<agentId>:<rest>): \"" +
                                   std::string(key) + "\"");
  };
  std::string_view tail = key.substr(6);
  std::size_t colon = tail.find(':');
  if (colon == std::string_view::npos) return malformed();
  std::string_view id = ascii::Trim(tail.substr(0, colon));
  std::string_view rest = tail.substr(colon + 1);
  if (id.empty() || rest.empty() || rest.front() == ':') return malformed();
  Result<std::string> agent = NormalizeAgentId(id);
  if (!agent.ok()) return malformed();
  out.agent_scoped = true;
  out.agent_id = *agent;
  out.rest = std::string(rest);
  out.canonical = "agent:" + out.agent_id + ":" + out.rest;
  return out;
}

Result<SessionName> ResolveSession(std::string_view key, std::string_view agent_id,
                                   std::string_view default_agent) {
  Result<ParsedKey> parsed = ParseSessionKey(key);
  if (!parsed.ok()) return parsed.status();
  if (parsed->agent_scoped) {
    if (!agent_id.empty()) {
      Result<std::string> given = NormalizeAgentId(agent_id);
      if (!given.ok()) return given.status();
      if (*given != parsed->agent_id) {
        return Status::InvalidArgument("agentId \"" + std::string(agent_id) +
                                       "\" does not match the agent of sessionKey \"" +
                                       std::string(key) + "\"");
      }
    }
    return SessionName{parsed->agent_id, parsed->canonical};
  }
  Result<std::string> agent = NormalizeAgentId(agent_id.empty() ? default_agent : agent_id);
  if (!agent.ok()) return agent.status();
  return SessionName{*agent, parsed->canonical};
}

bool IsSubagentKey(const ParsedKey& key) {
  return key.agent_scoped && ascii::StartsWithIgnoreCase(key.rest, "subagent:");
}

int SubagentDepth(const ParsedKey& key) {
  if (!key.agent_scoped) return 0;
  std::string lower = ascii::AsciiToLower(key.rest);
  int depth = 0;
  for (std::size_t pos = 0; (pos = lower.find("subagent:", pos)) != std::string::npos; pos += 9) {
    if (pos == 0 || lower[pos - 1] == ':') ++depth;
  }
  return depth;
}

std::optional<std::string> ThreadParentKey(std::string_view key) {
  std::size_t thread = RFindNoCase(key, ":thread:");
  std::size_t topic = RFindNoCase(key, ":topic:");
  std::size_t at = std::string::npos;
  std::size_t marker_len = 0;
  if (thread != std::string::npos && (topic == std::string::npos || thread > topic)) {
    at = thread;
    marker_len = 8;
  } else if (topic != std::string::npos) {
    at = topic;
    marker_len = 7;
  }
  if (at == std::string::npos || at == 0 || at + marker_len >= key.size()) return std::nullopt;
  return std::string(key.substr(0, at));
}

std::string EncodeContextKey(std::string_view target_key) {
  return "session-state:" + hex::Encode(target_key);
}

std::optional<std::string> DecodeContextKey(std::string_view context_key) {
  constexpr std::string_view kPrefix = "session-state:";
  if (context_key.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::string_view hex = context_key.substr(kPrefix.size());
  if (hex.empty()) return std::nullopt;
  std::optional<std::string> out = hex::Decode(hex);
  if (!out || !IsValidUtf8(*out)) return std::nullopt;
  return out;
}

std::string NoticeText(std::string_view target_key, uint64_t since) {
  std::string key(target_key);
  return "Session \"" + key + "\" changed (other actor). Reconcile before acting: " +
         "session_status sessionKey \"" + key + "\" changesSince " + std::to_string(since) + ".";
}

bool IsValidUtf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
    if (len == 0 || i + len > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc >> 6) != 0x2) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    // Reject overlong forms, surrogates and code points past U+10FFFF.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff) {
      return false;
    }
    i += len;
  }
  return true;
}

}  // namespace statewatch

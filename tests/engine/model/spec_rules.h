// The spec's small rules as free functions, for the ReferenceModel and the tests around it:
// session keys (docs/semantics.md, "Sessions and their keys"), event fields
// ("What an event holds"), the kind table ("Kinds"), the notice text and context key
// ("One notice, not many"). Written from the spec, not from the engine; where the spec
// leaves a choice open it is marked "MODEL CHOICE".
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_TESTS_ENGINE_MODEL_SPEC_RULES_H_
#define STATEWATCH_TESTS_ENGINE_MODEL_SPEC_RULES_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/options.h"
#include "statewatch/types.h"

namespace statewatch::model {

inline constexpr int64_t kHourMs = 3600LL * 1000;
inline constexpr int64_t kDayMs = 24 * kHourMs;
// "What an event holds": a supplied occurredAt is clamped into [now - 24 h, now].
inline constexpr int64_t kClampWindowMs = kDayMs;
// "Catching up: `changesSince`": limit is clamped to 1..200.
inline constexpr int kMaxPageLimit = 200;

// ---- session keys ("Sessions and their keys") -----------------------------------------------

struct Key {
  bool agent_scoped = false;
  std::string agent_id;   // lower-case; empty for a bare key
  std::string canonical;  // `agent:<id>:<rest>` with prefix and id lower-cased
};

inline std::string LowerAscii(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

inline std::string_view TrimSpaces(std::string_view s) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// ^[a-z0-9][a-z0-9_-]{0,63}$, case-insensitive.
inline bool ValidAgentId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  std::string lower = LowerAscii(id);
  for (std::size_t i = 0; i < lower.size(); ++i) {
    char c = lower[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && (i == 0 || (c != '_' && c != '-'))) return false;
  }
  return true;
}

// "Sessions and their keys": `agent:` (case-insensitive) + agentId (trimmed, valid) + `:` +
// rest (non-empty, not starting with `:`). Anything not starting with `agent:` is bare.
// nullopt: malformed or empty.
inline std::optional<Key> ParseKey(std::string_view key) {
  if (TrimSpaces(key).empty()) return std::nullopt;
  if (key.size() < 6 || LowerAscii(key.substr(0, 6)) != "agent:") {
    return Key{false, "", std::string(key)};
  }
  std::string_view tail = key.substr(6);
  std::size_t colon = tail.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  std::string_view id = TrimSpaces(tail.substr(0, colon));
  std::string_view rest = tail.substr(colon + 1);
  if (!ValidAgentId(id) || rest.empty() || rest.front() == ':') return std::nullopt;
  std::string agent = LowerAscii(id);
  return Key{true, agent, "agent:" + agent + ":" + std::string(rest)};
}

// (sessionKey, agentId) -> the journal's session. An agent-scoped key brings its agent (a
// different explicit one is refused); a bare key takes the given agent, "main" when empty.
inline std::optional<SessionName> Resolve(std::string_view key, std::string_view agent_id) {
  std::optional<Key> k = ParseKey(key);
  if (!k) return std::nullopt;
  if (k->agent_scoped) {
    if (!agent_id.empty() && LowerAscii(agent_id) != k->agent_id) return std::nullopt;
    return SessionName{k->agent_id, k->canonical};
  }
  std::string agent = agent_id.empty() ? "main" : LowerAscii(agent_id);
  if (!ValidAgentId(agent)) return std::nullopt;
  return SessionName{agent, k->canonical};
}

// A watcher key: malformed (an error), bare (never a watcher: no session) or a session.
struct WatcherKey {
  bool malformed = false;
  std::optional<SessionName> session;
};
inline WatcherKey ParseWatcher(std::string_view key) {
  std::optional<Key> k = ParseKey(key);
  if (!k) return WatcherKey{true, std::nullopt};
  if (!k->agent_scoped) return WatcherKey{};
  return WatcherKey{false, SessionName{k->agent_id, k->canonical}};
}

// ---- notice text and context key ("One notice, not many") -----------------------------------

inline std::string ModelNoticeText(const std::string& key, Sequence since) {
  return "Session \"" + key +
         "\" changed (other actor). Reconcile before acting: " + "session_status sessionKey \"" +
         key + "\" changesSince " + std::to_string(since) + ".";
}

inline std::string ModelContextKey(const std::string& key) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "session-state:";
  for (unsigned char c : key) {
    out.push_back(kHex[c >> 4]);
    out.push_back(kHex[c & 0xf]);
  }
  return out;
}

// ---- event fields ("What an event holds") ---------------------------------------------------

// One line, capped on a UTF-8 boundary. MODEL CHOICE: CR LF, LF and CR each become one
// space (the generators use no other control characters).
inline std::string ModelFoldSummary(std::string_view s, std::size_t max_bytes) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
    out.push_back(s[i] == '\n' || s[i] == '\r' ? ' ' : s[i]);
  }
  if (out.size() <= max_bytes) return out;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xc0) == 0x80) --cut;
  out.resize(cut);
  return out;
}

// "payload: optional JSON object; anything that is not an object is dropped".
// MODEL CHOICE: the generators only produce compact JSON, so an object is kept verbatim.
inline std::string ModelPayload(std::string_view text) {
  std::string_view t = TrimSpaces(text);
  return !t.empty() && t.front() == '{' ? std::string(t) : std::string();
}

// "Kinds", as data, written out apart from the engine's DefaultKinds(): three kinds notify,
// child_spawned seeds cursors, the rest do neither.
inline std::vector<KindSpec> SpecKinds() {
  std::vector<KindSpec> kinds;
  for (const char* name : {"human_direct_message", "upstream_missing", "goal_changed"}) {
    kinds.push_back({name, /*notifies=*/true, /*seeds_cursor=*/false});
  }
  kinds.push_back({"child_spawned", /*notifies=*/false, /*seeds_cursor=*/true});
  for (const char* name : {"run_completed", "run_failed", "compacted", "adopted", "created"}) {
    kinds.push_back({name, /*notifies=*/false, /*seeds_cursor=*/false});
  }
  return kinds;
}

}  // namespace statewatch::model

#endif  // STATEWATCH_TESTS_ENGINE_MODEL_SPEC_RULES_H_

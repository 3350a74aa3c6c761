// Session keys (docs/semantics.md, "Sessions and their keys"): strict parsing of agent-scoped
// keys, bare keys, sub-agent depth, thread parents, and the notice context key codec.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_SESSION_KEY_H_
#define STATEWATCH_SESSION_KEY_H_

#include <optional>
#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

struct ParsedKey {
  bool agent_scoped = false;
  std::string agent_id;  // lower-case; empty for a bare key
  std::string rest;      // after `agent:<id>:`; the whole key for a bare key
  std::string canonical;  // `agent:<id>:<rest>` with the prefix and id lower-cased
};

// Parses `key`. A key starting with `agent:` (case-insensitive) must be well formed, else
// InvalidArgument naming the key. Any other non-empty key is bare. Empty is refused.
Result<ParsedKey> ParseSessionKey(std::string_view key);

// Validates an agent id: ^[a-z0-9][a-z0-9_-]{0,63}$ case-insensitively; returns it lower-cased.
Result<std::string> NormalizeAgentId(std::string_view agent_id);

// Resolves (key, agent) to the journal's session identity: an agent-scoped key brings its
// agent (a different explicit agent is refused); a bare key takes `agent_id`, or
// `default_agent` when that is empty.
Result<SessionName> ResolveSession(std::string_view key, std::string_view agent_id,
                                          std::string_view default_agent = "main");

bool IsSubagentKey(const ParsedKey& key);   // rest starts with `subagent:`
int SubagentDepth(const ParsedKey& key);    // number of `subagent:` segments
// The parent of a `:thread:<id>` / `:topic:<id>` key (last occurrence, case-insensitive).
std::optional<std::string> ThreadParentKey(std::string_view key);

// `session-state:<lower-case hex of the UTF-8 key>`.
std::string EncodeContextKey(std::string_view target_key);
// Decodes a context key; nullopt for a wrong prefix, empty/odd-length/non-hex tail or
// invalid UTF-8 (a leading BOM is kept as is).
std::optional<std::string> DecodeContextKey(std::string_view context_key);

// The byte-exact notice text of docs/semantics.md, "One notice, not many".
std::string NoticeText(std::string_view target_key, uint64_t since);

bool IsValidUtf8(std::string_view s);

}  // namespace statewatch

#endif  // STATEWATCH_SESSION_KEY_H_

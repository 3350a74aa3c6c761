// JSON codec of session registry entries (what `PUT /v1/sessions/{key}` takes and answers),
// and what the tools derive from an entry when the gateway left a field out: the session's
// kind and channel.
//
// Fields (camelCase): sessionId, kind, channel, label, displayName, model, modelOverride,
// thinking, runtime, contextTokens (the model's context window), totalTokens (tokens in the
// context now), inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
// parentSessionKey, sandboxed, createdAt, updatedAt, and the delivery route lastChannel,
// lastTo, lastAccountId, lastThreadId.
//
// In an upsert, a missing field keeps the stored value and `null` clears it (createdAt and
// updatedAt cannot be cleared: null keeps them). An empty string is refused
// (`model must be a non-empty string, or null to clear it (got "")`): "" would otherwise be
// stored and listed as a value nobody meant. Any other field but agentId (which names the
// session's agent) is refused (`unknown field modle (known: agentId, sessionId, ...)`): a
// misspelt field must not read as stored.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CODECS_REGISTRY_CODEC_H_
#define STATEWATCH_CODECS_REGISTRY_CODEC_H_

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// The registry kinds of docs/semantics.md, "Session tools", in the order error messages list them.
inline constexpr std::string_view kSessionKinds[] = {"main", "group", "cron",
                                                     "hook", "node",  "other"};
bool IsSessionKind(std::string_view kind);

// The thinking levels a session or a spawn may name.
inline constexpr std::string_view kThinkingLevels[] = {"off",    "minimal", "low",
                                                       "medium", "high",    "xhigh"};

// Reads the registry fields of an upsert body (a JSON object) into an update of the record
// named `name` (nulls become SessionRecord::clear). `agentId` is not read here: the caller
// resolves the session name. InvalidArgument names the field and the value:
// `contextTokens must be a non-negative integer (got "x")`; createdAt later than updatedAt in
// one body is refused.
Result<SessionRecord> SessionRecordFromJson(const boost::json::value& body,
                                            const SessionName& name);

// Every stored field, for the gateway (the route included); absent optional ones are
// omitted. `sessionKey`, `agentId`, `kind`, `channel` and `sandboxed` always.
boost::json::object SessionRecordToJson(const SessionRecord& record);

// The kind of a session: the registry's, else derived from its key like the reference
// gateway does — `main` for the agent's main key (`agent:<id>:main`, bare `main`/`global`),
// `cron` / `hook` / `node` by prefix of the rest, `group` for group and channel keys,
// `other` for everything else (sub-agents included).
std::string SessionKindOf(const SessionRecord& record);
std::string DeriveSessionKind(const SessionName& name);

// The channel of a session: the registry's, else derived from its key — `internal` for
// cron / hook / node keys, the first segment of a group or channel key
// (`agent:main:discord:group:ops` -> discord, `…:slack:channel:c1:thread:9` -> slack,
// `…:matrix:channel:!room:example.org` -> matrix), else `unknown` — also for a nested key,
// whose rest itself starts with `agent:` (`agent:main:agent:plugin:slack:channel:x`).
std::string SessionChannelOf(const SessionRecord& record);
std::string DeriveSessionChannel(const SessionName& name);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CODECS_REGISTRY_CODEC_H_

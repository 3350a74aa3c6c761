// JSON codec of session registry entries (what `PUT /v1/sessions/{key}` takes and what
// sessions_list / session_status show), and the session kind derived from a key when the
// registry has none.
//
// Field names are camelCase: sessionId, kind, channel, label, model, contextTokens,
// totalTokens, parentSessionKey, sandboxed, createdAt, updatedAt. In an upsert a missing or
// null field keeps the stored value; unknown fields are ignored (newer gateways).
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_TOOLS_REGISTRY_CODEC_H_
#define STATEWATCH_TOOLS_REGISTRY_CODEC_H_

#include <boost/json.hpp>
#include <string>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// The registry kinds of semantics.md §9, in the order error messages list them.
inline constexpr std::string_view kSessionKinds[] = {"main", "group", "cron",
                                                     "hook", "node",  "other"};
bool IsSessionKind(std::string_view kind);

// Reads the registry fields of an upsert body (a JSON object) into a record named `name`.
// `agentId` is not read here: the caller resolves the session name. InvalidArgument names
// the field and the value: `contextTokens must be a non-negative integer (got "x")`.
Result<SessionRecord> SessionRecordFromJson(const boost::json::value& body,
                                            const SessionName& name);

// Every known field; absent optional ones are omitted. `sessionKey` and `agentId` always.
boost::json::object SessionRecordToJson(const SessionRecord& record);

// The kind of a session: the registry's, else derived from its key like the reference
// gateway does — `main` for the agent's main key (`agent:<id>:main`, bare `main`/`global`),
// `cron` / `hook` / `node` by prefix of the rest, `group` for group and channel keys,
// `other` for everything else (sub-agents included).
std::string SessionKindOf(const SessionRecord& record);
std::string DeriveSessionKind(const SessionName& name);

// The channel of a session: the registry's, else "unknown".
std::string SessionChannelOf(const SessionRecord& record);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_REGISTRY_CODEC_H_

// sessions_history (docs/semantics.md, "Session tools"): a bounded, cleaned view of a
// visible session's transcript, plus the JSON codec of the transcript messages the gateway
// appends (POST /v1/sessions/{key}/messages) and the session reference resolver the
// messaging tools share.
//
// Errors are values:
//   InvalidArgument  — a bad parameter (`limit must be a positive integer`, ...);
//   PermissionDenied — a visibility refusal, byte-exact as in "Session tools" (action "history");
//   NotFound         — `Session not found: <id> (use the full sessionKey from sessions_list)`;
//   anything else    — the engine failed.
//
// Thread-safe: reads the engine only.
#ifndef STATEWATCH_TOOLS_SESSION_HISTORY_H_
#define STATEWATCH_TOOLS_SESSION_HISTORY_H_

#include <boost/json.hpp>
#include <cstdint>
#include <string_view>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/session_records.h"
#include "statewatch/types.h"
#include "tools/session_tools.h"
#include "tools/visibility.h"

namespace statewatch::tools {

// `limit` when none is given, and the most a call reads (larger values are clamped).
inline constexpr int64_t kDefaultHistoryLimit = 200;
inline constexpr int64_t kMaxHistoryLimit = 10000;

// Resolves what an agent passed as a session reference: "current" (the caller), a session
// key (agent-scoped, or bare = a session of the caller's agent) of a known session, or a
// registry sessionId. A session is known when the registry has it, it recorded an event or
// it has a transcript; the caller is always known. NotFound is the byte-exact
// `Session not found: <reference> (use the full sessionKey from sessions_list)`;
// InvalidArgument when a sessionId names sessions of several agents, none the caller's.
Result<SessionName> ResolveSessionReference(const Engine& engine, const SessionName& caller,
                                            std::string_view reference);

// The visibility the caller actually gets: the configured one, clamped to `tree` for a
// sandboxed caller (registry `sandboxed`).
Result<Visibility> CallerVisibility(const Engine& engine, const SessionToolsOptions& options,
                                    const SessionName& caller);

// OK when the caller may act on `target` (always for itself), else the PermissionDenied of
// CheckVisibility for `action`.
Status CheckSessionAccess(const Engine& engine, const SessionToolsOptions& options,
                          SessionAction action, const SessionName& caller,
                          const SessionName& target);

// sessions_history: `sessionKey` (required: key, session id or "current"), `limit?`
// (positive integer, default 200, clamped to 10,000; counts transcript messages before tool
// results are left out), `includeTools?` (boolean, default false). Every parameter is
// validated before any work. Answers
//   {"sessionKey", "agentId", "messages": [{"index", "role", "content", "toolName"?,
//    "timestamp"}...], "truncated", "droppedMessages", "contentTruncated",
//    "contentRedacted", "bytes"}
// cleaned and capped as tools/history_sanitizer.h describes (`bytes` = the serialized
// `messages` array, at most 80 KiB).
// REQUIRES: `caller` is resolved (ResolveSession).
Result<boost::json::object> SessionsHistory(const Engine& engine,
                                            const SessionToolsOptions& options,
                                            const SessionName& caller,
                                            const boost::json::object& params);

// The body of POST /v1/sessions/{key}/messages: {"messages": [message...]}, an array of
// messages, or one message. A message is {"role", "content", "toolName"?, "timestamp"?}:
// role a non-empty string; content a string or an array of content blocks (one block
// object is taken as an array of one); timestamp integer ms (absent or 0: the engine's now).
// provenance and usage (below) are the other fields; any other is refused, named with its
// place: `unknown field messages[0].tolName (known: role, ...)`. InvalidArgument names the
// message and field:
// `messages[2].content must be a string or an array of content blocks (got 7)`.
Result<std::vector<TranscriptMessage>> TranscriptMessagesFromJson(const boost::json::value& body);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_SESSION_HISTORY_H_

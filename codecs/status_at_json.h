// JSON of a session's status at a sequence (Engine::StatusAt): the answer of
// GET /v1/sessions/{key}/status[?asOf=SEQ] and of session_status's `asOf` (docs/http-api.md
// "Status as of a past sequence"), and the parser of the asOf parameter.
//
//   {"sessionKey", "agentId", "asOf", "lastSequence", "earliestAsOf", "stateVersion",
//    "watermark", "deletedAt"?, "stateChanges": {events, truncated,
//    earliestAvailableSequence, historyGap}, "watching": [CursorEntry], "watchers":
//    [CursorEntry], "pendingNotices": [{targetSessionKey, contextKey, text}]}
//   CursorEntry: {"watcherSessionKey", "targetSessionKey", "targetAgentId", "lastSeen",
//    "notified", "material", "updatedAt", "pending"}
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CODECS_STATUS_AT_JSON_H_
#define STATEWATCH_CODECS_STATUS_AT_JSON_H_

#include <boost/json.hpp>
#include <cstdint>
#include <optional>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// The status object above; `session` is the name asked for.
boost::json::object SessionStatusAtToJson(const SessionName& session, const SessionStatusAt& s);

// The members of SessionStatusAtToJson other than sessionKey, agentId, stateVersion and
// stateChanges (which session_status answers itself): the `asOf` object of session_status.
boost::json::object AsOfDetailsToJson(const SessionStatusAt& s);

// `asOf` as given (a JSON number or a string of digits; null or a blank string: absent).
// InvalidArgument "asOf must be a non-negative integer (got ...)" otherwise.
Result<std::optional<uint64_t>> ParseAsOf(const boost::json::value* value);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CODECS_STATUS_AT_JSON_H_

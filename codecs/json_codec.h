// JSON codec of the statewatch API values: events, pages of changes, notices, cursors and
// maintenance reports out; event inputs and `changesSince` in. Field names are the camelCase
// names of docs/semantics.md, "What an event holds" and "Catching up: `changesSince`".
// Shared by the CLI and (later) the daemon.
//
// No exception escapes: Boost.JSON errors are caught here and returned as a Status. Every
// error message names the field and the offending value, except the byte-exact
// `changesSince` refusal (docs/semantics.md, "Catching up: `changesSince`"), whose detailed
// variant is ChangesSinceErrorDetail().
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CODECS_JSON_CODEC_H_
#define STATEWATCH_CODECS_JSON_CODEC_H_

#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "codecs/json_fields.h"
#include "statewatch/changes_view.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// The tool-facing refusal of a bad `changesSince`, byte-exact (docs/semantics.md,
// "Catching up: `changesSince`").
inline constexpr char kChangesSinceError[] = "changesSince must be a non-negative integer";

// ---- out -------------------------------------------------------------------------------

// A stored event with every field of "What an event holds" and its traceparent; empty
// optional fields (sessionId, actorId, runId, payload, dedupeKey, traceparent) are omitted.
// `payload` is the parsed object (omitted if it is not one).
boost::json::object EventToJson(const Event& event);

// The reconciliation view of "Catching up: `changesSince`": sequence, kind, actorType,
// occurredAt, summary and, when present, actorId, runId, payload limited to the keys outcome,
// channel and turns (payload omitted when none of them is there) and the write's W3C traceparent.
boost::json::object ChangeEventToJson(const Event& event);
boost::json::object ChangeEventToJson(const EventView& event);

// {"events": [ChangeEventToJson...], "truncated", "earliestAvailableSequence", "historyGap"}.
boost::json::object ChangesPageToJson(const ChangesPage& page);
boost::json::object ChangesPageToJson(const ChangesView& page);

// The serialized ChangeEventToJson(event): a RowRenderer (Engine::ReadChanges), so the
// daemon renders each journal row once while the engine caches it.
void RenderChangeEvent(const EventView& event, std::string* out);

// Appends the serialized ChangesPageToJson(page), byte for byte, from page.rendered(i).
// REQUIRES: the page was read with RenderChangeEvent.
void AppendChangesPageJson(const ChangesView& page, std::string* out);

// EventToJson plus "deduplicated": true, only when the event came back deduplicated.
boost::json::object RecordResultToJson(const RecordResult& result);

// {"sessionKey", "agentId", "stateVersion"} and, with a page, "stateChanges"
// (ChangesPageToJson): what `statewatch status` and GET /v1/sessions/{key}/state print.
boost::json::object SessionStateToJson(const SessionName& session, Sequence version,
                                       const ChangesPage* page = nullptr);

// {"targetSessionKey", "contextKey", "text"}.
boost::json::object NoticeToJson(const Notice& notice);

// {"lastSeen", "notified", "material", "updatedAt"}.
boost::json::object CursorToJson(const CursorState& cursor);

// {"rows", "sessions", "journalSessions", "cursors", "pendingNotices", "lastSequence",
// "bytesOnDisk", ...}. "sessions" counts the registered sessions (the session registry,
// `registered`); "journalSessions" those with events in the journal (stats.sessions, the
// heads). The two differ: a registered session may have no event yet, and events may be
// recorded for a session nobody registered. Without `registered` both say stats.sessions.
boost::json::object StatsToJson(const EngineStats& stats,
                                std::optional<uint64_t> registered = std::nullopt);

// {"rowsDeleted", "sessionsTouched", "cursorsExpired"}.
boost::json::object PruneStatsToJson(const PruneStats& stats);

// {"ok", "recordsReplayed", "headsChecked", "cursorsChecked", "rowsChecked", "differences": [...]}.
boost::json::object VerifyReportToJson(const VerifyReport& report);

// An event input as the body EventInputFromJson reads back into the same input (what
// `statewatch --server URL record` sends). Empty optional fields are omitted; a payload that
// is not valid JSON is sent as a string (the engine drops non-object payloads either way).
boost::json::object EventInputToJson(const EventInput& input);

// ---- in --------------------------------------------------------------------------------

// Reads one event input from a JSON object with the fields sessionKey, agentId, sessionId,
// kind, actorType, actorId, runId, occurredAt (integer ms), summary, payload, dedupeKey,
// traceparent and watchers (array of strings). A null field counts as absent; any other field
// is refused (`unknown field wacthers (known: ...)`): a misspelt `watchers` must not answer
// 200 and register no watch. `actorType` is required because the
// engine cannot tell an absent one from "system". A payload object is serialized into
// payload_json; any other payload is dropped ("What an event holds"). Everything else
// (empty keys, unknown kinds, clamping) is the engine's to validate.
// InvalidArgument names the field and the value: `occurredAt must be an integer (got "abc")`.
Result<EventInput> EventInputFromJson(const boost::json::value& value);

// Reads `changesSince`: a non-negative safe integer (<= 2^53 - 1; an integral double such as
// 12.0 counts), or a string of decimal digits with optional surrounding whitespace ("12").
// Null, absent (nullptr) and a blank string mean "not given" (nullopt). Anything else
// (negative, fractional, non-numeric, bool, array, object, too large) is InvalidArgument with
// exactly kChangesSinceError.
Result<std::optional<uint64_t>> ParseChangesSince(const boost::json::value* value);

// The refusal with the offending value appended, for humans (CLI stderr, logs):
// `changesSince must be a non-negative integer (got "-1")`.
std::string ChangesSinceErrorDetail(const boost::json::value& value);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CODECS_JSON_CODEC_H_

// The JSON Schemas (2020-12, as OpenAPI 3.1 uses them) of every body the daemon takes or
// answers, by component name. The route table (route_table.cc) names them; openapi.cc puts
// them under components/schemas. Answers allow fields they do not list (a newer daemon may
// add some); requests document every field the daemon reads.
#include "server/api_schemas.h"

namespace statewatch::server {

const char* ComponentSchemasJson() {
  return R"json({
"Error": {"type": "object", "required": ["error"], "properties": {
  "error": {"type": "object", "required": ["code", "message"], "properties": {
    "code": {"type": "string", "description": "Machine-readable: invalid_argument, invalid_json, invalid_parameter, invalid_caller, bad_request, unauthorized, insufficient_scope, forbidden, not_found, unknown_session, unknown_tool, method_not_allowed, request_timeout, body_too_large, header_too_large, upgrade_required, not_ready, forbidden_origin, misdirected_request, unsupported_media_type, unavailable, too_many_connections, too_many_streams, shutting_down, insufficient_storage, internal; in cluster mode also misdirected, standby, partition_moved, switching, already_owner, not_standby, and at a node's own port cross_partition_batch, partition_required, answer_lost."},
    "message": {"type": "string", "description": "What was wrong and with what value; tool refusals are byte-exact (docs/semantics.md, \"Session tools\")."}}}}},
"Kind": {"type": "string", "description": "An event kind of the engine's kind table (docs/semantics.md, \"Kinds\").",
  "examples": ["human_direct_message", "upstream_missing", "goal_changed", "child_spawned", "run_completed", "run_failed", "compacted", "adopted", "created", "guard_refused"]},
"ActorType": {"type": "string", "enum": ["human", "agent", "system"]},
"EventInput": {"type": "object", "additionalProperties": false, "required": ["sessionKey", "kind", "actorType"], "properties": {
  "sessionKey": {"type": "string"},
  "agentId": {"type": "string", "description": "The agent of a bare sessionKey (default main)."},
  "sessionId": {"type": "string"},
  "kind": {"$ref": "#/components/schemas/Kind"},
  "actorType": {"$ref": "#/components/schemas/ActorType"},
  "actorId": {"type": "string", "description": "For an agent actor its session key; a watcher is never notified of its own events."},
  "runId": {"type": "string"},
  "occurredAt": {"type": "integer", "description": "ms since the epoch; clamped into [now - 24 h, now]; default now."},
  "summary": {"type": "string", "description": "One line of metadata, never message content (folded to one line, capped)."},
  "payload": {"type": "object", "description": "Any JSON object; anything else is dropped."},
  "dedupeKey": {"type": "string", "description": "Idempotency key, unique across the engine."},
  "watchers": {"type": "array", "items": {"type": "string"}, "description": "Producer-passed watchers (agent-scoped keys)."},
  "traceparent": {"type": "string", "description": "W3C Trace Context (version 00, lower-case hex, ids not all zero); wins over the request's traceparent header. An invalid one is refused."}}},
"RecordEventsBody": {"oneOf": [
  {"$ref": "#/components/schemas/EventInput"},
  {"type": "array", "items": {"$ref": "#/components/schemas/EventInput"}}]},
"Event": {"type": "object", "required": ["sequence", "sessionKey", "agentId", "kind", "actorType", "occurredAt", "summary"], "properties": {
  "sequence": {"type": "integer", "minimum": 1},
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "sessionId": {"type": "string"},
  "kind": {"type": "string"}, "actorType": {"$ref": "#/components/schemas/ActorType"},
  "actorId": {"type": "string"}, "runId": {"type": "string"},
  "occurredAt": {"type": "integer"}, "summary": {"type": "string"},
  "payload": {"type": "object"}, "dedupeKey": {"type": "string"},
  "traceparent": {"type": "string", "description": "The W3C traceparent of the write that recorded it (version 00), when it had one."},
  "deduplicated": {"type": "boolean", "description": "Present (true) when an existing event came back for its dedupeKey."}}},
"RecordEventsAnswer": {"type": "object", "required": ["events"], "properties": {
  "events": {"type": "array", "items": {"$ref": "#/components/schemas/Event"}}}},
"ChangeEvent": {"type": "object", "required": ["sequence", "kind", "actorType", "occurredAt", "summary"], "properties": {
  "sequence": {"type": "integer"}, "kind": {"type": "string"}, "actorType": {"$ref": "#/components/schemas/ActorType"},
  "occurredAt": {"type": "integer"}, "summary": {"type": "string"}, "actorId": {"type": "string"}, "runId": {"type": "string"},
  "payload": {"type": "object", "description": "Only the keys outcome, channel and turns, as the producer wrote them.", "properties": {
    "outcome": {"description": "A run's outcome (run_completed, run_failed: ok, error, timeout, cancelled)."},
    "channel": {"description": "The channel of a human message."}, "turns": {"description": "A conversation's turn count."}}},
  "traceparent": {"type": "string", "description": "The W3C traceparent of the write that recorded it, when it had one."}}},
"StateChanges": {"type": "object", "required": ["events", "truncated", "earliestAvailableSequence", "historyGap"], "properties": {
  "events": {"type": "array", "items": {"$ref": "#/components/schemas/ChangeEvent"}},
  "truncated": {"type": "boolean"}, "earliestAvailableSequence": {"type": "integer"},
  "historyGap": {"type": "boolean", "description": "true exactly when changesSince is below the session's prune watermark."}}},
"SessionUpsert": {"type": "object", "additionalProperties": false, "description": "A missing field keeps its stored value, null clears it (createdAt/updatedAt: null keeps them); an empty string is refused. Any other field is refused (400, naming it).", "properties": {
  "agentId": {"type": "string", "description": "The agent of a bare key (else ?agentId=, X-Agent-Id, main)."},
  "sessionId": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, "kind": {"enum": ["main", "group", "cron", "hook", "node", "other", null]},
  "channel": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, "label": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
  "displayName": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
  "model": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "The model the gateway runs the session on."},
  "modelOverride": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "A per-session override (session_status model sets it)."},
  "thinking": {"enum": ["off", "minimal", "low", "medium", "high", "xhigh", null]},
  "runtime": {"enum": ["subagent", "acp", null]},
  "contextTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "The model's context window."},
  "totalTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "Tokens in the context now."},
  "inputTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}, "outputTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
  "cacheReadTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}, "cacheWriteTokens": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
  "parentSessionKey": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "The spawner: visibility tree is the caller and the sessions whose parent it is."},
  "sandboxed": {"oneOf": [{"type": "boolean"}, {"type": "null"}]}, "createdAt": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}, "updatedAt": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]},
  "lastChannel": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "The delivery route: where the gateway last posted for this session."},
  "lastTo": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}, "lastAccountId": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}]},
  "lastThreadId": {"oneOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "Set on a thread-bound child: its announcement goes back to this thread."}}},
"SessionIdentity": {"type": "object", "required": ["sessionKey", "agentId", "kind", "channel"], "description": "A session's name and the registry's labels for it, as every session answer carries them.", "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "sessionId": {"type": "string"},
  "kind": {"type": "string"}, "channel": {"type": "string"}, "label": {"type": "string"}, "displayName": {"type": "string"}}},
"SessionRecord": {"allOf": [{"$ref": "#/components/schemas/SessionIdentity"}, {"type": "object", "required": ["sandboxed"], "properties": {
  "model": {"type": "string"}, "modelOverride": {"type": "string"}, "thinking": {"type": "string"}, "runtime": {"type": "string"},
  "contextTokens": {"type": "integer"}, "totalTokens": {"type": "integer"}, "inputTokens": {"type": "integer"},
  "outputTokens": {"type": "integer"}, "cacheReadTokens": {"type": "integer"}, "cacheWriteTokens": {"type": "integer"},
  "parentSessionKey": {"type": "string"},
  "sandboxed": {"type": "boolean"}, "createdAt": {"type": "integer"}, "updatedAt": {"type": "integer"},
  "lastChannel": {"type": "string"}, "lastTo": {"type": "string"}, "lastAccountId": {"type": "string"}, "lastThreadId": {"type": "string"}}}]},
"SessionAnswer": {"type": "object", "required": ["session"], "properties": {"session": {"$ref": "#/components/schemas/SessionRecord"}}},
"SessionState": {"type": "object", "required": ["sessionKey", "agentId", "stateVersion"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "stateVersion": {"type": "integer", "minimum": 0},
  "stateChanges": {"$ref": "#/components/schemas/StateChanges"}}},
"StatusCursor": {"type": "object", "required": ["watcherSessionKey", "targetSessionKey", "targetAgentId", "lastSeen", "notified", "material", "updatedAt", "pending"], "properties": {
  "watcherSessionKey": {"type": "string"}, "targetSessionKey": {"type": "string"}, "targetAgentId": {"type": "string"},
  "lastSeen": {"type": "integer", "description": "L"}, "notified": {"type": "integer", "description": "N (pending exactly when N > L)"},
  "material": {"type": "integer", "description": "M, coalesced material included"}, "updatedAt": {"type": "integer"}, "pending": {"type": "boolean"}}},
"AsOfDetails": {"type": "object", "required": ["asOf", "lastSequence", "earliestAsOf", "watermark", "watching", "watchers", "pendingNotices"], "properties": {
  "asOf": {"type": "integer", "minimum": 0, "description": "The sequence the answer is as of (without asOf: the last sequence)."},
  "lastSequence": {"type": "integer", "minimum": 0, "description": "The database's last sequence when asked."},
  "earliestAsOf": {"type": "integer", "minimum": 0, "description": "The earliest asOf the retained log can rebuild (the last checkpoint's sequence)."},
  "watermark": {"type": "integer", "minimum": 0, "description": "The session's prune mark at asOf, raised by the pruning done since (historyGap is after < watermark)."},
  "deletedAt": {"type": "integer", "minimum": 1, "description": "Present when the session was deleted after asOf: the delete's sequence (its events are gone)."},
  "watching": {"type": "array", "items": {"$ref": "#/components/schemas/StatusCursor"}, "description": "Cursors the session held as watcher, by target key."},
  "watchers": {"type": "array", "items": {"$ref": "#/components/schemas/StatusCursor"}, "description": "Cursors on the session as target, by watcher key."},
  "pendingNotices": {"type": "array", "items": {"$ref": "#/components/schemas/Notice"}, "description": "The session's pending notices as watcher, oldest first, byte-exact text."}}},
"SessionStatusAt": {"allOf": [{"$ref": "#/components/schemas/AsOfDetails"}, {"type": "object", "required": ["sessionKey", "agentId", "stateVersion", "stateChanges"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"},
  "stateVersion": {"type": "integer", "minimum": 0, "description": "The session's head at asOf."},
  "stateChanges": {"$ref": "#/components/schemas/StateChanges"}}}],
  "description": "The members of AsOfDetails with the session's name, head and changes."},
"VersionsRequest": {"type": "object", "additionalProperties": false, "required": ["sessions"], "properties": {
  "sessions": {"type": "array", "items": {"type": "string"}},
  "agentId": {"type": "string", "description": "The agent of the bare keys (default main)."}}},
"VersionsAnswer": {"type": "object", "required": ["versions"], "properties": {
  "versions": {"type": "array", "items": {"$ref": "#/components/schemas/SessionState"}}}},
"Cursor": {"type": "object", "required": ["lastSeen", "notified", "material", "updatedAt"], "properties": {
  "lastSeen": {"type": "integer"}, "notified": {"type": "integer"}, "material": {"type": "integer"}, "updatedAt": {"type": "integer"}}},
"SweepAnswer": {"type": "object", "required": ["pendingNotices"], "properties": {"pendingNotices": {"type": "integer"}}},
"Deleted": {"type": "object", "required": ["deleted"], "properties": {"deleted": {"const": true}}},
"Reset": {"type": "object", "required": ["reset"], "properties": {"reset": {"const": true}}},
"TranscriptMessage": {"type": "object", "additionalProperties": false, "required": ["role", "content"], "properties": {
  "role": {"type": "string", "minLength": 1},
  "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}, {"type": "object"}]},
  "toolName": {"type": "string"}, "timestamp": {"type": "integer", "minimum": 0},
  "provenance": {"type": "object", "additionalProperties": false, "required": ["sourceSessionKey"], "description": "Marks a message another session sent (inter-session data).", "properties": {
    "sourceSessionKey": {"type": "string", "minLength": 1}, "sourceTool": {"type": "string"}, "sourceChannel": {"type": "string"}, "runId": {"type": "string"}}},
  "usage": {"type": "object", "additionalProperties": false, "description": "Token counts of the model call that produced the message; session_status backfills from the last one.", "properties": {
    "input": {"type": "integer", "minimum": 0}, "output": {"type": "integer", "minimum": 0}, "cacheRead": {"type": "integer", "minimum": 0},
    "cacheWrite": {"type": "integer", "minimum": 0}, "total": {"type": "integer", "minimum": 0, "description": "Default input + output."}}}}},
"TranscriptAppend": {"oneOf": [
  {"type": "object", "additionalProperties": false, "required": ["messages"], "properties": {"messages": {"type": "array", "items": {"$ref": "#/components/schemas/TranscriptMessage"}}}},
  {"type": "array", "items": {"$ref": "#/components/schemas/TranscriptMessage"}},
  {"$ref": "#/components/schemas/TranscriptMessage"}]},
"Appended": {"type": "object", "required": ["appended"], "properties": {"appended": {"type": "integer", "minimum": 0}}},
"WatchRequest": {"type": "object", "additionalProperties": false, "required": ["watcher", "target"], "properties": {
  "watcher": {"type": "string"}, "target": {"type": "string"}, "targetAgentId": {"type": "string"}}},
"WatchBody": {"oneOf": [
  {"$ref": "#/components/schemas/WatchRequest"},
  {"type": "array", "items": {"$ref": "#/components/schemas/WatchRequest"}}]},
"WatchAnswer": {"type": "object", "required": ["watched"], "properties": {
  "watched": {"type": "boolean"},
  "watches": {"type": "integer", "minimum": 0, "description": "An array's distinct (watcher, target) pairs, all watched now."},
  "created": {"type": "integer", "minimum": 0, "description": "Those of them that were new cursors; the others kept their positions."}}},
"UnwatchAnswer": {"type": "object", "required": ["watches", "removed"], "properties": {
  "watches": {"type": "integer", "minimum": 0, "description": "The distinct (watcher, target) pairs named."},
  "removed": {"type": "integer", "minimum": 0, "description": "Those of them that held a cursor, now deleted with its pending notice."}}},
"Notice": {"type": "object", "required": ["targetSessionKey", "contextKey", "text"], "properties": {
  "targetSessionKey": {"type": "string"},
  "contextKey": {"type": "string", "description": "session-state:<lower-case hex of the UTF-8 target key>"},
  "text": {"type": "string", "description": "Session \"<key>\" changed (other actor). Reconcile before acting: session_status sessionKey \"<key>\" changesSince <L>."}}},
"NoticesAnswer": {"type": "object", "required": ["notices"], "properties": {"notices": {"type": "array", "items": {"$ref": "#/components/schemas/Notice"}},
  "incomplete": {"type": "boolean", "description": "Through a cluster node: some partitions did not give their notices (they stay pending there). The notices listed are every one the other partitions acknowledged."},
  "missingPartitions": {"type": "array", "items": {"type": "integer", "minimum": 0}},
  "partitionErrors": {"type": "array", "description": "Why each missing partition gave no notices: its own refusal (a 4xx is that partition's answer, never the whole answer) or the node's error for it.", "items": {"$ref": "#/components/schemas/PartitionError"}}}},
"PartitionError": {"type": "object", "required": ["partition", "status", "error"], "properties": {
  "partition": {"type": "integer", "minimum": 0}, "status": {"type": "integer"},
  "error": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}},
"DrainRequest": {"type": "object", "additionalProperties": false, "required": ["watcher"], "properties": {"watcher": {"type": "string"}}},
"Wake": {"type": "object", "required": ["watcher", "reason", "at"], "description": "One WebSocket text message of GET /v1/wakes.", "properties": {
  "watcher": {"type": "string"}, "reason": {"type": "string"}, "at": {"type": "integer"}}},
"Provenance": {"type": "object", "required": ["kind", "sourceSessionKey", "sourceTool", "isUser"], "properties": {
  "kind": {"const": "inter_session"}, "sourceSessionKey": {"type": "string"}, "sourceTool": {"type": "string"},
  "sourceChannel": {"type": "string"}, "runId": {"type": "string"}, "isUser": {"const": false}}},
"Route": {"type": "object", "description": "Where a gateway posts: the non-empty fields of a session's delivery route.", "properties": {
  "channel": {"type": "string"}, "to": {"type": "string"}, "accountId": {"type": "string"}, "threadId": {"type": "string"}}},
"SpawnOptions": {"type": "object", "required": ["runtime", "thread", "sandbox", "context", "depth"], "description": "How to start a spawned run.", "properties": {
  "runtime": {"type": "string", "enum": ["subagent", "acp"]}, "model": {"type": "string"},
  "thinking": {"type": "string", "enum": ["off", "minimal", "low", "medium", "high", "xhigh"]},
  "thread": {"type": "boolean", "description": "Bind the run to a thread; set the child's route to it (lastThreadId) so the announcement goes there."},
  "sandbox": {"type": "string", "enum": ["inherit", "require"]}, "context": {"type": "string", "enum": ["isolated", "fork"], "description": "fork: the child's transcript already holds the requester's."},
  "label": {"type": "string"}, "depth": {"type": "integer", "minimum": 1}}},
"Delivery": {"type": "object", "required": ["deliveryId", "type", "sessionKey", "agentId", "runId", "text", "provenance", "createdAt"],
  "description": "One WebSocket text message of GET /v1/deliveries: work for the gateway to hand to a session.", "properties": {
  "deliveryId": {"type": "integer"}, "type": {"type": "string", "enum": ["message", "task", "steer", "announce"]},
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "runId": {"type": "string"}, "text": {"type": "string"},
  "provenance": {"$ref": "#/components/schemas/Provenance"},
  "marker": {"type": "string", "description": "message and announce: [Inter-session message] sourceSession=<key> sourceChannel=<channel> sourceTool=<tool> isUser=false"},
  "prompt": {"type": "string", "description": "message and announce: marker + newline + text, what a gateway that only forwards text hands the model."},
  "route": {"$ref": "#/components/schemas/Route", "description": "task: the requester's route; announce: where to post it (the bound thread's for a thread-bound run)."},
  "options": {"$ref": "#/components/schemas/SpawnOptions"},
  "createdAt": {"type": "integer"},
  "traceparent": {"type": "string", "description": "The W3C traceparent of the sessions_send / sessions_spawn call whose run this delivery belongs to, when it had one."}}},
"AckAnswer": {"type": "object", "required": ["acked", "deliveryId"], "properties": {"acked": {"const": true}, "deliveryId": {"type": "integer"}}},
"RunReply": {"type": "object", "additionalProperties": false, "required": ["text"], "properties": {"text": {"type": "string"}}},
"RunFinish": {"type": "object", "additionalProperties": false, "required": ["status"], "properties": {
  "status": {"type": "string", "enum": ["ok", "error", "timeout", "cancelled"]},
  "result": {"description": "A string as is; any other JSON is stored serialized."}}},
"RunUpdate": {"type": "object", "required": ["runId", "applied", "status", "deliveries"], "properties": {
  "runId": {"type": "string"}, "applied": {"type": "boolean"}, "status": {"type": "string"},
  "deliveries": {"type": "array", "items": {"type": "integer"}}}},
"UpstreamLinkInput": {"type": "object", "additionalProperties": false, "required": ["sessionKey", "catalogId", "hostId", "threadId", "upstreamRef"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "catalogId": {"type": "string"}, "hostId": {"type": "string"},
  "threadId": {"type": "string"}, "upstreamKind": {"type": "string", "enum": ["jsonl"]},
  "upstreamRef": {"type": "object", "additionalProperties": false, "required": ["path"], "properties": {"path": {"type": "string"}}},
  "marker": {"type": "integer", "minimum": 0, "description": "Byte offset to scan from (default: the source's current end)."}}},
"UpstreamLink": {"type": "object", "required": ["sessionKey", "agentId", "catalogId", "hostId", "threadId", "upstreamKind", "upstreamRef", "marker"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "catalogId": {"type": "string"}, "hostId": {"type": "string"},
  "threadId": {"type": "string"}, "upstreamKind": {"type": "string"},
  "upstreamRef": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
  "marker": {"type": "integer"}, "lastScannedAt": {"type": "integer"}, "missingCount": {"type": "integer"}}},
"UpstreamLinks": {"type": "object", "required": ["links"], "properties": {"links": {"type": "array", "items": {"$ref": "#/components/schemas/UpstreamLink"}}}},
"WebhookInput": {"type": "object", "required": ["watcher", "url", "secret"], "additionalProperties": false, "properties": {
  "watcher": {"type": "string", "description": "The watcher's agent-scoped session key (agent:<id>:<rest>)."},
  "url": {"type": "string", "description": "https:// (http:// only to loopback unless webhooks.allowHttp)."},
  "secret": {"type": "string", "minLength": 1, "description": "The HMAC-SHA256 key of the Statewatch-Signature header."}}},
"Webhook": {"type": "object", "required": ["watcher", "url", "createdAt"], "properties": {
  "watcher": {"type": "string"}, "url": {"type": "string"}, "createdAt": {"type": "integer"}}},
"WebhookAnswer": {"type": "object", "required": ["webhook"], "properties": {"webhook": {"$ref": "#/components/schemas/Webhook"}}},
"Webhooks": {"type": "object", "required": ["webhooks"], "properties": {"webhooks": {"type": "array", "items": {"$ref": "#/components/schemas/Webhook"}}}},
"DeadLetter": {"type": "object", "required": ["idempotencyKey", "watcher", "target", "sequence", "attempts", "lastError", "enqueuedAt", "deadAt", "body"], "properties": {
  "idempotencyKey": {"type": "string", "description": "<watcher>:<target>:<sequence>, as sent."},
  "watcher": {"type": "string"}, "target": {"type": "string"}, "sequence": {"type": "integer"},
  "attempts": {"type": "integer"}, "lastError": {"type": "string"}, "enqueuedAt": {"type": "integer"},
  "deadAt": {"type": "integer"}, "body": {"type": "string", "description": "The exact body the calls carried."}}},
"DeadLetters": {"type": "object", "required": ["deadLetters"], "properties": {"deadLetters": {"type": "array", "items": {"$ref": "#/components/schemas/DeadLetter"}}}},
"DeadLetterRef": {"type": "object", "additionalProperties": false, "required": ["idempotencyKey"], "properties": {"idempotencyKey": {"type": "string", "minLength": 1}}},
"DeadLetterRetried": {"type": "object", "required": ["retried"], "properties": {"retried": {"const": true}}},
"DeadLetterDropped": {"type": "object", "required": ["dropped"], "properties": {"dropped": {"const": true}}},
"UpstreamLinkAnswer": {"type": "object", "required": ["link"], "properties": {"link": {"$ref": "#/components/schemas/UpstreamLink"}}},
"PruneStats": {"type": "object", "required": ["rowsDeleted", "sessionsTouched", "cursorsExpired"], "properties": {
  "rowsDeleted": {"type": "integer"}, "sessionsTouched": {"type": "integer"}, "cursorsExpired": {"type": "integer"}}},
"VerifyReport": {"type": "object", "required": ["ok", "recordsReplayed", "headsChecked", "cursorsChecked", "rowsChecked", "differences"], "properties": {
  "ok": {"type": "boolean"}, "recordsReplayed": {"type": "integer"}, "headsChecked": {"type": "integer"},
  "cursorsChecked": {"type": "integer"}, "rowsChecked": {"type": "integer"}, "differences": {"type": "array", "items": {"type": "string"}}}},
"Stats": {"type": "object", "required": ["rows", "sessions", "cursors", "pendingNotices", "lastSequence", "bytesOnDisk"], "properties": {
  "rows": {"type": "integer"}, "sessions": {"type": "integer", "description": "Registered sessions (the session registry: PUT /v1/sessions/{key}, sessions_spawn)."},
  "journalSessions": {"type": "integer", "description": "Sessions with events in the journal (a head); may differ from sessions either way."},
  "cursors": {"type": "integer"},
  "pendingNotices": {"type": "integer"}, "lastSequence": {"type": "integer"}, "bytesOnDisk": {"type": "integer"},
  "eventsRecorded": {"type": "integer", "description": "Since this engine was opened."},
  "walBytes": {"type": "integer", "description": "Write-ahead log bytes since this engine was opened."},
  "walBytesPerEvent": {"type": "number"},
  "writeError": {"type": "string", "description": "Present while writes are refused: why."}}},
"BackupRequest": {"type": "object", "additionalProperties": false, "required": ["to"], "properties": {
  "to": {"type": "string", "description": "A directory that does not exist yet, on the daemon's machine (relative to its working directory)."}}},
"BackupAnswer": {"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "description": "The absolute backup directory."}}},
"Clock": {"type": "object", "required": ["now"], "properties": {"now": {"type": "integer"}, "manual": {"type": "boolean"}}},
"ClockSet": {"type": "object", "additionalProperties": false, "required": ["now"], "properties": {"now": {"type": "integer", "minimum": 0, "description": "ms since the epoch; never backwards."}}},
"Health": {"type": "object", "required": ["status", "version"], "properties": {"status": {"enum": ["ok", "degraded"]}, "version": {"type": "string"}, "writes": {"enum": ["refused", "unknown"]}, "writeError": {"type": "string"}, "error": {"type": "string"}}},
"Readiness": {"type": "object", "required": ["status", "version", "checks"], "properties": {"status": {"enum": ["ready", "not_ready"]}, "version": {"type": "string"}, "checks": {"type": "object", "description": "Each check: \"ok\" or why it is not ready.", "properties": {"storage": {"type": "string"}}}}},
"OpenApiDocument": {"type": "object", "required": ["openapi", "info", "paths"], "description": "An OpenAPI 3.1 document.", "properties": {
  "openapi": {"type": "string"}, "info": {"type": "object"}, "paths": {"type": "object"}}},
"SessionStatusParams": {"type": "object", "additionalProperties": false, "properties": {
  "sessionKey": {"type": "string", "description": "Default (and \"current\"): the caller. A key (a bare one is of the caller's agent) or a registry sessionId."},
  "changesSince": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}],
    "description": "A non-negative safe integer or a numeric string; a blank string counts as absent. Anything else: changesSince must be a non-negative integer"},
  "model": {"type": "string", "description": "Sets the session's model override; \"default\" clears it."},
  "asOf": {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "string"}],
    "description": "Answers as of right after this sequence (post-mortems): stateVersion and stateChanges as they were then, and an asOf object with the cursors and pending notices. Not with model."}}},
"SessionStatusAnswer": {"allOf": [{"$ref": "#/components/schemas/SessionIdentity"}, {"type": "object", "required": ["modelOverride", "usage", "sandboxed", "backgroundTasks", "stateVersion"], "properties": {
  "model": {"type": "string", "description": "The override when one is set, else the registry's model."},
  "modelOverride": {"type": "boolean"}, "defaultModel": {"type": "string", "description": "The registry's model under an override."},
  "runtime": {"type": "string"}, "thinking": {"type": "string"},
  "contextTokens": {"type": "integer"}, "totalTokens": {"type": "integer"},
  "usage": {"type": "object", "required": ["source"], "properties": {
    "inputTokens": {"type": "integer"}, "outputTokens": {"type": "integer"}, "totalTokens": {"type": "integer"},
    "cacheReadTokens": {"type": "integer"}, "cacheWriteTokens": {"type": "integer"}, "contextTokens": {"type": "integer"},
    "contextPercent": {"type": "integer", "description": "totalTokens as a share of the context window."},
    "source": {"type": "string", "enum": ["registry", "transcript", "registry+transcript", "none"]}}},
  "parentSessionKey": {"type": "string"}, "sandboxed": {"type": "boolean"}, "createdAt": {"type": "integer"},
  "updatedAt": {"type": "integer", "description": "The last activity: registry update, journal event or transcript message."},
  "ageMs": {"type": "integer", "minimum": 0},
  "activeRun": {"type": "object", "properties": {"runId": {"type": "string"}, "kind": {"type": "string"}, "status": {"type": "string"},
    "startedAt": {"type": "integer"}, "requesterSessionKey": {"type": "string"}}},
  "backgroundTasks": {"type": "array", "items": {"type": "object", "properties": {"runId": {"type": "string"}, "sessionKey": {"type": "string"},
    "label": {"type": "string"}, "runtime": {"type": "string"}, "startedAt": {"type": "integer"}}}},
  "stateVersion": {"type": "integer", "minimum": 0},
  "stateChanges": {"$ref": "#/components/schemas/StateChanges"},
  "asOf": {"$ref": "#/components/schemas/AsOfDetails", "description": "With the asOf parameter: the cursors and pending notices as of that sequence."}}}]},
"SessionsListParams": {"type": "object", "additionalProperties": false, "properties": {
  "kinds": {"oneOf": [{"type": "array", "items": {"type": "string", "enum": ["main", "group", "cron", "hook", "node", "other"]}},
                      {"type": "string", "enum": ["main", "group", "cron", "hook", "node", "other"]}]},
  "label": {"type": "string"}, "agentId": {"type": "string"}, "search": {"type": "string"},
  "activeMinutes": {"type": "integer", "minimum": 1, "description": "Any activity within: a registry update, an event, a transcript append, a delivery."},
  "limit": {"type": "integer", "minimum": 1, "description": "Default 100; at most 200 are applied."},
  "offset": {"type": "integer", "minimum": 0},
  "messageLimit": {"type": "integer", "minimum": 0, "maximum": 20},
  "includeDerivedTitles": {"type": "boolean"}, "includeLastMessage": {"type": "boolean"}}},
"SessionRow": {"type": "object", "required": ["key", "agentId", "kind", "channel", "updatedAt"], "properties": {
  "key": {"type": "string"}, "agentId": {"type": "string"}, "kind": {"type": "string"}, "channel": {"type": "string"},
  "displayName": {"type": "string"}, "label": {"type": "string"}, "model": {"type": "string"},
  "contextTokens": {"type": "integer"}, "totalTokens": {"type": "integer"},
  "updatedAt": {"type": "integer", "description": "The last activity."}, "parentSessionKey": {"type": "string"},
  "stateVersion": {"type": "integer", "minimum": 1, "description": "Only when > 0."},
  "status": {"type": "string", "enum": ["running", "done", "failed", "killed", "timeout"], "description": "A spawned child's latest run."},
  "childSessions": {"type": "array", "items": {"type": "string"}, "description": "Its visible children."},
  "derivedTitle": {"type": "string", "description": "With includeDerivedTitles: the first user message, cleaned, one line, 60 characters."},
  "lastMessagePreview": {"type": "string", "description": "With includeLastMessage: the last user or assistant message, cleaned, one line, 120 characters."},
  "messages": {"type": "array", "items": {"type": "object"}}}},
"SessionsListAnswer": {"type": "object", "required": ["count", "sessions", "hasMore", "limitApplied"], "properties": {
  "count": {"type": "integer"}, "sessions": {"type": "array", "items": {"$ref": "#/components/schemas/SessionRow"}},
  "hasMore": {"type": "boolean"}, "nextOffset": {"type": "integer"}, "limitApplied": {"type": "integer"},
  "enrichmentOmitted": {"const": true, "description": "Titles, previews and messages were left out to fit 64 KiB."},
  "truncationReason": {"const": "byte-limit", "description": "Rows were left out to fit 64 KiB; go on at nextOffset."},
  "visibility": {"type": "object", "required": ["mode"], "properties": {"mode": {"type": "string", "enum": ["self", "tree", "agent"]},
    "restricted": {"const": true}, "warning": {"type": "string"}}}}},
"SessionsHistoryParams": {"type": "object", "required": ["sessionKey"], "additionalProperties": false, "properties": {
  "sessionKey": {"type": "string", "description": "A session key or session id; \"current\" = the caller."},
  "limit": {"type": "integer", "minimum": 1}, "includeTools": {"type": "boolean"}}},
"SessionsHistoryAnswer": {"type": "object", "required": ["sessionKey", "messages", "truncated", "droppedMessages", "contentTruncated", "contentRedacted", "bytes"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"},
  "messages": {"type": "array", "items": {"$ref": "#/components/schemas/HistoryMessage"}},
  "truncated": {"type": "boolean"}, "droppedMessages": {"type": "integer"}, "contentTruncated": {"type": "boolean"},
  "contentRedacted": {"type": "boolean"}, "bytes": {"type": "integer"}}},
"HistoryMessage": {"type": "object", "required": ["index", "role", "timestamp", "content"], "description": "One transcript message as sessions_history serves it: cleaned and bounded.", "properties": {
  "index": {"type": "integer", "minimum": 0, "description": "Its position in the session's transcript."},
  "role": {"type": "string"}, "toolName": {"type": "string"}, "timestamp": {"type": "integer"},
  "provenance": {"$ref": "#/components/schemas/Provenance"},
  "content": {"description": "The message's content, cleaned: a string, or content blocks with long text cut and images and secrets redacted; a placeholder string when the message alone was over the byte limit."}}},
"SessionsSendParams": {"type": "object", "required": ["message"], "additionalProperties": false, "properties": {
  "sessionKey": {"type": "string"}, "label": {"type": "string"}, "agentId": {"type": "string"},
  "message": {"type": "string", "maxLength": 81920, "description": "At most 80 KiB (bytes)."},
  "timeoutSeconds": {"type": "integer", "minimum": 0, "maximum": 86400, "description": "Default 30; 0 = fire and forget."},
  "watch": {"type": "boolean"}}},
"SessionsSendAnswer": {"type": "object", "required": ["runId", "status"], "properties": {
  "runId": {"type": "string"}, "status": {"type": "string", "enum": ["accepted", "ok", "timeout", "error", "forbidden"]},
  "reply": {"type": "string"}, "error": {"type": "string"}, "sessionKey": {"type": "string"}, "watched": {"type": "boolean"}}},
"SessionsSpawnParams": {"type": "object", "required": ["task"], "additionalProperties": false, "properties": {
  "task": {"type": "string", "description": "At most 80 KiB (bytes)."}, "label": {"type": "string", "maxLength": 128}, "runtime": {"type": "string", "enum": ["subagent", "acp"]},
  "agentId": {"type": "string"}, "model": {"type": "string"},
  "thinking": {"type": "string", "enum": ["off", "minimal", "low", "medium", "high", "xhigh"]},
  "thread": {"type": "boolean"}, "sandbox": {"type": "string", "enum": ["inherit", "require"]},
  "context": {"type": "string", "enum": ["isolated", "fork"]}}},
"SessionsSpawnAnswer": {"type": "object", "required": ["status", "runId", "childSessionKey"], "properties": {
  "status": {"const": "accepted"}, "runId": {"type": "string"}, "childSessionKey": {"type": "string"}}},
"SessionsYieldParams": {"type": "object", "additionalProperties": false, "properties": {"message": {"type": "string"}}},
"SessionsYieldAnswer": {"type": "object", "required": ["status"], "properties": {
  "status": {"const": "yielded"}, "message": {"type": "string"}, "waitingFor": {"type": "integer"}}},
"SubagentsParams": {"type": "object", "additionalProperties": false, "properties": {
  "action": {"type": "string", "enum": ["list", "steer", "kill"]},
  "target": {"type": "string", "description": "1-based index, label, run id or session key; all (kill only)."},
  "message": {"type": "string", "maxLength": 4000},
  "recentMinutes": {"type": "integer", "minimum": 1, "maximum": 1440}}},
"SubagentRow": {"type": "object", "required": ["index", "runId", "sessionKey", "task", "status", "runtime", "createdAt", "runtimeMs"], "description": "One child run in a subagents list answer.", "properties": {
  "index": {"type": "integer", "minimum": 1, "description": "1-based, across active then recent: a steer or kill target."},
  "runId": {"type": "string"}, "sessionKey": {"type": "string", "description": "The child session."}, "label": {"type": "string"},
  "task": {"type": "string", "description": "The spawn task, cut to 200 bytes (then ending in an ellipsis)."},
  "status": {"type": "string", "description": "The run's status: running, or how it ended."},
  "runtime": {"type": "string", "enum": ["subagent", "acp"]}, "model": {"type": "string"},
  "createdAt": {"type": "integer"}, "endedAt": {"type": "integer"},
  "runtimeMs": {"type": "integer", "description": "Until it ended, or until now while it runs."}}},
"SubagentsAnswer": {"type": "object", "required": ["status"], "description": "list: status ok, action, requesterSessionKey, total, active, recent, text. steer: status accepted (with deliveryId) or rate_limited (with error), action, runId, sessionKey. kill: status ok, action, killed, text, and runId and sessionKey for one target. steer or kill of a child that is not running: status done, action, runId, sessionKey, text.", "properties": {
  "status": {"type": "string", "enum": ["ok", "accepted", "rate_limited", "done"]}, "action": {"type": "string", "enum": ["list", "steer", "kill"]}, "text": {"type": "string"},
  "requesterSessionKey": {"type": "string", "description": "list: the caller, whose children are listed."},
  "runId": {"type": "string"}, "sessionKey": {"type": "string"}, "killed": {"type": "integer", "minimum": 0},
  "active": {"type": "array", "items": {"$ref": "#/components/schemas/SubagentRow"}, "description": "list: the running children, oldest first."},
  "recent": {"type": "array", "items": {"$ref": "#/components/schemas/SubagentRow"}, "description": "list: the children that ended within recentMinutes, newest first."},
  "total": {"type": "integer", "minimum": 0},
  "deliveryId": {"type": "integer"}, "error": {"type": "string"}}},
"ConsoleAccess": {"type": "object", "required": ["tokenRequired"], "properties": {
  "tokenRequired": {"type": "boolean", "description": "false: every request is answered without a token (a loopback daemon started without one)."}}},
"ConsolePulse": {"type": "object", "required": ["lastSequence", "wakesSent", "noticesOpened", "pendingNotices", "cluster"], "properties": {
  "lastSequence": {"type": "integer", "minimum": 0, "description": "The engine's highest sequence: any write moves it."},
  "wakesSent": {"type": "integer", "minimum": 0, "description": "Wakes sent since the daemon started."},
  "noticesOpened": {"type": "integer", "minimum": 0, "description": "Notices opened since the daemon started."},
  "pendingNotices": {"type": "integer", "minimum": 0},
  "cluster": {"type": "boolean", "description": "serve --cluster: GET /v1/cluster/status answers."},
  "writeError": {"type": "string", "description": "Why writes are refused (a full disk), when they are."}}},
"ConsoleSession": {"type": "object", "required": ["sessionKey", "agentId", "sandboxed", "visibility", "stateVersion", "lastEvent", "run"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"},
  "parentSessionKey": {"type": "string", "description": "The spawner, from the registry: the tree's edge."},
  "kind": {"type": "string"}, "label": {"type": "string"}, "displayName": {"type": "string"}, "channel": {"type": "string"},
  "sandboxed": {"type": "boolean"},
  "visibility": {"type": "string", "enum": ["self", "tree", "agent", "all"], "description": "What the session's tools may see: the configured visibility, clamped to tree when sandboxed."},
  "stateVersion": {"type": "integer", "minimum": 0},
  "lastEvent": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["sequence", "kind", "occurredAt", "summary"], "properties": {
    "sequence": {"type": "integer"}, "kind": {"type": "string"}, "occurredAt": {"type": "integer"}, "summary": {"type": "string"}}}],
    "description": "The newest event, null when there is none or it was pruned."},
  "run": {"oneOf": [{"type": "null"}, {"type": "object", "required": ["runId", "kind", "status"], "properties": {
    "runId": {"type": "string"}, "kind": {"type": "string"}, "status": {"type": "string"}}}],
    "description": "The running run whose target the session is, else the spawn run that made it (status running, done, failed, killed or timeout)."},
  "updatedAt": {"type": "integer"}}},
"ConsoleSessions": {"type": "object", "required": ["sessions", "truncated"], "properties": {
  "sessions": {"type": "array", "items": {"$ref": "#/components/schemas/ConsoleSession"}},
  "truncated": {"type": "boolean", "description": "More sessions are registered than limit."}}},
"ConsoleCursor": {"type": "object", "required": ["lastSeen", "notified", "material", "updatedAt", "pending", "lag", "lagTruncated", "notice"], "properties": {
  "lastSeen": {"type": "integer", "description": "L"}, "notified": {"type": "integer", "description": "N"}, "material": {"type": "integer", "description": "M"},
  "updatedAt": {"type": "integer"}, "pending": {"type": "boolean", "description": "N > L: a notice is pending."},
  "lag": {"type": "integer", "minimum": 0, "description": "The target's events after lastSeen, at most 200."},
  "lagTruncated": {"type": "boolean"},
  "notice": {"oneOf": [{"type": "string"}, {"type": "null"}], "description": "The pending notice's exact text."},
  "watcher": {"type": "string"}, "lastWake": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/ConsoleWake"}]},
  "target": {"type": "string"}, "targetAgentId": {"type": "string"}, "stateVersion": {"type": "integer"}}},
"ConsoleWake": {"type": "object", "required": ["reason", "at"], "properties": {
  "reason": {"type": "string"}, "at": {"type": "integer"}}},
"ConsoleLinks": {"type": "object", "required": ["sessionKey", "agentId", "stateVersion", "watchers", "targets", "notices", "lastWake"], "properties": {
  "sessionKey": {"type": "string"}, "agentId": {"type": "string"}, "stateVersion": {"type": "integer"},
  "watchers": {"type": "array", "items": {"$ref": "#/components/schemas/ConsoleCursor"}, "description": "The cursors on this session, with watcher and lastWake."},
  "targets": {"type": "array", "items": {"$ref": "#/components/schemas/ConsoleCursor"}, "description": "The cursors this session holds, with target, targetAgentId and the target's stateVersion."},
  "notices": {"type": "array", "items": {"$ref": "#/components/schemas/Notice"}, "description": "This session's pending notices as a watcher."},
  "lastWake": {"oneOf": [{"type": "null"}, {"$ref": "#/components/schemas/ConsoleWake"}], "description": "This session's newest wake since the daemon started."}}},
"McpMessage": {"type": "object", "required": ["jsonrpc"], "description": "One JSON-RPC 2.0 message of the Model Context Protocol: a request (method, id, params), a notification (method, params) or a response (id, result or error). A batch (an array) is refused.", "properties": {
  "jsonrpc": {"const": "2.0"}, "id": {"oneOf": [{"type": "string"}, {"type": "integer"}]}, "method": {"type": "string"},
  "params": {"type": "object"}, "result": {"type": "object"},
  "error": {"type": "object", "required": ["code", "message"], "properties": {"code": {"type": "integer"}, "message": {"type": "string"}, "data": {}}}}},
"PartitionRole": {"type": "string", "enum": ["standby", "switching", "owner", "moved"], "description": "A node's role in its partition (docs/cluster-internals.md, \"Fencing and `statewatch takeover --partition p`\")."},
"ClusterStatus": {"type": "object", "required": ["partition", "role", "epoch", "position", "checkpointPosition"], "properties": {
  "partition": {"type": "integer", "minimum": 0}, "role": {"$ref": "#/components/schemas/PartitionRole"},
  "epoch": {"type": "integer", "minimum": 0, "description": "The owner's epoch this node knows (0: no owner has fenced the stream yet)."},
  "position": {"type": "integer", "minimum": 0, "description": "The stream position applied here."},
  "takenOverAt": {"type": "integer", "description": "An owner's: the stream position of its fence."},
  "movedReason": {"type": "string", "description": "A moved node's: why it was fenced out."},
  "checkpointPosition": {"type": "integer", "minimum": 0, "description": "The last cluster checkpoint this node wrote or restored (0: none since it started)."}}},
"ClusterDigest": {"type": "object", "required": ["partition", "role", "position", "digest", "bytes"], "properties": {
  "partition": {"type": "integer", "minimum": 0}, "role": {"$ref": "#/components/schemas/PartitionRole"},
  "position": {"type": "integer", "minimum": 0, "description": "The stream position the export was read at."},
  "digest": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of GET /v1/export's body, in hex."},
  "bytes": {"type": "integer", "minimum": 0, "description": "The export's length."}}},
"TakeoverRequest": {"type": "object", "additionalProperties": false, "properties": {
  "partition": {"type": "integer", "minimum": 0, "description": "When given, the partition this node serves."}}},
"TakeoverAnswer": {"type": "object", "required": ["partition", "role", "epoch", "position"], "properties": {
  "partition": {"type": "integer", "minimum": 0}, "role": {"const": "owner"},
  "epoch": {"type": "integer", "minimum": 1, "description": "The new owner's epoch."},
  "position": {"type": "integer", "minimum": 0, "description": "The stream position of the new owner's fence."}}}
})json";
}

}  // namespace statewatch::server

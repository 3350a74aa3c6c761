// The route table's rows and the path-template matcher.
#include "server/route_table.h"

#include "server/console_handlers.h"
#include "server/as_of_handlers.h"
#include "server/handlers.h"
#include "server/mcp_server.h"
#include "server/url.h"
#include "server/webhook_handlers.h"

namespace statewatch::server {
namespace {

constexpr const char* kJson = "application/json";
// The scope a caller's token needs (config/access_tokens.h): reads need kRead, routes that
// change state kWrite, maintenance and cluster routes kAdmin; kPublic needs no token.
constexpr auth::Scope kPublic = auth::Scope::kPublic;
constexpr auth::Scope kRead = auth::Scope::kRead;
constexpr auth::Scope kWrite = auth::Scope::kWrite;
constexpr auth::Scope kAdmin = auth::Scope::kAdmin;
constexpr const char* kString = R"({"type":"string"})";

// Parameters shared by several rows.
const RouteParam kCallerKey{"X-Session-Key", "header", true, kString,
                            "The calling session's key (the requester of the tool call)."};
const RouteParam kCallerAgent{"X-Agent-Id", "header", false, kString,
                              "The calling session's agent when X-Session-Key is a bare key "
                              "(default main)."};
const RouteParam kTraceparent{"traceparent", "header", false, kString,
                              "W3C Trace Context of the write (00-<trace-id>-<parent-id>-"
                              "<flags>): stored with the events it records, carried by the "
                              "deliveries it causes; an invalid one is ignored "
                              "(docs/guards.md)."};
const RouteParam kSessionKey{"key", "path", true, kString,
                             "A session key, percent-encoded (agent:main:main needs no "
                             "escaping)."};
const RouteParam kAgentQuery{"agentId", "query", false, kString,
                             "The agent of a bare session key (else X-Agent-Id, else main)."};

// ---- adapters from a RouteMatch to the handlers of handlers.h ------------------------------

// Every tool goes through SessionMessaging::CallTool and the caller's tool policy: a leaf
// sub-agent gets no session tool unless tools.subagents.tools.allow gives it one.
template <const char* kTool>
ApiResponse MessagingTool(const HandlerContext& ctx, const ApiRequest& req, const RouteMatch&) {
  return HandleMessagingTool(ctx, kTool, req);
}
constexpr char kSessionStatus[] = "session_status";
constexpr char kSessionsList[] = "sessions_list";
constexpr char kSessionsHistory[] = "sessions_history";
constexpr char kSessionsSend[] = "sessions_send";
constexpr char kSessionsSpawn[] = "sessions_spawn";
constexpr char kSessionsYield[] = "sessions_yield";
constexpr char kSubagents[] = "subagents";

ApiResponse UpgradeRequired(const ApiRequest& req) {
  Target t = SplitTarget(req.target);
  return Api::Error(426, "upgrade_required",
                    "GET " + std::string(t.path) +
                        " is a WebSocket stream: send Connection: Upgrade and Upgrade: websocket");
}

// The cluster-only rows' handler: MatchRoute returns those rows only when a gate is installed
// (RouteScope::kCluster), and the gate answers them.
ApiResponse AnswerCluster(ClusterRoute route, const HandlerContext& ctx, const ApiRequest& req) {
  if (ctx.services.gate == nullptr) {  // called past the router: a single node's 404
    return Api::Error(404, "not_found",
                      "no route for " + std::string(req.method) + " " +
                          std::string(SplitTarget(req.target).path));
  }
  return ctx.services.gate->AnswerClusterRoute(route, ctx, req);
}

using M = const RouteMatch&;
using C = const HandlerContext&;
using R = const ApiRequest&;

// The rows only `serve --cluster` answers (docs/cluster-internals.md,
// "`statewatch serve --cluster … --partition p --role owner|standby`"), in every role: a
// standby and a fenced-out owner answer them too.
void AddClusterRoutes(std::vector<RouteSpec>& r) {
  const std::size_t first = r.size();
  r.push_back({"GET", "/v1/cluster/status", "clusterStatus", "cluster",
               "This node's role in its partition: owner, standby, switching or moved, with "
               "the owner's epoch and the stream position applied here.",
               "", {}, nullptr, false, "ClusterStatus", kJson, {404}, false, kAdmin,
               [](C c, R q, M) { return AnswerCluster(ClusterRoute::kStatus, c, q); }});
  r.push_back({"GET", "/v1/cluster/digest", "clusterDigest", "cluster",
               "The SHA-256 of GET /v1/export's body, read at one stream position, to compare "
               "two nodes of a partition without shipping the export.",
               "An owner's position may move while it reads: compare digests when no writer "
               "runs. A standby reads between two folds.",
               {}, nullptr, false, "ClusterDigest", kJson, {404, 503}, false, kAdmin,
               [](C c, R q, M) { return AnswerCluster(ClusterRoute::kDigest, c, q); }});
  r.push_back({"POST", "/v1/cluster/takeover", "clusterTakeover", "cluster",
               "Turns this standby into the partition's owner (a newer epoch fences the old "
               "owner out); 409 on a node that is not a standby.",
               "An empty body is {}; partition, when given, must be the one this node serves.",
               {}, "TakeoverRequest", false, "TakeoverAnswer", kJson, {400, 404, 409, 503},
               false, kAdmin,
               [](C c, R q, M) { return AnswerCluster(ClusterRoute::kTakeover, c, q); }});
  for (std::size_t i = first; i < r.size(); ++i) r[i].cluster_only = true;
}

// The operator console (server/console_handlers.h, docs/console.md): its files are public,
// the data it reads needs a read token like the API's.
void AddConsoleRoutes(std::vector<RouteSpec>& r) {
  r.push_back({"GET", "/console", "console", "console",
               "The operator console: a page that shows the session tree, watchers and "
               "cursors, timelines and health, from the routes below (docs/console.md).",
               "Public: the page holds no data; it asks for a token and sends it as a bearer "
               "credential. Served with a Content-Security-Policy (script-src 'self', no inline "
               "script) and X-Content-Type-Options: nosniff.",
               {}, nullptr, false, nullptr, "text/html", {}, false, kPublic,
               [](C, R, M) { return HandleConsoleFile("index.html"); }});
  r.push_back({"GET", "/console/{file}", "consoleFile", "console",
               "A file of the console page (app.js and its modules, app.css, icon.svg), "
               "compiled into the binary.",
               "Its Content-Type follows the file (text/javascript, text/css, image/svg+xml).",
               {{"file", "path", true, kString, "The file's name."}}, nullptr, false, nullptr,
               "text/javascript", {404}, false, kPublic,
               [](C, R, M m) { return HandleConsoleFile(m.params[0]); }});
  r.push_back({"GET", "/v1/console/access", "consoleAccess", "console",
               "Whether this daemon requires a bearer token: the page connects at once when it "
               "does not, and asks for one when it does.",
               "Public: it says no more than a 401 would.", {}, nullptr, false, "ConsoleAccess",
               kJson, {}, false, kPublic, [](C c, R, M) { return HandleConsoleAccess(c); }});
  r.push_back({"GET", "/v1/console/pulse", "consolePulse", "console",
               "The engine's last sequence and its wake and notice counters: one cheap read the "
               "console polls to notice any change.",
               "", {}, nullptr, false, "ConsolePulse", kJson, {503}, false, kRead,
               [](C c, R, M) { return HandleConsolePulse(c); }});
  r.push_back({"GET", "/v1/console/sessions", "consoleSessions", "console",
               "Every registered session with its parent, state version, last event, run state "
               "and visibility, sorted by agent and key.",
               "The operator's view: no caller, no visibility check. Its cost grows with the "
               "registered sessions (a point read each), bounded by limit.",
               {{"limit", "query", false, R"({"type":"integer","minimum":1,"maximum":10000})",
                 "At most this many sessions (default 1000); truncated says more exist."}},
               nullptr, false, "ConsoleSessions", kJson, {400, 503}, false, kRead,
               [](C c, R, M m) { return HandleConsoleSessions(c, m.query); }});
  r.push_back({"GET", "/v1/console/sessions/{key}/links", "consoleLinks", "console",
               "Who watches the session and whom it watches: each cursor's lastSeen, notified "
               "and material marks, its lag, its pending notice's exact text and the watcher's "
               "last wake.",
               "lag counts the target's events after lastSeen (at most 200; lagTruncated past "
               "that). Targets are found among the registered sessions and the watcher's "
               "pending notices. lastWake is the newest wake since the daemon started.",
               {kSessionKey, kAgentQuery}, nullptr, false, "ConsoleLinks", kJson, {400, 503},
               false, kRead,
               [](C c, R q, M m) { return HandleConsoleLinks(c, q, m.params[0], m.query); }});
}

// The MCP endpoint (server/mcp_server.h, docs/mcp.md): JSON-RPC over Streamable HTTP, not
// REST. Each row needs a read token; a tool called through it needs its own row's scope.
ApiResponse AnswerMcp(const HandlerContext& ctx, const ApiRequest& req) {
  if (ctx.services.mcp == nullptr) {
    return Api::Error(404, "not_found", "this daemon has no MCP endpoint");
  }
  return ctx.services.mcp->Handle(req);
}

void AddMcpRoutes(std::vector<RouteSpec>& r) {
  const RouteParam mcp_session{"Mcp-Session-Id", "header", false, kString,
                               "The MCP session, as initialize answered it (every request "
                               "but initialize)."};
  const RouteParam mcp_version{"MCP-Protocol-Version", "header", false, kString,
                               "The negotiated MCP version (2025-11-25, 2025-06-18, "
                               "2025-03-26)."};
  const RouteParam mcp_caller{"X-Session-Key", "header", false, kString,
                              "On initialize: the MCP session's caller, the session its tool "
                              "calls and subscriptions act as (later requests may name "
                              "another)."};
  const char* kMcpDescription =
      "Model Context Protocol (2025-11-25), Streamable HTTP transport: JSON-RPC, not REST; "
      "docs/mcp.md describes the methods (tools/list, tools/call, resources/*).";
  r.push_back({"POST", "/mcp", "mcpPost", "mcp",
               "One MCP JSON-RPC message: answered as application/json (202 without a body for "
               "a notification); initialize answers the Mcp-Session-Id header.",
               kMcpDescription, {mcp_session, mcp_version, mcp_caller, kCallerAgent},
               "McpMessage", true, "McpMessage", kJson, {400, 404}, false, kRead,
               [](C c, R q, M) { return AnswerMcp(c, q); }});
  r.push_back({"GET", "/mcp", "mcpStream", "mcp",
               "The MCP session's server-to-client stream (Server-Sent Events): "
               "notifications/resources/updated for its subscriptions.",
               kMcpDescription, {mcp_session, mcp_version}, nullptr, false, nullptr,
               "text/event-stream", {400, 404, 406}, false, kRead,
               [](C c, R q, M) { return AnswerMcp(c, q); }});
  r.push_back({"DELETE", "/mcp", "mcpDelete", "mcp",
               "Ends an MCP session (its subscriptions end; the watches stay).",
               kMcpDescription, {mcp_session, mcp_version}, nullptr, false, "Deleted", kJson,
               {400, 404}, false, kRead, [](C c, R q, M) { return AnswerMcp(c, q); }});
}

// The table itself: one push_back per row, in the order the document lists them. Long
// because it is data, not logic.
std::vector<RouteSpec> BuildRoutes() {
  // Tool rows differ only in name, schemas, errors and handler.
  auto tool = [](const char* name, auth::Scope scope, const char* summary, const char* params,
                 const char* answer, std::vector<int> errors, RouteHandler handle) {
    return RouteSpec{"POST",  std::string("/v1/tools/") + name,
                     name,    "tools",
                     summary, "The caller is the session in X-Session-Key.",
                     {kCallerKey, kCallerAgent, kTraceparent},
                     params,  false,
                     answer,  kJson,
                     std::move(errors),
                     false,   scope,
                     handle};
  };
  std::vector<RouteSpec> r;
  r.push_back(tool("session_status", kRead,
                   "A session's status card; with changesSince, the events after it and "
                   "whether history was pruned past it (historyGap).",
                   "SessionStatusParams", "SessionStatusAnswer", {400, 403, 404, 503},
                   MessagingTool<kSessionStatus>));
  r.push_back(tool("sessions_list", kRead, "The sessions the caller may see, newest first.",
                   "SessionsListParams", "SessionsListAnswer", {400, 403, 503},
                   MessagingTool<kSessionsList>));
  r.push_back(tool("sessions_history", kRead, "A bounded, cleaned view of a session's transcript.",
                   "SessionsHistoryParams", "SessionsHistoryAnswer", {400, 403, 404, 503},
                   MessagingTool<kSessionsHistory>));
  r.push_back(tool("sessions_send", kWrite,
                   "Sends a message to another session; with timeoutSeconds > 0 the answer "
                   "waits for the reply.",
                   "SessionsSendParams", "SessionsSendAnswer", {400, 403, 404, 429, 503},
                   MessagingTool<kSessionsSend>));
  r.push_back(tool("sessions_spawn", kWrite, "Starts a sub-agent run; answers at once.",
                   "SessionsSpawnParams", "SessionsSpawnAnswer", {400, 403, 429, 503},
                   MessagingTool<kSessionsSpawn>));
  r.push_back(tool("sessions_yield", kWrite, "Ends the caller's turn until its children report back.",
                   "SessionsYieldParams", "SessionsYieldAnswer", {400, 403, 503},
                   MessagingTool<kSessionsYield>));
  r.push_back(tool("subagents", kWrite, "Lists, steers or kills the caller's sub-agent runs.",
                   "SubagentsParams", "SubagentsAnswer", {400, 403, 404, 503},
                   MessagingTool<kSubagents>));

  r.push_back({"POST", "/v1/events", "recordEvents", "journal",
               "Records one event or an array of events in one atomic batch.",
               "An event whose dedupeKey is already present comes back as the stored event "
               "with deduplicated: true. watchers names producer-passed watchers.",
               {kTraceparent}, "RecordEventsBody", true, "RecordEventsAnswer", kJson,
               {400, 413, 503}, false, kWrite,
               [](C c, R q, M) { return HandleRecordEvents(c, q); }});
  r.push_back({"PUT", "/v1/sessions/{key}", "upsertSession", "sessions",
               "Creates or updates a session's registry entry; absent fields keep their value.",
               "", {kSessionKey, kAgentQuery}, "SessionUpsert", false, "SessionAnswer", kJson,
               {400, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleUpsertSession(c, q, m.params[0], m.query); }});
  r.push_back({"DELETE", "/v1/sessions/{key}", "deleteSession", "sessions",
               "Deletes a session: its events, head, registry entry and every cursor naming it.",
               "", {kSessionKey, kAgentQuery}, nullptr, false, "Deleted", kJson, {400, 503},
               false, kWrite,
               [](C c, R q, M m) { return HandleDeleteSession(c, q, m.params[0], m.query); }});
  r.push_back({"POST", "/v1/sessions/{key}/reset", "resetWatcher", "sessions",
               "Removes every cursor the session holds as a watcher.", "",
               {kSessionKey, kAgentQuery}, nullptr, false, "Reset", kJson, {400, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleResetSession(c, q, m.params[0], m.query); }});
  r.push_back({"POST", "/v1/sessions/{key}/messages", "appendMessages", "sessions",
               "Appends messages to the session's transcript (what sessions_history serves).",
               "", {kSessionKey, kAgentQuery}, "TranscriptAppend", true, "Appended", kJson,
               {400, 413, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleAppendMessages(c, q, m.params[0], m.query); }});
  r.push_back({"GET", "/v1/sessions/{key}/state", "sessionState", "sessions",
               "A session's state version; with changesSince, the events after it "
               "(as `statewatch status`).",
               "Unlike the session_status tool this needs no caller and checks no visibility: "
               "it is the operator's view.",
               {kSessionKey, kAgentQuery,
                {"changesSince", "query", false, kString, "As session_status's changesSince."},
                {"limit", "query", false, R"({"type":"integer"})",
                 "At most this many events, clamped to 1..200 (default 200)."}},
               nullptr, false, "SessionState", kJson, {400, 503}, false, kRead,
               [](C c, R q, M m) { return HandleSessionState(c, q, m.params[0], m.query); }});
  r.push_back({"GET", "/v1/sessions/{key}/status", "sessionStatusAt", "sessions",
               "A session's status now, or with asOf as it was right after that sequence "
               "(post-mortems): state version, changes, cursors both ways, pending notices.",
               "Rebuilt from the checkpoint and the retained log by the replay folds; the "
               "operator's view (no caller, no visibility check). 410 as_of_unavailable when "
               "asOf is before earliestAsOf (named in the message).",
               {kSessionKey, kAgentQuery,
                {"asOf", "query", false, R"({"type":"integer","minimum":0})",
                 "The sequence to answer as of (default: now)."},
                {"changesSince", "query", false, kString,
                 "The events after it, up to asOf (default 0)."},
                {"limit", "query", false, R"({"type":"integer"})",
                 "At most this many events, clamped to 1..200 (default 200)."}},
               nullptr, false, "SessionStatusAt", kJson, {400, 410, 503}, false, kRead,
               [](C c, R q, M m) { return HandleSessionStatusAt(c, q, m.params[0], m.query); }});
  r.push_back({"POST", "/v1/versions", "versions", "sessions",
               "State versions of several sessions in one lookup (as `statewatch versions`).", "",
               {}, "VersionsRequest", true, "VersionsAnswer", kJson, {400, 503}, false, kRead,
               [](C c, R q, M) { return HandleVersions(c, q); }});
  r.push_back({"POST", "/v1/watches", "watch", "notices",
               "Registers a watcher on a target at the target's head (no notice for earlier "
               "history); an array registers many in one atomic step.",
               "A refused registration (the watcher is the target, or a key is not "
               "agent-scoped) answers watched: false. In an array it refuses the whole array "
               "(400, naming the item) and nothing is registered; an array answers how many "
               "pairs are watched and how many cursors were created.",
               {}, "WatchBody", true, "WatchAnswer", kJson, {400, 503}, false, kWrite,
               [](C c, R q, M) { return HandleWatch(c, q); }});
  r.push_back({"POST", "/v1/watches/remove", "unwatch", "notices",
               "Removes watches: each named pair's cursor and its pending notice; an array "
               "removes many in one atomic step.",
               "Each item is checked as a registration is: one that a registration would "
               "refuse (the watcher is the target, or a key is not agent-scoped) refuses the "
               "whole body (400, naming the item) and nothing is removed. A pair without a "
               "cursor is counted and left alone. Answers how many distinct pairs were named "
               "and how many cursors were removed.",
               {}, "WatchBody", true, "UnwatchAnswer", kJson, {400, 503}, false, kWrite,
               [](C c, R q, M) { return HandleUnwatch(c, q); }});
  r.push_back({"GET", "/v1/notices", "peekNotices", "notices",
               "The watcher's pending notices, without acknowledging them.", "",
               {{"watcher", "query", true, kString, "The watcher's agent-scoped key."}},
               nullptr, false, "NoticesAnswer", kJson, {400, 503}, false, kRead,
               [](C c, R, M m) { return HandlePeekNotices(c, m.query); }});
  r.push_back({"POST", "/v1/notices/drain", "drainNotices", "notices",
               "The watcher's pending notices, acknowledged: each cursor's lastSeen moves to "
               "its notified mark, and a notice reopens only for changes since.",
               "", {}, "DrainRequest", true, "NoticesAnswer", kJson, {400, 503}, false, kWrite,
               [](C c, R q, M) { return HandleDrainNotices(c, q); }});
  r.push_back({"GET", "/v1/cursors", "cursor", "notices",
               "One cursor's positions (as `statewatch cursor`); 404 when there is none.", "",
               {{"watcher", "query", true, kString, "The watcher's key."},
                {"target", "query", true, kString, "The target's key."},
                {"targetAgentId", "query", false, kString, "The agent of a bare target key."}},
               nullptr, false, "Cursor", kJson, {400, 404, 503}, false, kRead,
               [](C c, R, M m) { return HandleCursor(c, m.query); }});
  r.push_back({"POST", "/v1/sweep", "sweep", "notices",
               "Runs the restart sweep now: notices reopen for cursors with unseen changes.", "",
               {}, nullptr, false, "SweepAnswer", kJson, {503}, false, kAdmin,
               [](C c, R, M) { return HandleSweep(c); }});
  r.push_back({"GET", "/v1/wakes", "wakes", "streams",
               "WebSocket: one Wake message per wake (all watchers, or ?watcher=).",
               "Answers 426 without a WebSocket upgrade.",
               {{"watcher", "query", false, kString, "Only this watcher's wakes."}}, nullptr,
               false, "Wake", kJson, {400, 426}, true, kRead,
               [](C, R q, M) { return UpgradeRequired(q); }});
  r.push_back({"GET", "/v1/deliveries", "deliveries", "streams",
               "WebSocket: one Delivery message per delivery; the unacknowledged ones are "
               "offered again on every (re)connect.",
               "Answers 426 without a WebSocket upgrade.",
               {{"agentId", "query", false, kString, "Only deliveries to this agent."}},
               nullptr, false, "Delivery", kJson, {400, 426}, true, kRead,
               [](C, R q, M) { return UpgradeRequired(q); }});
  r.push_back({"POST", "/v1/deliveries/{id}/ack", "ackDelivery", "gateway",
               "Acknowledges a delivery: it is not offered again.", "",
               {{"id", "path", true, R"({"type":"integer","minimum":1})", "The deliveryId."}},
               nullptr, false, "AckAnswer", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R, M m) { return HandleDeliveryAck(c, m.params[0]); }});
  r.push_back({"POST", "/v1/runs/{runId}/reply", "replyRun", "gateway",
               "The reply of the run's session to the message it was delivered.", "",
               {{"runId", "path", true, kString, "The run id of the delivery."}}, "RunReply",
               true, "RunUpdate", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleRunReply(c, q, m.params[0]); }});
  r.push_back({"POST", "/v1/runs/{runId}/finish", "finishRun", "gateway",
               "The end of a run (ok, error, timeout or cancelled), with its result.", "",
               {{"runId", "path", true, kString, "The run id of the delivery."}}, "RunFinish",
               true, "RunUpdate", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleRunFinish(c, q, m.params[0]); }});
  r.push_back({"GET", "/v1/upstream-links", "listUpstreamLinks", "upstream",
               "Every upstream link.", "", {}, nullptr, false, "UpstreamLinks", kJson, {503},
               false, kRead, [](C c, R, M) { return HandleListLinks(c); }});
  r.push_back({"POST", "/v1/upstream-links", "putUpstreamLink", "upstream",
               "Creates or refreshes a session's upstream link.",
               "Without marker a new link starts at the source's current end; the same source "
               "keeps its marker on refresh, a changed source resets it.",
               {}, "UpstreamLinkInput", true, "UpstreamLinkAnswer", kJson, {400, 503}, false, kWrite, [](C c, R q, M) { return HandlePutLink(c, q); }});
  r.push_back({"DELETE", "/v1/upstream-links/{key}", "deleteUpstreamLink", "upstream",
               "Removes a session's upstream link.", "", {kSessionKey, kAgentQuery}, nullptr,
               false, "Deleted", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R q, M m) { return HandleDeleteLink(c, q, m.params[0], m.query); }});
  // Webhooks (docs/webhooks.md). Registering needs write, not admin: the gateway that
  // drains a watcher's notices registers where they are pushed, and a write token can read
  // every notice already; the URL policy (no private networks, https) bounds where the
  // daemon may be sent.
  r.push_back({"POST", "/v1/webhooks", "putWebhook", "webhooks",
               "Registers (or replaces) the webhook of a watcher: its notices are POSTed there.",
               "The URL must be https:// (http:// only to loopback) and not in a private network "
               "unless the webhooks section allows it; the secret keys the HMAC-SHA256 "
               "signature and is never shown again.",
               {}, "WebhookInput", true, "WebhookAnswer", kJson, {400, 503}, false, kWrite,
               [](C c, R q, M) { return HandlePutWebhook(c, q); }});
  r.push_back({"GET", "/v1/webhooks", "listWebhooks", "webhooks",
               "Every registered webhook (never its secret).", "", {}, nullptr, false,
               "Webhooks", kJson, {503}, false, kRead,
               [](C c, R, M) { return HandleListWebhooks(c); }});
  r.push_back({"GET", "/v1/webhooks/dead", "listDeadLetters", "webhooks",
               "The dead letters: deliveries whose retries ran out, with their last error.", "",
               {}, nullptr, false, "DeadLetters", kJson, {503}, false, kRead,
               [](C c, R, M) { return HandleListDeadLetters(c); }});
  r.push_back({"POST", "/v1/webhooks/dead/retry", "retryDeadLetter", "webhooks",
               "Moves a dead letter back to the outbox: delivered again, same key and body.",
               "", {}, "DeadLetterRef", true, "DeadLetterRetried", kJson, {400, 404, 503}, false,
               kWrite, [](C c, R q, M) { return HandleRetryDeadLetter(c, q); }});
  r.push_back({"POST", "/v1/webhooks/dead/drop", "dropDeadLetter", "webhooks",
               "Removes a dead letter for good.", "", {}, "DeadLetterRef", true,
               "DeadLetterDropped", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R q, M) { return HandleDropDeadLetter(c, q); }});
  r.push_back({"DELETE", "/v1/webhooks/{watcher}", "deleteWebhook", "webhooks",
               "Removes a watcher's webhook and its undelivered outbox rows (dead letters stay).",
               "", {{"watcher", "path", true, kString, "The watcher's session key, percent-encoded."}},
               nullptr, false, "Deleted", kJson, {400, 404, 503}, false, kWrite,
               [](C c, R, M m) { return HandleDeleteWebhook(c, m.params[0]); }});
  r.push_back({"POST", "/v1/prune", "prune", "maintenance",
               "Runs retention now: rows past the age or row cap, idle cursors.", "", {},
               nullptr, false, "PruneStats", kJson, {503}, false, kAdmin,
               [](C c, R, M) { return HandlePrune(c); }});
  r.push_back({"POST", "/v1/backup", "backup", "maintenance",
               "Writes a consistent copy of the database (a RocksDB checkpoint) to a new "
               "directory on the daemon's machine, while the daemon keeps serving.",
               "", {}, "BackupRequest", true, "BackupAnswer", kJson, {400, 503}, false, kAdmin,
               [](C c, R q, M) { return HandleBackup(c, q); }});
  r.push_back({"GET", "/v1/verify", "verify", "maintenance",
               "Rebuilds every projection from the snapshot and the log and diffs it with the "
               "live one.",
               "", {}, nullptr, false, "VerifyReport", kJson, {503}, false, kAdmin,
               [](C c, R, M) { return HandleVerify(c); }});
  r.push_back({"POST", "/v1/rebuild", "rebuild", "maintenance",
               "Replaces the live projections with ones rebuilt from the snapshot and the log.",
               "", {}, nullptr, false, "VerifyReport", kJson, {503}, false, kAdmin,
               [](C c, R, M) { return HandleRebuild(c); }});
  r.push_back({"GET", "/v1/export", "export", "maintenance",
               "Every retained journal event, one JSON document a line (as `statewatch "
               "export`); grouped by session, ascending within one.",
               "", {}, nullptr, false, "Event", "application/x-ndjson", {503}, false, kRead,
               [](C c, R, M) { return HandleExport(c); }});
  r.push_back({"GET", "/v1/stats", "stats", "maintenance",
               "Counts and bytes on disk (as `statewatch stats`).", "", {}, nullptr, false,
               "Stats", kJson, {503}, false, kRead, [](C c, R, M) { return HandleStats(c); }});
  r.push_back({"GET", "/v1/clock", "getClock", "maintenance", "The engine's clock.", "", {},
               nullptr, false, "Clock", kJson, {}, false, kRead,
               [](C c, R, M) { return HandleGetClock(c); }});
  r.push_back({"POST", "/v1/clock", "setClock", "maintenance",
               "Moves the manual clock forward (only with serve --manual-clock).",
               "Then times out due sessions_send waits, runs a due upstream tick and fires due "
               "wakes, before answering.",
               {}, "ClockSet", true, "Clock", kJson, {400, 404}, false, kAdmin,
               [](C c, R q, M) { return HandleSetClock(c, q); }});
  r.push_back({"GET", "/v1/openapi.json", "openapi", "maintenance",
               "This document.", "", {}, nullptr, false, "OpenApiDocument", kJson, {}, false, kRead, [](C c, R, M) { return HandleOpenApi(c); }});
  r.push_back({"GET", "/healthz", "healthz", "maintenance",
               "Liveness and version; needs no token.",
               "Always 200 while the daemon runs; \"degraded\" with writes \"refused\" while the "
               "engine refuses writes (a full disk): reads are still served.",
               {}, nullptr, false, "Health", kJson, {}, false, kPublic,
               [](C c, R, M) { return HandleHealthz(c); }});
  r.push_back({"GET", "/readyz", "readyz", "maintenance",
               "Readiness: whether this daemon should get traffic; needs no token.",
               "200 when storage takes writes (the engine is not degraded: no failed write, the "
               "disk not full); else 503 with the error envelope (code not_ready) and checks, "
               "naming what is not ready. In cluster mode a standby, a switching or a moved "
               "partition answers 503 too (standby, switching, partition_moved).",
               {}, nullptr, false, "Readiness", kJson, {503}, false, kPublic,
               [](C c, R, M) { return HandleReadyz(c); }});
  r.push_back({"GET", "/metrics", "metrics", "maintenance",
               "Prometheus text exposition (version 0.0.4).", "", {}, nullptr, false, nullptr,
               "text/plain; version=0.0.4; charset=utf-8", {}, false, kRead,
               [](C c, R, M) { return HandleMetrics(c); }});
  AddConsoleRoutes(r);
  AddMcpRoutes(r);
  AddClusterRoutes(r);
  return r;
}

std::vector<std::string_view> Segments(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t start = 1;  // after the leading '/'
  if (path.empty() || path[0] != '/') return out;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) slash = path.size();
    out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
  return out;
}

// Matches `segments` against one template; fills decoded parameters. A {param} segment must
// be non-empty.
bool MatchTemplate(const RouteSpec& spec, const std::vector<std::string_view>& segments,
                   RouteMatch* match, std::string* malformed) {
  std::vector<std::string_view> tmpl = Segments(spec.path);
  if (tmpl.size() != segments.size()) return false;
  std::vector<std::string> params;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    bool param = !tmpl[i].empty() && tmpl[i].front() == '{';
    if (!param) {
      if (tmpl[i] != segments[i]) return false;
      continue;
    }
    if (segments[i].empty()) return false;
    auto decoded = PercentDecode(segments[i], /*plus_is_space=*/false);
    if (!decoded) {
      *malformed = std::string(tmpl[i].substr(1, tmpl[i].size() - 2));
      return true;
    }
    params.push_back(std::move(*decoded));
  }
  match->params = std::move(params);
  return true;
}

// For each row, the methods of every row with the same path ("GET, POST"), in table order.
const std::vector<std::string>& AllowHeaders() {
  static const auto* allow = [] {
    const auto& routes = Routes();
    auto* out = new std::vector<std::string>(routes.size());
    for (std::size_t i = 0; i < routes.size(); ++i) {
      for (const RouteSpec& other : routes) {
        if (other.path != routes[i].path) continue;
        if (!(*out)[i].empty()) (*out)[i] += ", ";
        (*out)[i] += other.method;
      }
    }
    return out;
  }();
  return *allow;
}

}  // namespace

const std::vector<RouteSpec>& Routes() {
  static const auto* routes = new std::vector<RouteSpec>(BuildRoutes());
  return *routes;
}

std::string_view RouteLabel(std::size_t index) {
  const auto& routes = Routes();
  return index < routes.size() ? std::string_view(routes[index].path) : "unmatched";
}

RouteLookup MatchRoute(std::string_view method, std::string_view path, std::string_view query,
                       RouteScope scope) {
  RouteLookup out;
  std::vector<std::string_view> segments = Segments(path);
  const auto& routes = Routes();
  for (std::size_t i = 0; i < routes.size(); ++i) {
    if (routes[i].cluster_only && scope != RouteScope::kCluster) continue;
    RouteMatch match;
    std::string malformed;
    if (!MatchTemplate(routes[i], segments, &match, &malformed)) continue;
    if (!malformed.empty()) {
      out.malformed_param = malformed;
      out.path_route = i;
      return out;
    }
    if (method == routes[i].method) {
      out.route = i;
      out.match = std::move(match);
      out.match.query = query;
      return out;
    }
    if (!out.path_route) {
      out.path_route = i;
      out.allow = AllowHeaders()[i].c_str();
    }
  }
  return out;
}

}  // namespace statewatch::server

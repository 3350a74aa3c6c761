// The console's routes (server/console_handlers.h). Everything here reads; the console never
// changes state. The listings walk the session registry, so their cost grows with the number
// of registered sessions (bounded by ?limit=), never with the journal.
#include "server/console_handlers.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "codecs/json_codec.h"
#include "server/console_assets.h"
#include "server/url.h"
#include "server/wake_log.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "tools/session_activity.h"
#include "tools/visibility.h"

namespace statewatch::server {
namespace json = boost::json;

namespace {

// The console's documents: scripts only from the daemon itself and nothing inline, no
// plugin, no frame, no form target; data only from the daemon (connect-src 'self').
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// The lag counted for a cursor: events of the target after its lastSeen, read as one page
// of changesSince (the most a page holds); past it the answer says lagTruncated.
constexpr int kLagPage = 200;

constexpr int kDefaultSessionLimit = 1000;
constexpr int kMaxSessionLimit = 10000;

std::string CanonicalKey(const SessionName& name) {
  auto parsed = ParseSessionKey(name.session_key);
  return parsed.ok() ? parsed->canonical : name.session_key;
}

json::value WakeJson(const std::optional<Wake>& wake) {
  if (!wake) return nullptr;
  return json::object{{"reason", wake->reason}, {"at", wake->at_ms}};
}

std::optional<Wake> LastWake(const HandlerContext& ctx, const std::string& watcher) {
  if (ctx.services.wake_log == nullptr) return std::nullopt;
  return ctx.services.wake_log->Last(watcher);
}

// The session's newest event, when it is still retained.
Result<json::value> LastEventJson(const Engine& engine, const SessionName& name,
                                  Sequence version) {
  if (version == 0) return json::value(nullptr);
  auto page = engine.ChangesSince(name, version - 1, 1);
  if (!page.ok()) return page.status();
  if (page->events.empty()) return json::value(nullptr);
  const Event& e = page->events.back();
  return json::value(json::object{{"sequence", e.sequence},
                                  {"kind", e.kind},
                                  {"occurredAt", e.occurred_at_ms},
                                  {"summary", e.summary}});
}

json::value RunJson(const tools::RunIndex& runs, const SessionName& name) {
  const RunRecord* run = runs.ActiveRunOf(name);
  const char* status = nullptr;
  if (run == nullptr) {
    run = runs.SpawnRunOf(name);
    if (run != nullptr) status = tools::ListStatusOf(*run);
  } else {
    status = "running";
  }
  if (run == nullptr) return nullptr;
  return json::object{{"runId", run->run_id}, {"kind", run->kind}, {"status", status}};
}

Result<json::object> SessionRow(const HandlerContext& ctx, const tools::RunIndex& runs,
                                const SessionRecord& record) {
  auto version = ctx.engine.StateVersion(record.name);
  if (!version.ok()) return version.status();
  auto last = LastEventJson(ctx.engine, record.name, *version);
  if (!last.ok()) return last.status();
  json::object row;
  row["sessionKey"] = record.name.session_key;
  row["agentId"] = record.name.agent_id;
  if (record.parent_session_key) row["parentSessionKey"] = *record.parent_session_key;
  if (record.kind) row["kind"] = *record.kind;
  if (record.label) row["label"] = *record.label;
  if (record.display_name) row["displayName"] = *record.display_name;
  if (record.channel) row["channel"] = *record.channel;
  bool sandboxed = record.sandboxed.value_or(false);
  row["sandboxed"] = sandboxed;
  row["visibility"] = tools::VisibilityName(
      tools::EffectiveVisibility(ctx.options.tools.visibility, sandboxed));
  row["stateVersion"] = *version;
  row["lastEvent"] = std::move(*last);
  row["run"] = RunJson(runs, record.name);
  if (record.updated_at_ms) row["updatedAt"] = *record.updated_at_ms;
  return row;
}

// A cursor's positions, its lag behind the target and its pending notice's text.
Result<json::object> CursorRow(const Engine& engine, const SessionName& target,
                               const CursorState& cursor, const std::vector<Notice>& notices) {
  json::object row = tools::CursorToJson(cursor);
  row["pending"] = cursor.pending();
  auto page = engine.ChangesSince(target, cursor.last_seen, kLagPage);
  if (!page.ok()) return page.status();
  row["lag"] = page->events.size();
  row["lagTruncated"] = page->truncated;
  json::value notice = nullptr;
  std::string target_key = CanonicalKey(target);
  for (const Notice& n : notices) {
    if (CanonicalKey(n.target) == target_key) notice = json::value(n.text);
  }
  row["notice"] = std::move(notice);
  return row;
}

Result<json::array> WatchersJson(const HandlerContext& ctx, const SessionName& name) {
  auto watchers = ctx.engine.WatchersOf(name);
  if (!watchers.ok()) return watchers.status();
  std::sort(watchers->begin(), watchers->end());
  json::array out;
  for (const std::string& watcher : *watchers) {
    auto cursor = ctx.engine.Cursor(watcher, name);
    if (!cursor.ok()) return cursor.status();
    if (!cursor->has_value()) continue;  // removed between the two reads
    auto notices = ctx.engine.PendingNotices(watcher);
    if (!notices.ok()) return notices.status();
    auto row = CursorRow(ctx.engine, name, **cursor, *notices);
    if (!row.ok()) return row.status();
    (*row)["watcher"] = watcher;
    (*row)["lastWake"] = WakeJson(LastWake(ctx, watcher));
    out.push_back(std::move(*row));
  }
  return out;
}

// The targets `watcher` holds a cursor on: every registered session is asked (the engine
// indexes cursors by target), plus the targets of its pending notices.
Result<json::array> TargetsJson(const HandlerContext& ctx, const std::string& watcher,
                                const std::vector<Notice>& notices) {
  auto sessions = SessionTablesView(ctx.engine).ListSessions();
  if (!sessions.ok()) return sessions.status();
  std::map<std::string, SessionName> targets;  // by canonical key, for a stable order
  for (const SessionRecord& record : *sessions) {
    targets.emplace(CanonicalKey(record.name), record.name);
  }
  for (const Notice& n : notices) targets.emplace(CanonicalKey(n.target), n.target);
  json::array out;
  for (const auto& [key, target] : targets) {
    if (key == watcher) continue;
    auto cursor = ctx.engine.Cursor(watcher, target);
    if (!cursor.ok()) return cursor.status();
    if (!cursor->has_value()) continue;
    auto row = CursorRow(ctx.engine, target, **cursor, notices);
    if (!row.ok()) return row.status();
    auto version = ctx.engine.StateVersion(target);
    if (!version.ok()) return version.status();
    (*row)["target"] = target.session_key;
    (*row)["targetAgentId"] = target.agent_id;
    (*row)["stateVersion"] = *version;
    out.push_back(std::move(*row));
  }
  return out;
}

// ?limit=: 1..kMaxSessionLimit, default kDefaultSessionLimit.
bool ReadLimit(std::string_view query, int* limit, ApiResponse* error) {
  bool malformed = false;
  auto text = QueryParam(query, "limit", &malformed);
  if (malformed) {
    *error = Api::Error(400, "invalid_argument", "malformed percent-encoding in limit");
    return false;
  }
  if (!text) return true;
  int parsed = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, parsed);
  if (text->empty() || ec != std::errc() || ptr != end || parsed < 1 ||
      parsed > kMaxSessionLimit) {
    *error = Api::Error(400, "invalid_argument",
                        "limit must be an integer from 1 to " +
                            std::to_string(kMaxSessionLimit) + " (got \"" + *text + "\")");
    return false;
  }
  *limit = parsed;
  return true;
}

}  // namespace

ApiResponse HandleConsoleFile(std::string_view file) {
  for (const ConsoleAsset& asset : ConsoleAssets()) {
    if (asset.name != file) continue;
    ApiResponse r;
    r.body = std::string(asset.bytes);
    r.content_type = asset.content_type.data();  // static storage, NUL-terminated literal
    r.headers = {{"Content-Security-Policy", kContentSecurityPolicy},
                 {"X-Content-Type-Options", "nosniff"},
                 {"Referrer-Policy", "no-referrer"},
                 {"Cache-Control", "no-cache"}};
    return r;
  }
  return Api::Error(404, "not_found",
                    "the console has no file \"" + std::string(file) +
                        "\" (its page is GET /console)");
}

ApiResponse HandleConsoleAccess(const HandlerContext& ctx) {
  return JsonResponse(200, json::object{{"tokenRequired", TokenConfigured(ctx.options)}});
}

ApiResponse HandleConsolePulse(const HandlerContext& ctx) {
  auto pulse = ctx.engine.Pulse();
  if (!pulse.ok()) return StatusResponse(pulse.status());
  json::object o{{"lastSequence", pulse->last_sequence},
                 {"wakesSent", pulse->wakes_sent},
                 {"noticesOpened", pulse->notices_opened},
                 {"pendingNotices", pulse->pending_notices},
                 {"cluster", ctx.services.gate != nullptr}};
  if (!pulse->write_error.empty()) o["writeError"] = pulse->write_error;
  return JsonResponse(200, o);
}

ApiResponse HandleConsoleSessions(const HandlerContext& ctx, std::string_view query) {
  int limit = kDefaultSessionLimit;
  ApiResponse error;
  if (!ReadLimit(query, &limit, &error)) return error;
  auto sessions = SessionTablesView(ctx.engine).ListSessions();
  if (!sessions.ok()) return StatusResponse(sessions.status());
  auto runs = tools::RunIndex::Load(ctx.engine);
  if (!runs.ok()) return StatusResponse(runs.status());
  std::sort(sessions->begin(), sessions->end(), [](const SessionRecord& a, const SessionRecord& b) {
    return std::tie(a.name.agent_id, a.name.session_key) <
           std::tie(b.name.agent_id, b.name.session_key);
  });
  bool truncated = sessions->size() > static_cast<std::size_t>(limit);
  if (truncated) sessions->resize(static_cast<std::size_t>(limit));
  json::array rows;
  for (const SessionRecord& record : *sessions) {
    auto row = SessionRow(ctx, *runs, record);
    if (!row.ok()) return StatusResponse(row.status());
    rows.push_back(std::move(*row));
  }
  return JsonResponse(200, json::object{{"sessions", std::move(rows)}, {"truncated", truncated}});
}

ApiResponse HandleConsoleLinks(const HandlerContext& ctx, const ApiRequest& req,
                               const std::string& key, std::string_view query) {
  auto name = RouteSessionName(req, key, query);
  if (!name.ok()) return StatusResponse(name.status());
  auto version = ctx.engine.StateVersion(*name);
  if (!version.ok()) return StatusResponse(version.status());
  auto watchers = WatchersJson(ctx, *name);
  if (!watchers.ok()) return StatusResponse(watchers.status());
  json::object o;
  o["sessionKey"] = name->session_key;
  o["agentId"] = name->agent_id;
  o["stateVersion"] = *version;
  o["watchers"] = std::move(*watchers);
  // Only an agent-scoped key can watch (docs/semantics.md,
  // "How a watcher starts watching"): a bare one has no targets.
  auto parsed = ParseSessionKey(name->session_key);
  json::array targets, notices;
  json::value last_wake = nullptr;
  if (parsed.ok() && parsed->agent_scoped) {
    auto pending = ctx.engine.PendingNotices(parsed->canonical);
    if (!pending.ok()) return StatusResponse(pending.status());
    auto rows = TargetsJson(ctx, parsed->canonical, *pending);
    if (!rows.ok()) return StatusResponse(rows.status());
    targets = std::move(*rows);
    for (const Notice& n : *pending) notices.push_back(tools::NoticeToJson(n));
    last_wake = WakeJson(LastWake(ctx, parsed->canonical));
  }
  o["targets"] = std::move(targets);
  o["notices"] = std::move(notices);
  o["lastWake"] = std::move(last_wake);
  return JsonResponse(200, o);
}

}  // namespace statewatch::server

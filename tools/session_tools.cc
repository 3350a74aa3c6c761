#include "tools/session_tools.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/session_key.h"
#include "tools/history_sanitizer.h"
#include "tools/json_codec.h"
#include "tools/registry_codec.h"
#include "tools/session_history.h"
#include "tools/json_fields.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// ---- parameters (readers: tools/json_fields.h) --------------------------------------------

constexpr char kKindsError[] = "kinds must be an array of main, group, cron, hook, node, other";

Result<std::optional<std::set<std::string>>> KindsParam(const json::object& params) {
  using Kinds = std::optional<std::set<std::string>>;
  const json::value* v = Param(params, "kinds");
  if (v == nullptr) return Kinds();
  std::set<std::string> kinds;
  auto add = [&](const json::value& k) {
    if (!k.is_string()) return false;
    std::string kind = Lower(k.as_string());
    kind.erase(0, kind.find_first_not_of(' '));
    kind.erase(kind.find_last_not_of(' ') + 1);
    if (!IsSessionKind(kind)) return false;
    kinds.insert(kind);
    return true;
  };
  if (v->is_string()) {
    if (!add(*v)) return Status::InvalidArgument(kKindsError);
  } else if (v->is_array()) {
    for (const json::value& k : v->as_array()) {
      if (!add(k)) return Status::InvalidArgument(kKindsError);
    }
  } else {
    return Status::InvalidArgument(kKindsError);
  }
  if (kinds.empty()) return Kinds();  // [] filters nothing
  return Kinds(std::move(kinds));
}

struct ListFilters {
  std::optional<std::set<std::string>> kinds;
  std::optional<std::string> label;
  std::optional<std::string> agent_id;
  std::optional<std::string> search;  // lower-case
  std::optional<int64_t> active_minutes;
  std::optional<int64_t> limit;
  std::optional<int64_t> message_limit;
};

constexpr int64_t kMaxCount = int64_t{1} << 40;

Result<ListFilters> ReadListFilters(const json::object& params) {
  ListFilters f;
  SW_RETURN_IF_ERROR(Assign(KindsParam(params), &f.kinds));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "label"), &f.label));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "agentId"), &f.agent_id));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "search"), &f.search));
  SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "activeMinutes", 1, kMaxCount,
                                         "activeMinutes must be a positive integer"),
                            &f.active_minutes));
  SW_RETURN_IF_ERROR(Assign(
      IntegerParam(params, "limit", 1, kMaxCount, "limit must be a positive integer"), &f.limit));
  SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "messageLimit", 0, kMaxMessageLimit,
                                         "messageLimit must be an integer from 0 to 20"),
                            &f.message_limit));
  if (f.agent_id) f.agent_id = Lower(*f.agent_id);
  if (f.search) f.search = Lower(*f.search);
  return f;
}

// ---- shared --------------------------------------------------------------------------------

bool Contains(const std::optional<std::string>& field, const std::string& needle) {
  return field && Lower(*field).find(needle) != std::string::npos;
}

bool MatchesSearch(const SessionRecord& r, const std::string& needle) {
  return Lower(r.name.session_key).find(needle) != std::string::npos || Contains(r.label, needle) ||
         Contains(r.session_id, needle) || Contains(r.channel, needle) || Contains(r.model, needle);
}

int64_t UpdatedAt(const SessionRecord& r) {
  return r.updated_at_ms.value_or(r.created_at_ms.value_or(0));
}

bool Keep(const SessionRecord& r, const ListFilters& f, int64_t now_ms) {
  if (f.kinds && !f.kinds->count(SessionKindOf(r))) return false;
  if (f.label && r.label.value_or("") != *f.label) return false;
  if (f.agent_id && r.name.agent_id != *f.agent_id) return false;
  if (f.search && !MatchesSearch(r, *f.search)) return false;
  if (f.active_minutes && UpdatedAt(r) < now_ms - *f.active_minutes * 60000) return false;
  return true;
}

// The last `limit` transcript messages of a row, cleaned exactly as sessions_history cleans
// them (tool results left out), so that a list never shows more than history would.
Result<json::array> RecentMessages(const Engine& engine, const SessionName& name, int64_t limit) {
  auto transcript = engine.RecentTranscript(name, static_cast<std::size_t>(limit));
  if (!transcript.ok()) return transcript.status();
  HistoryViewOptions view_options;
  view_options.include_tools = false;
  return BuildHistoryView(*transcript, view_options).messages;
}

json::object ListRow(const SessionRecord& r, Sequence state_version) {
  json::object o;
  o["key"] = r.name.session_key;
  o["agentId"] = r.name.agent_id;
  o["kind"] = SessionKindOf(r);
  o["channel"] = SessionChannelOf(r);
  if (r.label) o["label"] = *r.label;
  if (r.model) o["model"] = *r.model;
  if (r.context_tokens) o["contextTokens"] = *r.context_tokens;
  if (r.total_tokens) o["totalTokens"] = *r.total_tokens;
  o["updatedAt"] = UpdatedAt(r);
  if (r.parent_session_key) o["parentSessionKey"] = *r.parent_session_key;
  if (state_version > 0) o["stateVersion"] = state_version;
  return o;
}

// ---- session_status ------------------------------------------------------------------------

// The target of session_status: the caller for absent / blank / "current"; a bare key is a
// session of the caller's agent. Nullopt for a key that cannot name a session.
Result<std::optional<SessionName>> StatusTarget(const json::object& params,
                                                const SessionName& caller, std::string* raw) {
  using Target = std::optional<SessionName>;
  auto key = StringParam(params, "sessionKey");
  if (!key.ok()) return key.status();
  if (!*key || **key == "current") return Target(caller);
  *raw = **key;
  auto resolved = ResolveSession(**key, "", caller.agent_id);
  if (!resolved.ok()) return Target();
  return Target(*resolved);
}

json::object StatusCard(const SessionName& target, const std::optional<SessionRecord>& rec) {
  SessionRecord r;
  if (rec) r = *rec;
  r.name = target;
  json::object card = SessionRecordToJson(r);
  return card;
}

}  // namespace

Result<json::object> SessionStatus(const Engine& engine, const SessionToolsOptions& options,
                                   const SessionName& caller, const json::object& params) {
  try {
    std::string raw_key;
    auto target = StatusTarget(params, caller, &raw_key);
    if (!target.ok()) return target.status();
    auto since = ParseChangesSince(params.if_contains("changesSince"));
    if (!since.ok()) return since.status();
    if (!*target) return Status::NotFound("Unknown sessionKey: " + raw_key);
    const SessionName& name = **target;

    auto rec = engine.GetSession(name);
    if (!rec.ok()) return rec.status();
    if (!(name == caller)) {
      auto visibility = CallerVisibility(engine, options, caller);
      if (!visibility.ok()) return visibility.status();
      VisibilityTarget vt{name, *rec ? (*rec)->parent_session_key : std::nullopt};
      SW_RETURN_IF_ERROR(
          CheckVisibility(SessionAction::kStatus, caller, *visibility, options.agent_to_agent, vt));
    }

    json::object card = StatusCard(name, *rec);
    Sequence version = 0;
    if (*since) {
      auto page = engine.ChangesSince(name, **since);
      if (!page.ok()) return page.status();
      version = page->state_version;
      card["stateVersion"] = version;
      card["stateChanges"] = ChangesPageToJson(*page);
    } else {
      auto v = engine.StateVersion(name);
      if (!v.ok()) return v.status();
      version = *v;
      card["stateVersion"] = version;
    }
    if (!(name == caller) && !rec->has_value() && version == 0) {
      return Status::NotFound("Unknown sessionKey: " + raw_key);
    }
    return card;
  } catch (const std::exception& e) {  // allocation failures: this is the edge
    return Status::IOError(std::string("session_status failed: ") + e.what());
  }
}

Result<json::object> SessionsList(const Engine& engine, const SessionToolsOptions& options,
                                  const SessionName& caller, const json::object& params) {
  try {
    auto filters = ReadListFilters(params);
    if (!filters.ok()) return filters.status();
    auto visibility = CallerVisibility(engine, options, caller);
    if (!visibility.ok()) return visibility.status();
    auto all = engine.ListSessions();
    if (!all.ok()) return all.status();

    int64_t now = engine.clock().NowMs();
    std::vector<SessionRecord> rows;
    for (SessionRecord& r : *all) {
      if (!Keep(r, *filters, now)) continue;
      VisibilityTarget vt{r.name, r.parent_session_key};
      if (!CheckVisibility(SessionAction::kList, caller, *visibility, options.agent_to_agent, vt)
               .ok()) {
        continue;
      }
      rows.push_back(std::move(r));
    }
    std::sort(rows.begin(), rows.end(), [](const SessionRecord& a, const SessionRecord& b) {
      if (UpdatedAt(a) != UpdatedAt(b)) return UpdatedAt(a) > UpdatedAt(b);
      if (a.name.session_key != b.name.session_key) return a.name.session_key < b.name.session_key;
      return a.name.agent_id < b.name.agent_id;
    });
    if (filters->limit && rows.size() > static_cast<uint64_t>(*filters->limit)) {
      rows.resize(static_cast<std::size_t>(*filters->limit));
    }

    std::vector<SessionName> names;
    names.reserve(rows.size());
    for (const SessionRecord& r : rows) names.push_back(r.name);
    auto versions = engine.StateVersions(names);  // one batch for every row
    if (!versions.ok()) return versions.status();

    json::array sessions;
    sessions.reserve(rows.size());
    int64_t message_limit = filters->message_limit.value_or(0);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      json::object row = ListRow(rows[i], i < versions->size() ? (*versions)[i] : 0);
      if (message_limit > 0) {
        auto messages = RecentMessages(engine, rows[i].name, message_limit);
        if (!messages.ok()) return messages.status();
        row["messages"] = std::move(*messages);
      }
      sessions.emplace_back(std::move(row));
    }
    json::object out;
    out["count"] = rows.size();
    out["sessions"] = std::move(sessions);
    return out;
  } catch (const std::exception& e) {
    return Status::IOError(std::string("sessions_list failed: ") + e.what());
  }
}

}  // namespace statewatch::tools

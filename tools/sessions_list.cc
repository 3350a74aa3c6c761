// sessions_list: the visible sessions, filtered, paged and bounded (tools/session_tools.h).
#include <algorithm>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "base/ascii.h"
#include "codecs/json_fields.h"
#include "codecs/registry_codec.h"
#include "statewatch/session_tables.h"
#include "tools/history_sanitizer.h"
#include "tools/session_activity.h"
#include "tools/session_history.h"
#include "tools/session_tools.h"
#include "tools/sessions_list_window.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// ---- parameters ------------------------------------------------------------------------------

constexpr char kKindsError[] = "kinds must be an array of main, group, cron, hook, node, other";
constexpr int64_t kMaxCount = int64_t{1} << 40;

Result<std::optional<std::set<std::string>>> KindsParam(const json::object& params) {
  using Kinds = std::optional<std::set<std::string>>;
  const json::value* v = Param(params, "kinds");
  if (v == nullptr) return Kinds();
  std::set<std::string> kinds;
  auto add = [&](const json::value& k) {
    if (!k.is_string()) return false;
    std::string kind = ascii::AsciiToLower(Trim(k.as_string()));
    if (!IsSessionKind(kind)) return false;
    kinds.insert(kind);
    return true;
  };
  bool ok = v->is_string() ? add(*v) : v->is_array();
  if (ok && v->is_array()) {
    for (const json::value& k : v->as_array()) ok = ok && add(k);
  }
  if (!ok) return Status::InvalidArgument(kKindsError);
  if (kinds.empty()) return Kinds();  // [] filters nothing
  return Kinds(std::move(kinds));
}

struct ListParams {
  std::optional<std::set<std::string>> kinds;
  std::optional<std::string> label;
  std::optional<std::string> agent_id;
  std::optional<std::string> search;  // lower-case
  std::optional<int64_t> active_minutes;
  int64_t limit = kDefaultListLimit;
  int64_t offset = 0;
  int64_t message_limit = 0;
  bool titles = false;
  bool previews = false;
};

Result<ListParams> ReadListParams(const json::object& params) {
  SW_RETURN_IF_ERROR(
      CheckKnownParams(params, "sessions_list",
                       {"kinds", "label", "agentId", "search", "activeMinutes", "limit", "offset",
                        "messageLimit", "includeDerivedTitles", "includeLastMessage"}));
  ListParams p;
  std::optional<int64_t> limit, offset, message_limit;
  std::optional<bool> titles, previews;
  SW_RETURN_IF_ERROR(Assign(KindsParam(params), &p.kinds));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "label"), &p.label));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "agentId"), &p.agent_id));
  SW_RETURN_IF_ERROR(Assign(StringParam(params, "search"), &p.search));
  SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "activeMinutes", 1, kMaxCount,
                                         "activeMinutes must be a positive integer"),
                            &p.active_minutes));
  SW_RETURN_IF_ERROR(Assign(
      IntegerParam(params, "limit", 1, kMaxCount, "limit must be a positive integer"), &limit));
  SW_RETURN_IF_ERROR(
      Assign(IntegerParam(params, "offset", 0, kMaxCount, "offset must be a non-negative integer"),
             &offset));
  SW_RETURN_IF_ERROR(Assign(IntegerParam(params, "messageLimit", 0, kMaxMessageLimit,
                                         "messageLimit must be an integer from 0 to 20"),
                            &message_limit));
  SW_RETURN_IF_ERROR(Assign(BoolParam(params, "includeDerivedTitles"), &titles));
  SW_RETURN_IF_ERROR(Assign(BoolParam(params, "includeLastMessage"), &previews));
  if (p.agent_id) p.agent_id = ascii::AsciiToLower(*p.agent_id);
  if (p.search) p.search = ascii::AsciiToLower(*p.search);
  p.limit = std::min<int64_t>(limit.value_or(kDefaultListLimit), kMaxListLimit);
  p.offset = offset.value_or(0);
  p.message_limit = message_limit.value_or(0);
  p.titles = titles.value_or(false);
  p.previews = previews.value_or(false);
  return p;
}

// ---- selection -------------------------------------------------------------------------------

// A visible session with what the list derives about it.
struct Row {
  SessionRecord record;
  Sequence version = 0;
  int64_t active_ms = 0;  // LastActivityMs
};

bool Contains(const std::optional<std::string>& field, const std::string& needle) {
  return field && ascii::AsciiToLower(*field).find(needle) != std::string::npos;
}

bool Keep(const Row& row, const ListParams& p, int64_t now_ms) {
  const SessionRecord& r = row.record;
  if (p.kinds && !p.kinds->count(SessionKindOf(r))) return false;
  if (p.label && r.label.value_or("") != *p.label) return false;
  if (p.agent_id && r.name.agent_id != *p.agent_id) return false;
  if (p.search) {
    const std::string& s = *p.search;
    bool hit = ascii::AsciiToLower(r.name.session_key).find(s) != std::string::npos ||
               Contains(r.label, s) || Contains(r.display_name, s) || Contains(r.session_id, s) ||
               ascii::AsciiToLower(SessionChannelOf(r)).find(s) != std::string::npos ||
               Contains(r.model, s);
    if (!hit) return false;
  }
  return !p.active_minutes || row.active_ms >= now_ms - *p.active_minutes * 60000;
}

// Every session the caller may see, with its state version and last activity.
Result<std::vector<Row>> VisibleRows(const Engine& engine, const SessionToolsOptions& options,
                                     const SessionName& caller, Visibility visibility) {
  auto all = SessionTablesView(engine).ListSessions();
  if (!all.ok()) return all.status();
  std::vector<Row> rows;
  for (SessionRecord& r : *all) {
    VisibilityTarget vt{r.name, r.parent_session_key};
    if (CheckVisibility(SessionAction::kList, caller, visibility, options.agent_to_agent, vt)
            .ok()) {
      rows.push_back(Row{std::move(r)});
    }
  }
  std::vector<SessionName> names;
  names.reserve(rows.size());
  for (const Row& row : rows) names.push_back(row.record.name);
  auto versions = engine.StateVersions(names);  // one batch for every row
  if (!versions.ok()) return versions.status();
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].version = i < versions->size() ? (*versions)[i] : 0;
    auto active = LastActivityMs(engine, rows[i].record, rows[i].version);
    if (!active.ok()) return active.status();
    rows[i].active_ms = *active;
  }
  return rows;
}

// ---- rows ------------------------------------------------------------------------------------

// A row's parent as (agent, key): a bare parent key is of the row's own agent.
std::optional<std::pair<std::string, std::string>> ParentOf(const Row& row) {
  const auto& parent = row.record.parent_session_key;
  if (!parent) return std::nullopt;
  std::string agent = row.record.name.agent_id;
  if (parent->rfind("agent:", 0) == 0) {
    agent = ascii::AsciiToLower(parent->substr(6, parent->find(':', 6) - 6));
  }
  return std::make_pair(std::move(agent), *parent);
}

// The keys of the visible children of each visible session (parentSessionKey, same agent
// for a bare parent key, as visibility decides ownership).
std::map<std::pair<std::string, std::string>, json::array> ChildrenOf(
    const std::vector<Row>& rows) {
  std::map<std::pair<std::string, std::string>, json::array> out;
  for (const Row& row : rows) {
    if (auto parent = ParentOf(row)) out[*parent].emplace_back(row.record.name.session_key);
  }
  return out;
}

json::object RowJson(const Row& row, const RunIndex& runs,
                     const std::map<std::pair<std::string, std::string>, json::array>& children) {
  const SessionRecord& r = row.record;
  json::object o;
  o["key"] = r.name.session_key;
  o["agentId"] = r.name.agent_id;
  o["kind"] = SessionKindOf(r);
  o["channel"] = SessionChannelOf(r);
  if (r.display_name) o["displayName"] = *r.display_name;
  if (r.label) o["label"] = *r.label;
  if (r.model_override || r.model) o["model"] = r.model_override ? *r.model_override : *r.model;
  if (r.context_tokens) o["contextTokens"] = *r.context_tokens;
  if (r.total_tokens) o["totalTokens"] = *r.total_tokens;
  o["updatedAt"] = row.active_ms;
  if (r.parent_session_key) o["parentSessionKey"] = *r.parent_session_key;
  if (row.version > 0) o["stateVersion"] = row.version;
  if (const RunRecord* run = runs.SpawnRunOf(r.name)) o["status"] = ListStatusOf(*run);
  auto kids = children.find({r.name.agent_id, r.name.session_key});
  if (kids != children.end()) o["childSessions"] = kids->second;
  return o;
}

// Titles, previews and recent messages: transcript reads, only for rows on the page.
Status Enrich(const Engine& engine, const ListParams& p, const SessionName& name, json::object* o) {
  if (p.titles) {
    auto title = DerivedTitle(engine, name);
    if (!title.ok()) return title.status();
    if (*title) (*o)["derivedTitle"] = **title;
  }
  if (p.previews) {
    auto preview = LastMessagePreview(engine, name);
    if (!preview.ok()) return preview.status();
    if (*preview) (*o)["lastMessagePreview"] = **preview;
  }
  if (p.message_limit > 0) {
    auto transcript =
        SessionTablesView(engine).RecentTranscript(name, static_cast<std::size_t>(p.message_limit));
    if (!transcript.ok()) return transcript.status();
    HistoryViewOptions view_options;
    view_options.include_tools = false;
    (*o)["messages"] = BuildHistoryView(*transcript, view_options).messages;
  }
  return Status::OK();
}

std::string VisibilityWarning(Visibility v, const SessionName& caller) {
  switch (v) {
    case Visibility::kSelf:
      return "Session list visibility is restricted to the current session "
             "(tools.sessions.visibility=self).";
    case Visibility::kTree:
      return "Session list visibility is restricted to the current session tree "
             "(tools.sessions.visibility=tree).";
    default:
      return "Session list visibility is restricted to the sessions of agent " + caller.agent_id +
             " (tools.sessions.visibility=agent). Set tools.sessions.visibility=all to allow "
             "cross-agent access.";
  }
}

// Keeps the answer within the budget: enrichment goes first, then rows from the end.
Status FitBudget(json::object* out, int64_t offset) {
  auto size = [&] { return json::serialize(*out).size(); };
  if (size() <= kListResultBudgetBytes) return Status::OK();
  json::array& sessions = (*out)["sessions"].as_array();
  bool enriched = false;
  for (json::value& row : sessions) {
    for (const char* field : {"derivedTitle", "lastMessagePreview", "messages"}) {
      enriched = row.as_object().erase(field) > 0 || enriched;
    }
  }
  if (enriched) (*out)["enrichmentOmitted"] = true;
  if (size() <= kListResultBudgetBytes) return Status::OK();
  while (!sessions.empty() && size() > kListResultBudgetBytes) sessions.pop_back();
  if (sessions.empty()) {
    return Status::IOError("sessions_list: one row alone exceeds the 64 KiB result budget");
  }
  (*out)["count"] = sessions.size();
  (*out)["hasMore"] = true;
  (*out)["nextOffset"] = offset + static_cast<int64_t>(sessions.size());
  (*out)["truncationReason"] = "byte-limit";
  return Status::OK();
}

// What sessions_list selects: the visible rows, those the filters keep in the list's order,
// and what rows are rendered with.
struct Selection {
  ListParams params;
  Visibility visibility = Visibility::kTree;
  std::vector<Row> visible;
  std::vector<const Row*> kept;  // into `visible`, in the list's order
  std::optional<RunIndex> runs;
  std::map<std::pair<std::string, std::string>, json::array> children;
};

ListSortKey SortKeyOf(const Row& row) {
  return {row.active_ms, row.record.name.session_key, row.record.name.agent_id};
}

Status Select(const Engine& engine, const SessionToolsOptions& options, const SessionName& caller,
              const json::object& params, Selection* s) {
  auto p = ReadListParams(params);
  if (!p.ok()) return p.status();
  s->params = std::move(*p);
  auto visibility = CallerVisibility(engine, options, caller);
  if (!visibility.ok()) return visibility.status();
  s->visibility = *visibility;
  auto visible = VisibleRows(engine, options, caller, *visibility);
  if (!visible.ok()) return visible.status();
  s->visible = std::move(*visible);
  auto runs = RunIndex::Load(engine);
  if (!runs.ok()) return runs.status();
  s->runs = std::move(*runs);
  s->children = ChildrenOf(s->visible);
  int64_t now = engine.clock().NowMs();
  for (const Row& row : s->visible) {
    if (Keep(row, s->params, now)) s->kept.push_back(&row);
  }
  std::sort(s->kept.begin(), s->kept.end(), [](const Row* a, const Row* b) {
    return ListsBefore(SortKeyOf(*a), SortKeyOf(*b));
  });
  return Status::OK();
}

void AddVisibility(const Selection& s, const SessionName& caller, json::object* out) {
  if (s.visibility != Visibility::kAll) {
    (*out)["visibility"] = json::object{{"mode", VisibilityName(s.visibility)},
                                        {"restricted", true},
                                        {"warning", VisibilityWarning(s.visibility, caller)}};
  }
}

}  // namespace

bool ListsBefore(const ListSortKey& a, const ListSortKey& b) {
  return std::tie(b.updated_at, a.key, a.agent_id) < std::tie(a.updated_at, b.key, b.agent_id);
}

ListSortKey ListSortKeyOf(const json::object& row) {
  ListSortKey k;
  if (const json::value* v = row.if_contains("updatedAt"); v != nullptr && v->is_int64()) {
    k.updated_at = v->as_int64();
  }
  if (const json::value* v = row.if_contains("key"); v != nullptr && v->is_string()) {
    k.key = std::string(v->as_string());
  }
  if (const json::value* v = row.if_contains("agentId"); v != nullptr && v->is_string()) {
    k.agent_id = std::string(v->as_string());
  }
  return k;
}

Status FitListBudget(json::object* out, int64_t offset) { return FitBudget(out, offset); }

Result<json::object> SessionsList(const Engine& engine, const SessionToolsOptions& options,
                                  const SessionName& caller, const json::object& params) {
  try {
    Selection s;
    SW_RETURN_IF_ERROR(Select(engine, options, caller, params, &s));
    const ListParams* p = &s.params;
    const std::vector<const Row*>& kept = s.kept;
    std::size_t begin = std::min<std::size_t>(kept.size(), static_cast<std::size_t>(p->offset));
    std::size_t end =
        std::min<std::size_t>(kept.size(), begin + static_cast<std::size_t>(p->limit));

    json::array sessions;
    for (std::size_t i = begin; i < end; ++i) {
      json::object row = RowJson(*kept[i], *s.runs, s.children);
      SW_RETURN_IF_ERROR(Enrich(engine, *p, kept[i]->record.name, &row));
      sessions.emplace_back(std::move(row));
    }
    json::object out;
    out["count"] = sessions.size();
    out["sessions"] = std::move(sessions);
    out["hasMore"] = end < kept.size();
    if (end < kept.size()) out["nextOffset"] = end;
    out["limitApplied"] = p->limit;
    AddVisibility(s, caller, &out);
    SW_RETURN_IF_ERROR(FitBudget(&out, p->offset));
    return out;
  } catch (const std::exception& e) {
    return Status::IOError(std::string("sessions_list failed: ") + e.what());
  }
}

Result<json::object> SessionsListWindow(const Engine& engine, const SessionToolsOptions& options,
                                        const SessionName& caller, const json::object& params,
                                        const ListWindow& window) {
  try {
    Selection s;
    SW_RETURN_IF_ERROR(Select(engine, options, caller, params, &s));
    std::size_t begin = 0;
    if (window.after) {
      begin = static_cast<std::size_t>(
          std::partition_point(s.kept.begin(), s.kept.end(),
                               [&](const Row* r) { return !ListsBefore(*window.after, SortKeyOf(*r)); }) -
          s.kept.begin());
    }
    const std::size_t end =
        std::min<std::size_t>(s.kept.size(), begin + static_cast<std::size_t>(std::max<int64_t>(0, window.take)));
    json::array rows;
    for (std::size_t i = begin; i < end; ++i) {
      json::object row = RowJson(*s.kept[i], *s.runs, s.children);
      SW_RETURN_IF_ERROR(Enrich(engine, s.params, s.kept[i]->record.name, &row));
      rows.emplace_back(std::move(row));
    }
    json::array links;
    for (const Row& row : s.visible) {
      if (auto parent = ParentOf(row)) {
        links.emplace_back(json::array{json::string(parent->first), json::string(parent->second),
                                       json::string(row.record.name.session_key)});
      }
    }
    json::object out;
    out["rows"] = std::move(rows);
    out["kept"] = s.kept.size() - begin;
    out["childLinks"] = std::move(links);
    out["limitApplied"] = s.params.limit;
    AddVisibility(s, caller, &out);
    return out;
  } catch (const std::exception& e) {
    return Status::IOError(std::string("sessions_list failed: ") + e.what());
  }
}

}  // namespace statewatch::tools

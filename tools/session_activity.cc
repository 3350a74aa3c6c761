#include "tools/session_activity.h"

#include <algorithm>

#include "codecs/json_fields.h"
#include "statewatch/session_tables.h"
#include "tools/history_sanitizer.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

// Messages read to find a title (the opening ones) or a preview (the closing ones).
constexpr std::size_t kSnippetScan = 20;
// Messages read, newest first, for the latest usage record.
constexpr std::size_t kUsageScan = 50;

std::pair<std::string, std::string> Key(const SessionName& s) {
  return {s.agent_id, s.session_key};
}

// The text of a cleaned history message: its string content, or its text blocks joined.
std::string PlainText(const json::value& content) {
  if (content.is_string()) return std::string(content.as_string());
  std::string out;
  if (!content.is_array()) return out;
  for (const json::value& block : content.as_array()) {
    const json::value* text = block.is_object() ? block.as_object().if_contains("text") : nullptr;
    if (text == nullptr || !text->is_string()) continue;
    if (!out.empty()) out += ' ';
    out += text->as_string();
  }
  return out;
}

// One line (every run of whitespace becomes one space), trimmed, cut to `max_chars` code
// points with "…" appended when cut.
std::string OneLine(std::string_view text, std::size_t max_chars) {
  std::string flat;
  bool space = false;
  for (char c : text) {
    bool blank = c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
    if (blank) {
      space = !flat.empty();
      continue;
    }
    if (space) flat += ' ';
    space = false;
    flat += c;
  }
  std::size_t chars = 0, i = 0;
  for (; i < flat.size(); ++i) {
    if ((static_cast<unsigned char>(flat[i]) & 0xC0) == 0x80) continue;
    if (chars == max_chars) break;
    ++chars;
  }
  if (i >= flat.size()) return flat;
  return flat.substr(0, i) + "…";
}

// The first (or last) cleaned message of `messages` whose role passes `want` and that has
// text left after cleaning.
std::optional<std::string> FirstText(const std::vector<TranscriptMessage>& messages, bool newest,
                                     bool (*want)(std::string_view role), std::size_t max_chars) {
  HistoryViewOptions options;
  options.include_tools = false;
  HistoryView view = BuildHistoryView(messages, options);
  json::array& rows = view.messages;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const json::object& m = rows[newest ? rows.size() - 1 - k : k].as_object();
    const json::value* role = m.if_contains("role");
    if (role == nullptr || !role->is_string() || !want(role->as_string())) continue;
    const json::value* content = m.if_contains("content");
    std::string line = content ? OneLine(PlainText(*content), max_chars) : "";
    if (!line.empty()) return line;
  }
  return std::nullopt;
}

bool IsUser(std::string_view role) { return role == "user"; }
bool IsConversation(std::string_view role) { return role == "user" || role == "assistant"; }

}  // namespace

Result<int64_t> LastActivityMs(const Engine& engine, const SessionRecord& record,
                               Sequence state_version) {
  int64_t latest = record.updated_at_ms.value_or(record.created_at_ms.value_or(0));
  if (state_version > 0) {
    auto page = engine.ChangesSince(record.name, state_version - 1, 1);
    if (!page.ok()) return page.status();
    if (!page->events.empty()) latest = std::max(latest, page->events.back().occurred_at_ms);
  }
  auto last = SessionTablesView(engine).RecentTranscript(record.name, 1);
  if (!last.ok()) return last.status();
  if (!last->empty()) latest = std::max(latest, last->back().timestamp_ms);
  return latest;
}

Result<RunIndex> RunIndex::Load(const Engine& engine) {
  auto runs = SessionTablesView(engine).ListRuns();
  if (!runs.ok()) return runs.status();
  RunIndex index;
  index.runs_ = std::move(*runs);
  for (std::size_t i = 0; i < index.runs_.size(); ++i) {
    const RunRecord& r = index.runs_[i];
    if (r.kind != "spawn" && r.kind != "send") continue;
    index.by_target_[Key(r.target)].push_back(i);
    if (r.kind == "spawn") index.by_requester_[Key(r.requester)].push_back(i);
  }
  return index;
}

const RunRecord* RunIndex::NewestRunTargeting(const SessionName& session,
                                              bool (*pick)(const RunRecord&)) const {
  auto it = by_target_.find(Key(session));
  if (it == by_target_.end()) return nullptr;
  const RunRecord* newest = nullptr;
  for (std::size_t i : it->second) {
    const RunRecord& r = runs_[i];
    if (pick(r) && (!newest || r.created_at_ms > newest->created_at_ms)) newest = &r;
  }
  return newest;
}

const RunRecord* RunIndex::SpawnRunOf(const SessionName& session) const {
  return NewestRunTargeting(session, [](const RunRecord& r) { return r.kind == "spawn"; });
}

const RunRecord* RunIndex::ActiveRunOf(const SessionName& session) const {
  return NewestRunTargeting(session, [](const RunRecord& r) { return r.status == "running"; });
}

std::vector<const RunRecord*> RunIndex::RunningChildrenOf(const SessionName& session) const {
  std::vector<const RunRecord*> out;
  auto it = by_requester_.find(Key(session));
  if (it == by_requester_.end()) return out;
  for (std::size_t i : it->second) {
    if (runs_[i].status == "running") out.push_back(&runs_[i]);
  }
  std::sort(out.begin(), out.end(), [](const RunRecord* a, const RunRecord* b) {
    return std::tie(a->created_at_ms, a->run_id) < std::tie(b->created_at_ms, b->run_id);
  });
  return out;
}

const char* ListStatusOf(const RunRecord& run) {
  if (run.status == "running") return "running";
  if (run.status == "ok") return "done";
  if (run.status == "cancelled") return "killed";
  if (run.status == "timeout") return "timeout";
  return "failed";
}

Result<std::optional<std::string>> DerivedTitle(const Engine& engine, const SessionName& session) {
  auto first = SessionTablesView(engine).FirstTranscript(session, kSnippetScan);
  if (!first.ok()) return first.status();
  return FirstText(*first, /*newest=*/false, IsUser, kTitleMaxChars);
}

Result<std::optional<std::string>> LastMessagePreview(const Engine& engine,
                                                      const SessionName& session) {
  auto last = SessionTablesView(engine).RecentTranscript(session, kSnippetScan);
  if (!last.ok()) return last.status();
  return FirstText(*last, /*newest=*/true, IsConversation, kPreviewMaxChars);
}

Result<std::optional<TokenUsage>> LatestUsage(const Engine& engine, const SessionName& session) {
  auto last = SessionTablesView(engine).RecentTranscript(session, kUsageScan);
  if (!last.ok()) return last.status();
  for (auto it = last->rbegin(); it != last->rend(); ++it) {
    if (it->usage) return std::optional<TokenUsage>(*it->usage);
  }
  return std::optional<TokenUsage>();
}

}  // namespace statewatch::tools

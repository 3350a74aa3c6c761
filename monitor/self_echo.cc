#include "monitor/self_echo.h"

#include <algorithm>
#include <boost/json.hpp>

#include "base/ascii.h"
#include "statewatch/session_tables.h"

namespace statewatch::monitor {

std::string NormalizeForEcho(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : text) {
    if (ascii::IsSpace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

std::string TranscriptText(const std::string& content_json) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(content_json, ec);
  if (ec) return content_json;
  if (const boost::json::string* s = v.if_string()) return std::string(*s);
  const boost::json::array* blocks = v.if_array();
  if (!blocks) return std::string();
  std::string out;
  for (const boost::json::value& b : *blocks) {
    const boost::json::string* text = b.if_string();
    if (const boost::json::object* o = b.if_object()) {
      const boost::json::value* type = o->if_contains("type");
      const boost::json::value* t = o->if_contains("text");
      if (type && type->is_string() && type->get_string() == "text" && t) text = t->if_string();
    }
    if (!text) continue;
    if (!out.empty()) out.push_back('\n');
    out.append(text->data(), text->size());
  }
  return out;
}

Result<std::unordered_set<std::string>> RecentOwnUserTexts(const Engine& engine,
                                                           const SessionName& session,
                                                           std::size_t count,
                                                           std::size_t max_lookback) {
  std::unordered_set<std::string> out;
  if (count == 0) return out;
  // Look back twice as far each round until `count` user messages are found, the
  // transcript is exhausted, or the lookback cap is reached.
  for (std::size_t limit = std::min(count * 2, max_lookback);; limit *= 2) {
    limit = std::min(limit, max_lookback);
    auto messages = SessionTablesView(engine).RecentTranscript(session, limit);
    if (!messages.ok()) return messages.status();
    out.clear();
    std::size_t found = 0;
    for (auto it = messages->rbegin(); it != messages->rend() && found < count; ++it) {
      if (it->role != "user") continue;
      out.insert(NormalizeForEcho(TranscriptText(it->content_json)));
      ++found;
    }
    if (found == count || messages->size() < limit || limit == max_lookback) return out;
  }
}

}  // namespace statewatch::monitor

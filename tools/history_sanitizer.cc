#include "tools/history_sanitizer.h"

#include <algorithm>
#include <initializer_list>
#include <optional>

#include "base/ascii.h"

// Steps 1 and 2 live in history_sanitizer_scaffolding.cc and history_sanitizer_redaction.cc;
// this file has step 3, their composition (SanitizeText) and the view sessions_history serves.

namespace statewatch::tools {
namespace json = boost::json;

std::string CutText(std::string_view text, std::size_t max_chars, bool* truncated) {
  if (text.size() <= max_chars) return std::string(text);  // bytes >= code points
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;  // continuation byte
    if (chars == max_chars) {
      *truncated = true;
      return std::string(text.substr(0, i)).append(kTruncatedMarker);
    }
    ++chars;
  }
  return std::string(text);
}

CleanText SanitizeText(std::string_view text, std::size_t max_chars) {
  CleanText clean;
  std::string stripped = StripScaffolding(text);
  std::string redacted = RedactSecrets(stripped, &clean.redacted);
  clean.text = CutText(redacted, max_chars, &clean.truncated);
  return clean;
}

bool IsToolResultRole(std::string_view role) {
  std::string r = ascii::AsciiToLower(role);
  return r == "tool" || r == "toolresult" || r == "tool_result" || r == "function";
}

// ---- the view ---------------------------------------------------------------------------------

namespace {

bool TypeIn(std::string_view type, std::initializer_list<std::string_view> set) {
  return std::find(set.begin(), set.end(), type) != set.end();
}

// The text of a tool result's content: a string, text blocks joined, or the JSON.
std::string FlattenText(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_null()) return "";
  if (v.is_object()) {
    const json::value* t = v.as_object().if_contains("text");
    if (t != nullptr && t->is_string()) return std::string(t->as_string());
  }
  if (v.is_array()) {
    std::string out;
    for (const json::value& e : v.as_array()) {
      std::string part = FlattenText(e);
      if (part.empty()) continue;
      if (!out.empty()) out.push_back('\n');
      out += part;
    }
    return out;
  }
  return json::serialize(v);
}

class ContentCleaner {
 public:
  ContentCleaner(const HistoryViewOptions& options, HistoryView* view)
      : options_(options), view_(view) {}

  std::string Text(std::string_view text) {
    CleanText clean = SanitizeText(text, options_.max_text_chars);
    view_->content_redacted |= clean.redacted;
    view_->content_truncated |= clean.truncated;
    return std::move(clean.text);
  }

  // The cleaned content, or nullopt when nothing is left of it.
  std::optional<json::value> Content(const json::value& content) {
    if (content.is_string()) {
      std::string text = Text(content.as_string());
      if (text.empty()) return std::nullopt;
      return json::value(text);
    }
    if (!content.is_array() && !content.is_object()) {
      if (content.is_null()) return std::nullopt;
      return Content(json::value(json::serialize(content)));
    }
    json::array blocks;
    auto add = [&](const json::value& e) {
      if (e.is_string()) {
        std::string text = Text(e.as_string());
        if (!text.empty()) blocks.push_back(json::object{{"type", "text"}, {"text", text}});
      } else if (e.is_object()) {
        if (auto b = Block(e.as_object())) blocks.push_back(std::move(*b));
      }
    };
    if (content.is_object()) {
      add(content);
    } else {
      for (const json::value& e : content.as_array()) add(e);
    }
    if (blocks.empty()) return std::nullopt;
    return json::value(std::move(blocks));
  }

 private:
  std::optional<json::object> Block(const json::object& block) {
    const json::value* type_value = block.if_contains("type");
    std::string type = type_value && type_value->is_string() ? std::string(type_value->as_string())
                                                             : std::string("text");
    std::string t = ascii::AsciiToLower(type);
    if (TypeIn(t, {"thinking", "redacted_thinking", "reasoning"})) return std::nullopt;
    if (TypeIn(t, {"tool_use", "toolcall", "tool_call", "function_call", "functioncall"})) {
      return ToolCall(block, type);
    }
    if (TypeIn(t, {"tool_result", "toolresult", "function_result", "function_call_output"})) {
      if (!options_.include_tools) return std::nullopt;
      return ToolResult(block, type);
    }
    if (TypeIn(t,
               {"image", "image_url", "input_image", "document", "file", "audio", "input_audio"})) {
      return json::object{{"type", type}, {"omitted", true}};
    }
    json::object out{{"type", type}};
    if (const json::value* text = block.if_contains("text"); text && text->is_string()) {
      std::string clean = Text(text->as_string());
      if (clean.empty()) return std::nullopt;
      out["text"] = clean;
    }
    return out;
  }

  // Identifiers are copied only when short; a 10 MB "name" is not a name.
  static void CopyShortString(const json::object& from, std::string_view key, json::object* to) {
    const json::value* v = from.if_contains(key);
    if (v != nullptr && v->is_string() && v->as_string().size() <= 256) (*to)[key] = *v;
  }

  json::object ToolCall(const json::object& block, const std::string& type) {
    json::object out{{"type", type}};
    CopyShortString(block, "id", &out);
    CopyShortString(block, "name", &out);
    for (std::string_view key : {"input", "arguments", "args", "parameters"}) {
      const json::value* v = block.if_contains(key);
      if (v == nullptr) continue;
      out["input"] = Text(v->is_string() ? std::string(v->as_string()) : json::serialize(*v));
      break;
    }
    return out;
  }

  json::object ToolResult(const json::object& block, const std::string& type) {
    json::object out{{"type", type}};
    CopyShortString(block, "tool_use_id", &out);
    CopyShortString(block, "toolCallId", &out);
    if (const json::value* e = block.if_contains("is_error"); e && e->is_bool()) {
      out["is_error"] = *e;
    }
    const json::value* content = block.if_contains("content");
    if (content == nullptr) content = block.if_contains("output");
    out["content"] = Text(content ? FlattenText(*content) : std::string());
    return out;
  }

  const HistoryViewOptions& options_;
  HistoryView* view_;
};

json::object MessageShell(const TranscriptMessage& m) {
  json::object o;
  o["index"] = m.index;
  o["role"] = m.role;
  if (!m.tool_name.empty()) o["toolName"] = m.tool_name;
  o["timestamp"] = m.timestamp_ms;
  if (m.provenance) {
    // Where an inter-session message came from, so that the reader treats it as data.
    json::object p{{"kind", m.provenance->kind},
                   {"sourceSessionKey", m.provenance->source_session_key},
                   {"sourceTool", m.provenance->source_tool}};
    if (!m.provenance->source_channel.empty()) p["sourceChannel"] = m.provenance->source_channel;
    if (!m.provenance->run_id.empty()) p["runId"] = m.provenance->run_id;
    p["isUser"] = false;
    o["provenance"] = std::move(p);
  }
  return o;
}

std::optional<json::object> CleanMessage(const TranscriptMessage& m, ContentCleaner* cleaner) {
  std::error_code ec;
  json::value raw = json::parse(m.content_json, ec);
  if (ec) raw = json::string(m.content_json);  // not JSON: the text as it is
  auto content = cleaner->Content(raw);
  if (!content) return std::nullopt;
  json::object o = MessageShell(m);
  o["content"] = std::move(*content);
  return o;
}

}  // namespace

HistoryView BuildHistoryView(const std::vector<TranscriptMessage>& messages,
                             const HistoryViewOptions& options) {
  HistoryView view;
  ContentCleaner cleaner(options, &view);
  auto visible = [&](const TranscriptMessage& m) {
    return options.include_tools || !IsToolResultRole(m.role);
  };
  // Newest first: the kept messages are the longest newest suffix that fits, so the first
  // one that does not fit ends the walk and every older one is dropped unread.
  std::vector<json::object> kept;
  std::size_t total = 2;  // "[]"
  for (std::size_t i = messages.size(); i-- > 0;) {
    if (!visible(messages[i])) continue;
    auto message = CleanMessage(messages[i], &cleaner);
    if (!message) continue;
    std::size_t size = json::serialize(*message).size();
    if (size > options.max_bytes) {
      *message = MessageShell(messages[i]);
      (*message)["content"] = kOmittedMessage;
      size = json::serialize(*message).size();
      view.truncated = view.content_truncated = true;
    }
    std::size_t add = size + (kept.empty() ? 0 : 1);  // the comma
    if (total + add > options.max_bytes) {
      view.dropped_messages = 1 + std::count_if(messages.begin(), messages.begin() + i, visible);
      view.truncated = true;
      break;
    }
    total += add;
    kept.push_back(std::move(*message));
  }
  view.messages.reserve(kept.size());
  for (auto it = kept.rbegin(); it != kept.rend(); ++it) view.messages.emplace_back(std::move(*it));
  view.bytes = kept.empty() ? 2 : total;
  return view;
}

}  // namespace statewatch::tools

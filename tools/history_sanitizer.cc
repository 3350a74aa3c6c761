#include "tools/history_sanitizer.h"

#include <algorithm>
#include <array>
#include <initializer_list>
#include <optional>

#include "base/ascii.h"
#include "codecs/json_fields.h"

// Everything here is a hand-written linear scanner rather than std::regex: transcripts are
// hostile input of any size, and libstdc++'s regex recurses per character (a long message
// overflows the stack) and is slow enough to dominate sessions_history.

namespace statewatch::tools {
namespace json = boost::json;

namespace {

constexpr std::size_t npos = std::string_view::npos;

using ascii::IsAlnum;
using ascii::IsJsonSpace;

// text[pos…] starts with `prefix`, without case.
bool StartsWithCI(std::string_view text, std::size_t pos, std::string_view prefix) {
  return ascii::StartsWithIgnoreCase(text.substr(pos), prefix);
}

// ---- block tags -----------------------------------------------------------------------------

enum class TagKind { kReasoning, kBlock, kUnwrap };
struct TagSpec {
  std::string_view name;  // lower-case
  TagKind kind;
  bool needs_name_attr;  // `<invoke name=…>`: a bare `<invoke>` is prose, not a tool call
};
constexpr TagSpec kTags[] = {
    {"think", TagKind::kReasoning, false},         {"thinking", TagKind::kReasoning, false},
    {"thought", TagKind::kReasoning, false},       {"antthinking", TagKind::kReasoning, false},
    {"relevant-memories", TagKind::kBlock, false}, {"relevant_memories", TagKind::kBlock, false},
    {"tool_call", TagKind::kBlock, false},         {"tool_calls", TagKind::kBlock, false},
    {"function_call", TagKind::kBlock, false},     {"function_calls", TagKind::kBlock, false},
    {"minimax:tool_call", TagKind::kBlock, false}, {"invoke", TagKind::kBlock, true},
    {"parameter", TagKind::kBlock, true},          {"final", TagKind::kUnwrap, false},
};
constexpr std::size_t kMaxTagName = 32;
constexpr std::size_t kMaxTagBytes = 512;

struct Tag {
  const TagSpec* spec = nullptr;
  bool closing = false;
  bool self_closing = false;
  std::size_t end = npos;  // one past '>'; npos for a tag cut off by the end of the text
};

bool IsTagNameChar(char c) { return IsAlnum(c) || c == '_' || c == '-' || c == ':'; }

bool HasNameAttribute(std::string_view attrs) {
  std::string a = ascii::AsciiToLower(attrs);
  for (std::size_t p = a.find("name"); p != npos; p = a.find("name", p + 1)) {
    std::size_t q = p + 4;
    while (q < a.size() && IsJsonSpace(a[q])) ++q;
    if (q < a.size() && a[q] == '=') return true;
  }
  return false;
}

// The tag at text[pos] == '<' when it is one of kTags, else nullopt. A tag cut off by the end
// of the text (a model stopped mid-tag) counts when what follows its name looks like
// attributes, so that prose such as "a <think about it" is left alone.
std::optional<Tag> ParseTag(std::string_view text, std::size_t pos) {
  std::size_t i = pos + 1;
  Tag tag;
  if (i < text.size() && text[i] == '/') {
    tag.closing = true;
    ++i;
  }
  std::size_t name_begin = i;
  while (i < text.size() && IsTagNameChar(text[i]) && i - name_begin <= kMaxTagName) ++i;
  if (i == name_begin || i - name_begin > kMaxTagName) return std::nullopt;
  if (i < text.size() && text[i] != '>' && text[i] != '/' && !IsJsonSpace(text[i])) {
    return std::nullopt;
  }
  std::string name = ascii::AsciiToLower(text.substr(name_begin, i - name_begin));
  for (const TagSpec& spec : kTags) {
    if (spec.name == name) tag.spec = &spec;
  }
  if (tag.spec == nullptr) return std::nullopt;
  std::size_t limit = std::min(text.size(), i + kMaxTagBytes);
  std::size_t gt = npos;
  for (std::size_t j = i; j < limit && text[j] != '<'; ++j) {
    if (text[j] == '>') {
      gt = j;
      break;
    }
  }
  std::string_view attrs = text.substr(i, (gt == npos ? limit : gt) - i);
  if (gt != npos) {
    tag.end = gt + 1;
    tag.self_closing = gt > i && text[gt - 1] == '/';
  } else {
    std::size_t b = attrs.find_first_not_of(" \t\r\n");
    bool empty = b == npos;
    if (!(empty && limit == text.size()) && attrs.find('=') == npos) return std::nullopt;
  }
  if (tag.spec->needs_name_attr && !tag.closing && !HasNameAttribute(attrs)) return std::nullopt;
  return tag;
}

// One past the close tag matching an opener of `spec` whose content starts at `from`
// (nesting of the same tag counted), or the end of the text when it is never closed.
std::size_t MatchingCloseEnd(std::string_view text, std::size_t from, const TagSpec* spec) {
  int depth = 1;
  for (std::size_t lt = text.find('<', from); lt != npos; lt = text.find('<', lt + 1)) {
    auto tag = ParseTag(text, lt);
    if (!tag || tag->spec != spec || tag->self_closing) continue;
    depth += tag->closing ? -1 : 1;
    if (depth == 0) return tag->end == npos ? text.size() : tag->end;
  }
  return text.size();
}

std::string StripBlocks(std::string_view text, bool* changed) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t lt = text.find('<', i);
    if (lt == npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, lt - i));
    auto tag = ParseTag(text, lt);
    if (!tag) {
      out.push_back('<');
      i = lt + 1;
      continue;
    }
    *changed = true;
    std::size_t after = tag->end == npos ? text.size() : tag->end;
    if (tag->spec->kind == TagKind::kUnwrap || tag->self_closing) {
      i = after;
    } else if (tag->closing) {
      // A stray `</think>`: what came before it was reasoning whose opener the model omitted.
      if (tag->spec->kind == TagKind::kReasoning) out.clear();
      i = after;
    } else {
      i = tag->end == npos ? text.size() : MatchingCloseEnd(text, after, tag->spec);
    }
  }
  return out;
}

// ---- control tokens -------------------------------------------------------------------------

constexpr std::string_view kFwBar = "\xEF\xBD\x9C";  // ｜ U+FF5C
constexpr std::string_view kFwLt = "\xEF\xBC\x9C";   // ＜ U+FF1C
constexpr std::string_view kFwGt = "\xEF\xBC\x9E";   // ＞ U+FF1E
constexpr std::size_t kMaxTokenBytes = 128;

struct Token {
  std::size_t end;
  std::string_view content;
};

// The control token starting at `pos`: `<|…|>`, `<｜…｜>` or `＜｜…｜＞`, one line, bounded.
std::optional<Token> ParseToken(std::string_view text, std::size_t pos) {
  std::size_t inner;
  bool full_width;
  if (text.compare(pos, 2, "<|") == 0) {
    inner = pos + 2;
    full_width = false;
  } else if (text[pos] == '<' && text.compare(pos + 1, kFwBar.size(), kFwBar) == 0) {
    inner = pos + 1 + kFwBar.size();
    full_width = true;
  } else if (text.compare(pos, kFwLt.size(), kFwLt) == 0 &&
             text.compare(pos + kFwLt.size(), kFwBar.size(), kFwBar) == 0) {
    inner = pos + kFwLt.size() + kFwBar.size();
    full_width = true;
  } else {
    return std::nullopt;
  }
  std::size_t limit = std::min(text.size(), inner + kMaxTokenBytes * (full_width ? 2 : 1));
  for (std::size_t j = inner; j < limit && text[j] != '\n'; ++j) {
    if (!full_width && text.compare(j, 2, "|>") == 0)
      return Token{j + 2, text.substr(inner, j - inner)};
    if (full_width && text.compare(j, kFwBar.size(), kFwBar) == 0) {
      std::size_t k = j + kFwBar.size();
      if (text.compare(k, 1, ">") == 0) return Token{k + 1, text.substr(inner, j - inner)};
      if (text.compare(k, kFwGt.size(), kFwGt) == 0) {
        return Token{k + kFwGt.size(), text.substr(inner, j - inner)};
      }
    }
  }
  return std::nullopt;
}

bool TokenNames(std::string_view content, std::string_view what) {
  // DeepSeek spells the separators with U+2581 (▁); some templates with '_'.
  std::string c = ascii::AsciiToLower(content);
  std::string underscored;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.compare(i, 3, "\xE2\x96\x81") == 0) {
      underscored.push_back('_');
      i += 2;
    } else {
      underscored.push_back(c[i]);
    }
  }
  return underscored.find(what) != npos;
}

std::string StripControlTokens(std::string_view text, bool* changed) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t p = text.find_first_of("<\xEF", i);
    if (p == npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, p - i));
    auto token = ParseToken(text, p);
    if (!token) {
      out.push_back(text[p]);
      i = p + 1;
      continue;
    }
    *changed = true;
    i = token->end;
    if (TokenNames(token->content, "tool_calls_begin")) {  // a tool-call section: to its end
      std::size_t end = text.size();
      for (std::size_t q = text.find_first_of("<\xEF", i); q != npos;
           q = text.find_first_of("<\xEF", q + 1)) {
        auto t = ParseToken(text, q);
        if (t && TokenNames(t->content, "tool_calls_end")) {
          end = t->end;
          break;
        }
      }
      i = end;
    }
  }
  return out;
}

// ---- downgraded scaffolding lines -------------------------------------------------------------

bool IsScaffoldLine(std::string_view line) {
  std::size_t b = line.find_first_not_of(" \t");
  if (b == npos) return false;
  return StartsWithCI(line, b, "[tool call:") || StartsWithCI(line, b, "[tool result") ||
         StartsWithCI(line, b, "[historical context");
}

bool IsBlankLine(std::string_view line) { return line.find_first_not_of(" \t\r\n") == npos; }

std::string StripScaffoldLines(std::string_view text, bool* changed) {
  std::string out;
  bool skipping = false;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t nl = text.find('\n', i);
    std::size_t end = nl == npos ? text.size() : nl + 1;
    std::string_view line = text.substr(i, end - i);
    i = end;
    if (skipping && !IsBlankLine(line)) continue;
    skipping = false;
    if (IsScaffoldLine(line)) {
      skipping = true;
      *changed = true;
      continue;
    }
    out.append(line);
  }
  return out;
}

// Collapses runs of blank lines into one and trims the text.
std::string Tidy(std::string_view text) {
  std::string out;
  bool previous_blank = false;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t nl = text.find('\n', i);
    std::size_t end = nl == npos ? text.size() : nl + 1;
    std::string_view line = text.substr(i, end - i);
    i = end;
    bool blank = IsBlankLine(line);
    if (blank && previous_blank) continue;
    previous_blank = blank;
    if (!blank) {
      out.append(line);
    } else if (nl != npos) {
      out.push_back('\n');
    }
  }
  std::size_t b = out.find_first_not_of(" \t\r\n");
  if (b == npos) return "";
  std::size_t e = out.find_last_not_of(" \t\r\n");
  return out.substr(b, e - b + 1);
}

}  // namespace

std::string StripScaffolding(std::string_view text) {
  bool changed = false;
  std::string s = StripControlTokens(text, &changed);
  s = StripBlocks(s, &changed);
  s = StripScaffoldLines(s, &changed);
  return changed ? Tidy(s) : s;
}

// ---- redaction --------------------------------------------------------------------------------

namespace {

bool KeyChar(char c) { return IsAlnum(c) || c == '_' || c == '-'; }
bool WordChar(char c) { return IsAlnum(c) || c == '_'; }
bool SlackChar(char c) { return IsAlnum(c) || c == '-'; }
bool UpperAlnum(char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool TokenChar(char c) {
  return IsAlnum(c) || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' || c == '=' ||
         c == '-';
}

struct PrefixRule {
  std::string_view prefix;
  bool (*body)(char);
  std::size_t min_len;
  bool exact;  // exactly min_len body characters (AWS access key ids)
};
constexpr PrefixRule kPrefixRules[] = {
    {"sk-", KeyChar, 20, false},      {"sk_live_", IsAlnum, 16, false},
    {"sk_test_", IsAlnum, 16, false}, {"rk_live_", IsAlnum, 16, false},
    {"ghp_", IsAlnum, 20, false},     {"gho_", IsAlnum, 20, false},
    {"ghu_", IsAlnum, 20, false},     {"ghs_", IsAlnum, 20, false},
    {"ghr_", IsAlnum, 20, false},     {"github_pat_", WordChar, 20, false},
    {"glpat-", KeyChar, 20, false},   {"xoxa-", SlackChar, 10, false},
    {"xoxb-", SlackChar, 10, false},  {"xoxe-", SlackChar, 10, false},
    {"xoxp-", SlackChar, 10, false},  {"xoxr-", SlackChar, 10, false},
    {"xoxs-", SlackChar, 10, false},  {"xapp-", SlackChar, 10, false},
    {"AKIA", UpperAlnum, 16, true},   {"ASIA", UpperAlnum, 16, true},
    {"AIza", KeyChar, 30, false},     {"hf_", IsAlnum, 30, false},
    {"npm_", IsAlnum, 36, false},
};

std::size_t RunOf(std::string_view text, std::size_t from, bool (*body)(char)) {
  std::size_t j = from;
  while (j < text.size() && body(text[j])) ++j;
  return j - from;
}

// Each matcher returns how many bytes of text[i…] it consumed (0: no match) and appends the
// replacement to *out.
std::size_t MatchPrefixKey(std::string_view text, std::size_t i, std::string* out) {
  for (const PrefixRule& rule : kPrefixRules) {
    if (text.compare(i, rule.prefix.size(), rule.prefix) != 0) continue;
    std::size_t body = i + rule.prefix.size();
    std::size_t len = RunOf(text, body, rule.body);
    if (len < rule.min_len) continue;
    if (rule.exact && (len != rule.min_len)) continue;
    // Generated keys are random: a short body without a digit is a word (`sk-learn-…`).
    auto digit = [](char c) { return c >= '0' && c <= '9'; };
    std::string_view run = text.substr(body, len);
    if (len < 32 && std::none_of(run.begin(), run.end(), digit)) continue;
    out->append(kRedacted);
    return rule.prefix.size() + len;
  }
  return 0;
}

std::size_t MatchJwt(std::string_view text, std::size_t i, std::string* out) {
  if (text.compare(i, 3, "eyJ") != 0) return 0;
  std::size_t len = RunOf(text, i, [](char c) { return KeyChar(c) || c == '.'; });
  std::string_view run = text.substr(i, len);
  std::size_t dot1 = run.find('.');
  if (dot1 == npos || run.compare(dot1 + 1, 3, "eyJ") != 0) return 0;
  std::size_t dot2 = run.find('.', dot1 + 1);
  if (dot2 == npos || len < 30 || dot2 + 4 > len) return 0;
  out->append(kRedacted);
  return len;
}

std::size_t MatchBearer(std::string_view text, std::size_t i, std::string* out) {
  if (!StartsWithCI(text, i, "bearer")) return 0;
  std::size_t j = i + 6;
  std::size_t spaces = j;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  if (j == spaces) return 0;
  std::size_t len = RunOf(text, j, TokenChar);
  if (len < 16 || text.compare(j, 10, kRedacted) == 0) return 0;
  out->append(text.substr(i, j - i)).append(kRedacted);
  return j + len - i;
}

std::size_t MatchPem(std::string_view text, std::size_t i, std::string* out) {
  if (text.compare(i, 11, "-----BEGIN ") != 0) return 0;
  std::size_t line_end = std::min({text.find('\n', i), text.size(), i + 80});
  std::size_t label = text.find("PRIVATE KEY-----", i);
  if (label == npos || label > line_end) return 0;
  std::size_t end = text.size();
  std::size_t end_marker = text.find("-----END", label);
  if (end_marker != npos) {
    std::size_t close = text.find("PRIVATE KEY-----", end_marker);
    if (close != npos) end = close + 16;
  }
  out->append(kRedacted);
  return end - i;
}

std::size_t MatchUrlPassword(std::string_view text, std::size_t i, std::string* out) {
  if (text.compare(i, 3, "://") != 0) return 0;
  std::size_t begin = i + 3;
  std::size_t limit = std::min(text.size(), begin + 256);
  std::size_t at = npos;
  for (std::size_t j = begin; j < limit; ++j) {
    char c = text[j];
    if (c == '@') {
      at = j;
      break;
    }
    if (IsJsonSpace(c) || c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' ||
        c == '>' || c == '\\') {
      break;
    }
  }
  if (at == npos) return 0;
  std::size_t colon = text.find(':', begin);
  if (colon == npos || colon + 1 >= at) return 0;
  if (text.substr(colon + 1, at - colon - 1) == kRedacted) return 0;
  out->append(text.substr(i, colon + 1 - i)).append(kRedacted).append("@");
  return at + 1 - i;
}

bool IsIdentChar(char c) { return IsAlnum(c) || c == '_' || c == '-'; }

// Minimum value length per name: short enough for "hunter2", long enough that
// `max_token: 4096` is left alone.
std::size_t SecretNameMinValue(std::string_view ident) {
  std::string id = ascii::AsciiToLower(ident);
  auto ends = [&](std::string_view s) {
    return id.size() >= s.size() && id.compare(id.size() - s.size(), s.size(), s) == 0;
  };
  for (std::string_view s : {"password", "passwd", "secret", "apikey", "api_key", "api-key",
                             "access_key", "accesskey", "private_key", "privatekey"}) {
    if (ends(s)) return 4;
  }
  if (id == "pwd") return 4;
  if (id == "token" || ends("_token") || ends("-token") || ends("accesstoken") ||
      ends("authtoken")) {
    return 8;
  }
  return 0;
}

std::size_t MatchAssignment(std::string_view text, std::size_t i, std::string* out) {
  if (i > 0 && IsIdentChar(text[i - 1])) return 0;
  std::size_t ident_len = RunOf(text, i, IsIdentChar);
  if (ident_len == 0 || ident_len > 64) return 0;
  std::size_t min_value = SecretNameMinValue(text.substr(i, ident_len));
  if (min_value == 0) return 0;
  std::size_t j = i + ident_len;
  if (j < text.size() && (text[j] == '"' || text[j] == '\'')) ++j;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  if (j >= text.size() || (text[j] != ':' && text[j] != '=')) return 0;
  ++j;
  while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
  std::size_t value = j;
  std::size_t value_end;
  if (j < text.size() && (text[j] == '"' || text[j] == '\'')) {
    value = j + 1;
    value_end = text.find(text[j], value);
    if (value_end == npos || value_end - value > 512 ||
        text.substr(value, value_end - value).find('\n') != npos) {
      return 0;
    }
  } else {
    value_end = value;
    while (value_end < text.size() && !IsJsonSpace(text[value_end]) &&
           std::string_view(",;\"'&})]<").find(text[value_end]) == npos) {
      ++value_end;
    }
  }
  if (value_end - value < min_value || text.compare(value, 10, kRedacted) == 0) return 0;
  out->append(text.substr(i, value - i)).append(kRedacted);
  return value_end - i;
}

std::size_t MatchSecret(std::string_view text, std::size_t i, std::string* out) {
  char c = text[i];
  bool boundary = i == 0 || !IsAlnum(text[i - 1]);
  std::size_t n = 0;
  if (boundary && (n = MatchPrefixKey(text, i, out)) > 0) return n;
  if (boundary && c == 'e' && (n = MatchJwt(text, i, out)) > 0) return n;
  if (boundary && (c == 'b' || c == 'B') && (n = MatchBearer(text, i, out)) > 0) return n;
  if (c == '-' && (n = MatchPem(text, i, out)) > 0) return n;
  if (c == ':' && (n = MatchUrlPassword(text, i, out)) > 0) return n;
  if (IsIdentChar(c) && (n = MatchAssignment(text, i, out)) > 0) return n;
  return 0;
}

}  // namespace

std::string RedactSecrets(std::string_view text, bool* redacted) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t n = MatchSecret(text, i, &out);
    if (n > 0) {
      *redacted = true;
      i += n;
    } else {
      out.push_back(text[i++]);
    }
  }
  return out;
}

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

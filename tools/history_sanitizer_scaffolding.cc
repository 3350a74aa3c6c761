// sessions_history's step 1 (tools/history_sanitizer.h): StripScaffolding — block tags,
// control tokens and downgraded scaffolding lines, each found by its own scanner.
#include <algorithm>
#include <optional>
#include <string>
#include <string_view>

#include "base/ascii.h"
#include "tools/history_sanitizer.h"

// Everything here is a hand-written linear scanner rather than std::regex: transcripts are
// hostile input of any size, and libstdc++'s regex recurses per character (a long message
// overflows the stack) and is slow enough to dominate sessions_history.

namespace statewatch::tools {

namespace {

constexpr std::size_t npos = std::string_view::npos;

using ascii::IsAlnum;
using ascii::IsJsonSpace;

// The text with what `skip` removes taken out. `skip(text, pos, &out)` is asked at each
// byte of `starts` that copying reaches: it returns where copying resumes (past what it
// removes; it may also drop what `out` holds), or npos when nothing removable starts at `pos`
// and that byte is kept. Sets *changed when anything was removed.
using SkipFn = std::size_t (*)(std::string_view text, std::size_t pos, std::string* out);

std::string CopyStripping(std::string_view text, std::string_view starts, bool* changed,
                          SkipFn skip) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t p = text.find_first_of(starts, i);
    if (p == npos) {
      out.append(text.substr(i));
      break;
    }
    out.append(text.substr(i, p - i));
    std::size_t resume = skip(text, p, &out);
    if (resume == npos) {
      out.push_back(text[p]);
      i = p + 1;
    } else {
      *changed = true;
      i = resume;
    }
  }
  return out;
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

// Where copying resumes after the tag at `lt` and what it encloses, or npos when no tag
// starts there.
std::size_t SkipTag(std::string_view text, std::size_t lt, std::string* out) {
  auto tag = ParseTag(text, lt);
  if (!tag) return npos;
  std::size_t after = tag->end == npos ? text.size() : tag->end;
  if (tag->spec->kind == TagKind::kUnwrap || tag->self_closing) return after;
  if (tag->closing) {
    // A stray `</think>`: what came before it was reasoning whose opener the model omitted.
    if (tag->spec->kind == TagKind::kReasoning) out->clear();
    return after;
  }
  return tag->end == npos ? text.size() : MatchingCloseEnd(text, after, tag->spec);
}

std::string StripBlocks(std::string_view text, bool* changed) {
  return CopyStripping(text, "<", changed, SkipTag);
}

// ---- control tokens -------------------------------------------------------------------------

constexpr std::string_view kFwBar = "\xEF\xBD\x9C";  // ｜ U+FF5C
constexpr std::string_view kFwLt = "\xEF\xBC\x9C";   // ＜ U+FF1C
constexpr std::string_view kFwGt = "\xEF\xBC\x9E";   // ＞ U+FF1E
constexpr std::size_t kMaxTokenBytes = 128;
// The first bytes a control token can start with: `<` and the lead byte of ＜.
constexpr std::string_view kTokenStarts = "<\xEF";

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

// Where copying resumes after the control token at `p` (after a whole tool-call section
// when it opens one), or npos when no token starts there.
std::size_t SkipToken(std::string_view text, std::size_t p, std::string* /*out*/) {
  auto token = ParseToken(text, p);
  if (!token) return npos;
  if (!TokenNames(token->content, "tool_calls_begin")) return token->end;
  for (std::size_t q = text.find_first_of(kTokenStarts, token->end); q != npos;
       q = text.find_first_of(kTokenStarts, q + 1)) {
    auto t = ParseToken(text, q);
    if (t && TokenNames(t->content, "tool_calls_end")) return t->end;
  }
  return text.size();  // an unclosed section runs to the end
}

std::string StripControlTokens(std::string_view text, bool* changed) {
  return CopyStripping(text, kTokenStarts, changed, SkipToken);
}

// ---- downgraded scaffolding lines -------------------------------------------------------------

bool IsScaffoldLine(std::string_view line) {
  std::size_t b = line.find_first_not_of(" \t");
  if (b == npos) return false;
  return ascii::StartsWithIgnoreCase(line.substr(b), "[tool call:") ||
         ascii::StartsWithIgnoreCase(line.substr(b), "[tool result") ||
         ascii::StartsWithIgnoreCase(line.substr(b), "[historical context");
}

bool IsBlankLine(std::string_view line) { return line.find_first_not_of(" \t\r\n") == npos; }

// The line of `text` that starts at *pos, with its '\n' when it has one; moves *pos past it.
std::string_view NextLine(std::string_view text, std::size_t* pos) {
  std::size_t nl = text.find('\n', *pos);
  std::size_t end = nl == npos ? text.size() : nl + 1;
  std::string_view line = text.substr(*pos, end - *pos);
  *pos = end;
  return line;
}

std::string StripScaffoldLines(std::string_view text, bool* changed) {
  std::string out;
  bool skipping = false;
  for (std::size_t i = 0; i < text.size();) {
    std::string_view line = NextLine(text, &i);
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
  for (std::size_t i = 0; i < text.size();) {
    std::string_view line = NextLine(text, &i);
    bool blank = IsBlankLine(line);
    if (blank && previous_blank) continue;
    previous_blank = blank;
    if (!blank) {
      out.append(line);
    } else if (line.back() == '\n') {
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

}  // namespace statewatch::tools

// sessions_history's step 2 (tools/history_sanitizer.h): RedactSecrets — the rules
// (key prefixes, JWTs, bearer tokens, PEM keys, URL passwords, secret-named assignments), each
// a matcher tried at every position of one linear scan.
#include <algorithm>
#include <initializer_list>
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
  if (!ascii::StartsWithIgnoreCase(text.substr(i), "bearer")) return 0;
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

}  // namespace statewatch::tools

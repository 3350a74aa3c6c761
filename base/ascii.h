// ASCII text helpers: the one place the tree trims, lower-cases and compares without case.
// Locale-free on purpose: std::tolower and std::isspace follow the process locale, so a
// gateway that calls setlocale() would change which session keys, agent ids and header values
// match. Every byte outside A-Z (including non-ASCII UTF-8) is left as it is.
//
// Which characters count as space depends on the format being read, so Trim takes the set:
//   kSpace      " \t\n\v\f\r"  what std::isspace accepts in the "C" locale (the default)
//   kJsonSpace  " \t\n\r"      JSON's insignificant whitespace; what tool parameters call blank
//   kHttpSpace  " \t"          HTTP's optional whitespace around header values (RFC 9110 OWS)
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_BASE_ASCII_H_
#define STATEWATCH_BASE_ASCII_H_

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace statewatch::ascii {

inline constexpr std::string_view kSpace = " \t\n\v\f\r";
inline constexpr std::string_view kJsonSpace = " \t\n\r";
inline constexpr std::string_view kHttpSpace = " \t";

// `c` is one of kSpace.
constexpr bool IsSpace(char c) { return kSpace.find(c) != std::string_view::npos; }
// `c` is one of kJsonSpace.
constexpr bool IsJsonSpace(char c) { return kJsonSpace.find(c) != std::string_view::npos; }
constexpr bool IsDigit(char c) { return c >= '0' && c <= '9'; }
constexpr bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c);
}

// `c` with A-Z lower-cased; any other byte unchanged.
constexpr char ToLower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// `s` with A-Z lower-cased; any other byte unchanged.
inline std::string AsciiToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = ToLower(c);
  return out;
}

// `a` and `b` are equal once A-Z are lower-cased.
constexpr bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ToLower(a[i]) != ToLower(b[i])) return false;
  }
  return true;
}

// `s` starts with `prefix`, A-Z compared without case.
constexpr bool StartsWithIgnoreCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsIgnoreCase(s.substr(0, prefix.size()), prefix);
}

// `s` without the leading and trailing characters of `space`; empty when nothing else is
// left. The result views `s`.
constexpr std::string_view Trim(std::string_view s, std::string_view space = kSpace) {
  std::size_t begin = s.find_first_not_of(space);
  if (begin == std::string_view::npos) return {};
  std::size_t end = s.find_last_not_of(space);
  return s.substr(begin, end - begin + 1);
}

// `s` as a base-10 unsigned integer when it is one whole (digits only, no sign or space,
// within uint64_t); nullopt otherwise.
inline std::optional<uint64_t> ParseDecimal(std::string_view s) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

}  // namespace statewatch::ascii

#endif  // STATEWATCH_BASE_ASCII_H_

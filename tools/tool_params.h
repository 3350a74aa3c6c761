// The readers of session-tool parameters (semantics.md §9), shared by session_status /
// sessions_list (tools/session_tools.cc), sessions_history (tools/session_history.cc) and the
// messaging tools (tools/session_messaging.cc), plus the case-insensitive name tables of the
// tool settings (tools/visibility.cc, tools/tool_profiles.cc).
//
// Conventions every reader follows:
//   - an absent parameter, a JSON null and a blank string (only " \t\r\n") all mean "not
//     given": agents fill optional parameters with "" as often as they leave them out;
//   - a given parameter of the wrong type or out of range is InvalidArgument, with a message
//     tests check byte for byte (`<name> must be a string`, `<name> must be a boolean`, ...);
//   - "blank" and "trim" always mean the four characters " \t\r\n"; "lower-case" is ASCII
//     only (A-Z), independent of the locale.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_TOOLS_TOOL_PARAMS_H_
#define STATEWATCH_TOOLS_TOOL_PARAMS_H_

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "statewatch/status.h"

namespace statewatch::tools {

// ---- strings ---------------------------------------------------------------------------------

// `s` without leading and trailing " \t\r\n"; "" for a blank `s`.
std::string Trim(std::string_view s);

// `s` with A-Z lower-cased; every other byte (including non-ASCII) unchanged.
std::string Lower(std::string_view s);

// ---- parameters ------------------------------------------------------------------------------

// The parameter `name` of `params`, or nullptr when it is not given (absent, null or a blank
// string). A non-blank string is returned as is (untrimmed).
const boost::json::value* Param(const boost::json::object& params, std::string_view name);

// An integer given as a JSON number — any int64 (not bounded), a uint64 up to kMaxSafeInteger,
// or a finite integral double of magnitude at most kMaxSafeInteger — or as a string of 1 to 15
// decimal digits, surrounding " \t\r\n" allowed (no sign, no exponent). Nullopt for anything
// else, including a blank string.
std::optional<int64_t> IntegerValue(const boost::json::value& v);

// A string parameter, trimmed; nullopt when not given. InvalidArgument
// `<name> must be a string` when it is not a string.
Result<std::optional<std::string>> StringParam(const boost::json::object& params,
                                               std::string_view name);

// A boolean parameter (true / false only); nullopt when not given. InvalidArgument
// `<name> must be a boolean` for anything else.
Result<std::optional<bool>> BoolParam(const boost::json::object& params, std::string_view name);

// An integer parameter (IntegerValue) in [min, max]; nullopt when not given. Anything else is
// InvalidArgument with exactly `message`.
Result<std::optional<int64_t>> IntegerParam(const boost::json::object& params,
                                            std::string_view name, int64_t min, int64_t max,
                                            std::string_view message);

// As above with the message `<name> must be an integer from <min> to <max>`.
Result<std::optional<int64_t>> IntegerParam(const boost::json::object& params,
                                            std::string_view name, int64_t min, int64_t max);

// A string parameter that must be one of `allowed` (lower-case names; the value is trimmed
// and compared case-insensitively) and is returned lower-cased; nullopt when not given.
// Anything else — another string or a non-string — is InvalidArgument
// `<what> (got <DescribeJson(value)>)`.
Result<std::optional<std::string>> EnumParam(const boost::json::object& params,
                                             std::string_view name,
                                             std::initializer_list<std::string_view> allowed,
                                             const std::string& what);

// Moves the value of an OK `r` into `*out` and returns OK; otherwise returns r's status and
// leaves `*out` alone. For chains of readers under SW_RETURN_IF_ERROR.
template <typename T>
Status Assign(Result<T> r, T* out) {
  if (!r.ok()) return r.status();
  *out = std::move(*r);
  return Status::OK();
}

// ---- name tables -----------------------------------------------------------------------------

// One row of the table that names the values of a settings enum.
template <typename E>
struct NamedValue {
  E value;
  const char* name;  // lower-case
};

// The name of `value` in `table`; `fallback` when no row has it (an out-of-range enum).
template <typename E, std::size_t N>
const char* NameOf(const NamedValue<E> (&table)[N], E value, const char* fallback) {
  for (const NamedValue<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return fallback;
}

// The value whose name is `text`, compared case-insensitively (no trimming); nullopt when no
// row matches.
template <typename E, std::size_t N>
std::optional<E> ValueNamed(const NamedValue<E> (&table)[N], std::string_view text) {
  const std::string lower = Lower(text);
  for (const NamedValue<E>& row : table) {
    if (lower == row.name) return row.value;
  }
  return std::nullopt;
}

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_TOOL_PARAMS_H_

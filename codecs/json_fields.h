// The one set of JSON field readers: every session tool's parameters (docs/semantics.md,
// "Session tools") and every gateway body the daemon and the CLI read (registry upserts,
// events, transcript messages, run replies, upstream links) go through these, so that a
// field is refused the same way, with the same words, wherever it arrives.
//
// Two styles, because agents and gateways write JSON differently:
//   FieldStyle::kToolParam — what an agent passes to a tool. Absent, null and a blank
//     string (only " \t\r\n") all mean "not given": agents fill optional parameters with ""
//     as often as they leave them out. Integers may come as decimal strings ("12").
//   FieldStyle::kBody — what a gateway sends. Absent and null mean "not given"; a string is
//     taken as written (an empty string is a value); integers must be JSON numbers.
//
// Every refusal is InvalidArgument naming the field and showing the value:
// `timeoutSeconds must be an integer from 0 to 86400 (got -1)`. The few refusals semantics.md
// spells out byte for byte (`changesSince must be a non-negative integer`,
// `limit must be a positive integer`) are passed in as the exact message instead.
//
// Integers are the JSON-safe ones: |n| <= 2^53 - 1, given as an integer, as a double without
// fraction (12.0) or — tool parameters only — as a string of 1 to 16 decimal digits with
// surrounding " \t\r\n" (no sign, no exponent). Anything beyond is refused rather than
// rounded, so no reader ever sees a value a JavaScript producer could not have meant.
//
// "Blank" and "trim" always mean the four characters " \t\r\n"; "lower-case" is ASCII only.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CODECS_JSON_FIELDS_H_
#define STATEWATCH_CODECS_JSON_FIELDS_H_

#include <boost/json.hpp>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "base/ascii.h"
#include "statewatch/status.h"

namespace statewatch::tools {

// The largest integer a JSON (IEEE double) consumer represents exactly: 2^53 - 1.
inline constexpr uint64_t kMaxSafeInteger = (uint64_t{1} << 53) - 1;
inline constexpr int64_t kMaxSafeInt = static_cast<int64_t>(kMaxSafeInteger);

enum class FieldStyle { kToolParam, kBody };

// ---- strings ---------------------------------------------------------------------------------

// `s` without leading and trailing " \t\r\n" (ascii::kJsonSpace, the blank of a tool
// parameter); "" for a blank `s`. Lower-case with ascii::AsciiToLower.
inline std::string Trim(std::string_view s) {
  return std::string(ascii::Trim(s, ascii::kJsonSpace));
}
// A short rendering of a value for error messages: its JSON text, cut to 64 bytes on a UTF-8
// boundary ("..." appended when cut).
std::string DescribeJson(const boost::json::value& value);

// ---- values ----------------------------------------------------------------------------------

// The field `name` of `o`, or nullptr when it is not given (see the styles above). A string
// is returned as is (untrimmed).
const boost::json::value* Field(const boost::json::object& o, std::string_view name,
                                FieldStyle style);
// Field(params, name, kToolParam).
const boost::json::value* Param(const boost::json::object& params, std::string_view name);

// The integer `v` holds (see the file comment); nullopt for anything else. Strings count only
// with `allow_strings`.
std::optional<int64_t> IntegerValue(const boost::json::value& v, bool allow_strings = true);

// ---- tool parameters (FieldStyle::kToolParam) ------------------------------------------------

// A string parameter, trimmed; nullopt when not given. `<name> must be a string (got X)`.
Result<std::optional<std::string>> StringParam(const boost::json::object& params,
                                               std::string_view name);

// true / false only; nullopt when not given. `<name> must be a boolean (got X)`.
Result<std::optional<bool>> BoolParam(const boost::json::object& params, std::string_view name);

// An integer in [min, max]; nullopt when not given. Anything else is refused with exactly
// `message` (for the byte-exact refusals of semantics.md).
Result<std::optional<int64_t>> IntegerParam(const boost::json::object& params,
                                            std::string_view name, int64_t min, int64_t max,
                                            std::string_view message);
// As above, refused with `<name> must be an integer from <min> to <max> (got X)`.
Result<std::optional<int64_t>> IntegerParam(const boost::json::object& params,
                                            std::string_view name, int64_t min, int64_t max);

// A string that must be one of `allowed` (lower-case names; compared trimmed and
// case-insensitively), returned lower-cased; nullopt when not given. Anything else is
// `<what> (got X)`.
Result<std::optional<std::string>> EnumParam(const boost::json::object& params,
                                             std::string_view name,
                                             std::initializer_list<std::string_view> allowed,
                                             const std::string& what);

// Refuses a parameter the tool does not take, so that an agent never believes a misspelt or
// unsupported option had an effect:
// `Unknown parameter for session_status: modle (session_status takes sessionKey, changesSince,
//  model)`.
Status CheckKnownParams(const boost::json::object& params, std::string_view tool,
                        std::initializer_list<std::string_view> known);

// ---- gateway bodies (FieldStyle::kBody) ------------------------------------------------------

// Refuses a member of a body that its reader does not take, so that a misspelt field never
// reads as applied and nothing is written: `unknown field wacthers (known: sessionKey, kind)`.
// A name is quoted as DescribeJson quotes strings when it is not a plain identifier, and
// shortened past 64 bytes. `parent` names a nested object's member: with "upstreamRef", the
// message says `unknown field upstreamRef.paht (known: path)`.
Status CheckKnownFields(const boost::json::object& o, std::span<const std::string_view> known,
                        std::string_view parent = {});
inline Status CheckKnownFields(const boost::json::object& o,
                               std::initializer_list<std::string_view> known,
                               std::string_view parent = {}) {
  return CheckKnownFields(o, std::span<const std::string_view>(known.begin(), known.size()),
                          parent);
}

// A string field, untrimmed; nullopt when absent or null. `<name> must be a string (got X)`.
Result<std::optional<std::string>> StringField(const boost::json::object& o, std::string_view name);
// A non-empty string: `<name> is required` when absent or null,
// `<name> must be a non-empty string (got X)` otherwise.
Result<std::string> RequiredStringField(const boost::json::object& o, std::string_view name);
// true / false; nullopt when absent or null. `<name> must be a boolean (got X)`.
Result<std::optional<bool>> BoolField(const boost::json::object& o, std::string_view name);
// A JSON integer in [min, max]; nullopt when absent or null. `<name> must be <what> (got X)`,
// e.g. what = "a non-negative integer".
Result<std::optional<int64_t>> IntegerField(const boost::json::object& o, std::string_view name,
                                            int64_t min, int64_t max, std::string_view what);

// ---- helpers ---------------------------------------------------------------------------------

// Moves the value of an OK `r` into `*out` and returns OK; otherwise returns r's status and
// leaves `*out` alone. For chains of readers under SW_RETURN_IF_ERROR.
template <typename T>
Status Assign(Result<T> r, T* out) {
  if (!r.ok()) return r.status();
  *out = std::move(*r);
  return Status::OK();
}

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
  const std::string lower = ascii::AsciiToLower(text);
  for (const NamedValue<E>& row : table) {
    if (lower == row.name) return row.value;
  }
  return std::nullopt;
}

}  // namespace statewatch::tools

#endif  // STATEWATCH_CODECS_JSON_FIELDS_H_

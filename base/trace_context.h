// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` header a
// gateway sends with a write, kept with the event it produced and handed on with the
// deliveries that write caused, so that the gateway's trace continues through statewatch.
//
//   traceparent = version "-" trace-id "-" parent-id "-" trace-flags
//   version     = 2 lower-case hex digits, not "ff"
//   trace-id    = 32 lower-case hex digits, not all zero
//   parent-id   = 16 lower-case hex digits, not all zero
//   trace-flags = 2 lower-case hex digits
//
// Version 00 is exactly these 55 characters. A later version may append fields after a
// further "-" (the spec's forward-compatibility rule): such a value is understood as its
// first four fields and handed on as version 00, the version this code speaks. Anything else
// (upper-case hex, a wrong length, all-zero ids, version ff) is invalid; the HTTP edge then
// ignores the header, as the spec tells a receiver to, and the write carries no trace context.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_BASE_TRACE_CONTEXT_H_
#define STATEWATCH_BASE_TRACE_CONTEXT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace statewatch::trace {

inline constexpr std::size_t kTraceparentSize = 55;

namespace internal {

constexpr bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

constexpr bool AllZero(std::string_view s) { return s.find_first_not_of('0') == s.npos; }

}  // namespace internal

// The value as version 00, or nullopt when it is not a valid traceparent. Leading and trailing
// spaces and tabs (HTTP's optional whitespace) are ignored.
inline std::optional<std::string> NormalizeTraceparent(std::string_view value) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.size() < kTraceparentSize) return std::nullopt;
  std::string_view version = value.substr(0, 2);
  std::string_view trace_id = value.substr(3, 32);
  std::string_view parent_id = value.substr(36, 16);
  std::string_view flags = value.substr(53, 2);
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  if (!internal::IsLowerHex(version) || version == "ff") return std::nullopt;
  if (version == "00" ? value.size() != kTraceparentSize
                      : value.size() > kTraceparentSize && value[kTraceparentSize] != '-') {
    return std::nullopt;
  }
  if (!internal::IsLowerHex(trace_id) || internal::AllZero(trace_id)) return std::nullopt;
  if (!internal::IsLowerHex(parent_id) || internal::AllZero(parent_id)) return std::nullopt;
  if (!internal::IsLowerHex(flags)) return std::nullopt;
  std::string out = "00-";
  out.append(trace_id).append("-").append(parent_id).append("-").append(flags);
  return out;
}

inline bool IsValidTraceparent(std::string_view value) {
  return NormalizeTraceparent(value).has_value();
}

// The trace-id of a valid traceparent (REQUIRES: NormalizeTraceparent accepted it).
inline std::string_view TraceIdOf(std::string_view normalized) { return normalized.substr(3, 32); }

}  // namespace statewatch::trace

#endif  // STATEWATCH_BASE_TRACE_CONTEXT_H_

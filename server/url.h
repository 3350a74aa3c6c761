// URL pieces of the daemon's routes: splitting a request target into path and query,
// percent-decoding a path segment or a query value, and finding a query parameter.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_SERVER_URL_H_
#define STATEWATCH_SERVER_URL_H_

#include <optional>
#include <string>
#include <string_view>

namespace statewatch::server {

struct Target {
  std::string_view path;   // before '?'
  std::string_view query;  // after '?', without it; empty when none
};
Target SplitTarget(std::string_view target);

// Percent-decodes `text`; in a query value (`plus_is_space`) '+' is a space. Nullopt for a
// malformed escape ("%4", "%zz") or a decoded NUL byte.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

// Percent-encodes everything but the unreserved characters (A-Z a-z 0-9 - . _ ~) and ':',
// so that a session key is one path segment or query value.
std::string PercentEncode(std::string_view text);

// The decoded value of the first `name=value` pair of `query`; an empty optional when the
// parameter is absent. A parameter given without '=' has the value "". Malformed escapes
// make the result nullopt too, and set *malformed.
std::optional<std::string> QueryParam(std::string_view query, std::string_view name,
                                      bool* malformed = nullptr);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_URL_H_

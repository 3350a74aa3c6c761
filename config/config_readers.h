// The value readers every section of the configuration file uses (config/config_file.h,
// guards_config.h, webhooks_config.h), so that each refusal reads the same way and names the
// path of the key in the file:
//   `webhooks.maxOutbox must be an integer from 1 to 10000000 (got 0)`
//   `unknown key guards.send.rate (known: perMinute, burst)`
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CONFIG_CONFIG_READERS_H_
#define STATEWATCH_CONFIG_CONFIG_READERS_H_

#include <boost/json.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "statewatch/status.h"

namespace statewatch::tools::config_read {

// InvalidArgument "<path> must be <expected> (got <the value as JSON>)".
Status Bad(const std::string& path, std::string_view expected, const boost::json::value& v);

// The object at `path` (empty: the document's root), every key of it one of `known`.
Result<const boost::json::object*> Object(const boost::json::value& v, const std::string& path,
                                          std::initializer_list<std::string_view> known);

// An integer (not a string of digits) in [min, max].
Result<int64_t> Int(const boost::json::value& v, const std::string& path, int64_t min, int64_t max);

// true or false.
Result<bool> Bool(const boost::json::value& v, const std::string& path);

}  // namespace statewatch::tools::config_read

#endif  // STATEWATCH_CONFIG_CONFIG_READERS_H_

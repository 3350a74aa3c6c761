#include "config/config_readers.h"

#include <algorithm>
#include <optional>

#include "codecs/json_fields.h"

namespace statewatch::tools::config_read {
namespace json = boost::json;

Status Bad(const std::string& path, std::string_view expected, const json::value& v) {
  return Status::InvalidArgument(path + " must be " + std::string(expected) + " (got " +
                                 DescribeJson(v) + ")");
}

Result<const json::object*> Object(const json::value& v, const std::string& path,
                                   std::initializer_list<std::string_view> known) {
  if (!v.is_object()) return Bad(path, "an object", v);
  for (const auto& entry : v.as_object()) {
    if (std::find(known.begin(), known.end(), entry.key()) != known.end()) continue;
    std::string list;
    for (std::string_view k : known) list += (list.empty() ? "" : ", ") + std::string(k);
    std::string at =
        path.empty() ? std::string(entry.key()) : path + "." + std::string(entry.key());
    return Status::InvalidArgument("unknown key " + at + " (known: " + list + ")");
  }
  return &v.as_object();
}

Result<int64_t> Int(const json::value& v, const std::string& path, int64_t min, int64_t max) {
  std::optional<int64_t> n = IntegerValue(v, /*allow_strings=*/false);
  if (!n || *n < min || *n > max) {
    return Bad(path, "an integer from " + std::to_string(min) + " to " + std::to_string(max), v);
  }
  return *n;
}

Result<bool> Bool(const json::value& v, const std::string& path) {
  if (!v.is_bool()) return Bad(path, "true or false", v);
  return v.as_bool();
}

}  // namespace statewatch::tools::config_read

#include "tools/tool_params.h"

#include <algorithm>
#include <cmath>

#include "tools/json_codec.h"

namespace statewatch::tools {
namespace json = boost::json;

namespace {

constexpr char kBlank[] = " \t\r\n";

// IntegerParam; `message()` renders the refusal, only when there is one.
template <typename Message>
Result<std::optional<int64_t>> ReadInteger(const json::object& params, std::string_view name,
                                           int64_t min, int64_t max, Message message) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> n = IntegerValue(*v);
  if (!n || *n < min || *n > max) return Status::InvalidArgument(message());
  return n;
}

}  // namespace

std::string Trim(std::string_view s) {
  std::size_t b = s.find_first_not_of(kBlank);
  if (b == std::string_view::npos) return "";
  std::size_t e = s.find_last_not_of(kBlank);
  return std::string(s.substr(b, e - b + 1));
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  return out;
}

const json::value* Param(const json::object& params, std::string_view name) {
  const json::value* v = params.if_contains(name);
  if (v == nullptr || v->is_null()) return nullptr;
  if (v->is_string() && v->as_string().find_first_not_of(kBlank) == json::string::npos) {
    return nullptr;
  }
  return v;
}

std::optional<int64_t> IntegerValue(const json::value& v) {
  if (v.is_int64()) return v.as_int64();
  if (v.is_uint64()) {
    if (v.as_uint64() > kMaxSafeInteger) return std::nullopt;
    return static_cast<int64_t>(v.as_uint64());
  }
  if (v.is_double()) {
    double d = v.as_double();
    if (!std::isfinite(d) || std::trunc(d) != d || std::fabs(d) > double(kMaxSafeInteger)) {
      return std::nullopt;
    }
    return static_cast<int64_t>(d);
  }
  if (v.is_string()) {
    std::string s = Trim(v.as_string());
    if (s.empty() || s.size() > 15) return std::nullopt;  // 15 digits cannot overflow
    int64_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return std::nullopt;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return std::nullopt;
}

Result<std::optional<std::string>> StringParam(const json::object& params, std::string_view name) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Status::InvalidArgument(std::string(name) + " must be a string");
  return std::optional<std::string>(Trim(v->as_string()));
}

Result<std::optional<bool>> BoolParam(const json::object& params, std::string_view name) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_bool()) return Status::InvalidArgument(std::string(name) + " must be a boolean");
  return std::optional<bool>(v->as_bool());
}

Result<std::optional<int64_t>> IntegerParam(const json::object& params, std::string_view name,
                                            int64_t min, int64_t max, std::string_view message) {
  return ReadInteger(params, name, min, max, [&] { return std::string(message); });
}

Result<std::optional<int64_t>> IntegerParam(const json::object& params, std::string_view name,
                                            int64_t min, int64_t max) {
  return ReadInteger(params, name, min, max, [&] {
    return std::string(name) + " must be an integer from " + std::to_string(min) + " to " +
           std::to_string(max);
  });
}

Result<std::optional<std::string>> EnumParam(const json::object& params, std::string_view name,
                                             std::initializer_list<std::string_view> allowed,
                                             const std::string& what) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<std::string>();
  if (v->is_string()) {
    std::string s = Lower(Trim(v->as_string()));
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) {
      return std::optional<std::string>(s);
    }
  }
  return Status::InvalidArgument(what + " (got " + DescribeJson(*v) + ")");
}

}  // namespace statewatch::tools

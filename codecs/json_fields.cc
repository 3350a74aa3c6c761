#include "codecs/json_fields.h"

#include <algorithm>
#include <cmath>
#include <exception>

namespace statewatch::tools {
namespace json = boost::json;

namespace {

constexpr std::size_t kDescribeMaxBytes = 64;

bool IsBlank(std::string_view s) {
  return s.find_first_not_of(ascii::kJsonSpace) == std::string_view::npos;
}

// 1 to 16 decimal digits (2^53 has 16), surrounding blanks allowed; no sign, no exponent: the
// reference accepts "a numeric string", and only plain digits are unambiguous.
std::optional<int64_t> DecimalString(std::string_view text) {
  std::string s = Trim(text);
  if (s.empty() || s.size() > 16) return std::nullopt;
  int64_t n = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  if (n > kMaxSafeInt) return std::nullopt;
  return n;
}

Status Refused(std::string_view name, std::string_view expected, const json::value& v) {
  return Status::InvalidArgument(std::string(name) + " must be " + std::string(expected) +
                                 " (got " + DescribeJson(v) + ")");
}

}  // namespace

std::string DescribeJson(const json::value& value) {
  std::string text;
  try {
    text = json::serialize(value);
  } catch (const std::exception&) {
    return "<unprintable>";
  }
  if (text.size() <= kDescribeMaxBytes) return text;
  std::size_t cut = kDescribeMaxBytes - 3;
  // Never split a UTF-8 sequence: back up over continuation bytes.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "...";
}

const json::value* Field(const json::object& o, std::string_view name, FieldStyle style) {
  const json::value* v = o.if_contains(name);
  if (v == nullptr || v->is_null()) return nullptr;
  if (style == FieldStyle::kToolParam && v->is_string() && IsBlank(v->as_string())) {
    return nullptr;
  }
  return v;
}

const json::value* Param(const json::object& params, std::string_view name) {
  return Field(params, name, FieldStyle::kToolParam);
}

std::optional<int64_t> IntegerValue(const json::value& v, bool allow_strings) {
  if (v.is_int64()) {
    int64_t n = v.as_int64();
    if (n > kMaxSafeInt || n < -kMaxSafeInt) return std::nullopt;
    return n;
  }
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
  if (v.is_string() && allow_strings) return DecimalString(v.as_string());
  return std::nullopt;
}

// ---- tool parameters -------------------------------------------------------------------------

Result<std::optional<std::string>> StringParam(const json::object& params, std::string_view name) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Refused(name, "a string", *v);
  return std::optional<std::string>(Trim(v->as_string()));
}

Result<std::optional<bool>> BoolParam(const json::object& params, std::string_view name) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_bool()) return Refused(name, "a boolean", *v);
  return std::optional<bool>(v->as_bool());
}

Result<std::optional<int64_t>> IntegerParam(const json::object& params, std::string_view name,
                                            int64_t min, int64_t max, std::string_view message) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> n = IntegerValue(*v);
  if (!n || *n < min || *n > max) return Status::InvalidArgument(std::string(message));
  return n;
}

Result<std::optional<int64_t>> IntegerParam(const json::object& params, std::string_view name,
                                            int64_t min, int64_t max) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> n = IntegerValue(*v);
  if (!n || *n < min || *n > max) {
    return Refused(name, "an integer from " + std::to_string(min) + " to " + std::to_string(max),
                   *v);
  }
  return n;
}

Result<std::optional<std::string>> EnumParam(const json::object& params, std::string_view name,
                                             std::initializer_list<std::string_view> allowed,
                                             const std::string& what) {
  const json::value* v = Param(params, name);
  if (v == nullptr) return std::optional<std::string>();
  if (v->is_string()) {
    std::string s = ascii::AsciiToLower(Trim(v->as_string()));
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) {
      return std::optional<std::string>(s);
    }
  }
  return Status::InvalidArgument(what + " (got " + DescribeJson(*v) + ")");
}

namespace {

// "a, b, c"; `none` when there are no names.
std::string JoinedNames(std::span<const std::string_view> names, std::string_view none) {
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return list.empty() ? std::string(none) : list;
}

}  // namespace

Status CheckKnownParams(const json::object& params, std::string_view tool,
                        std::initializer_list<std::string_view> known) {
  for (const auto& entry : params) {
    std::string_view key = entry.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const std::string list = JoinedNames({known.begin(), known.size()}, "no parameters");
    return Status::InvalidArgument("Unknown parameter for " + std::string(tool) + ": " +
                                   std::string(key) + " (" + std::string(tool) + " takes " + list +
                                   ")");
  }
  return Status::OK();
}

// ---- gateway bodies --------------------------------------------------------------------------

Status CheckKnownFields(const json::object& o, std::span<const std::string_view> known,
                        std::string_view parent) {
  for (const auto& entry : o) {
    std::string_view key = entry.key();
    if (std::find(known.begin(), known.end(), key) != known.end()) continue;
    const bool plain = !key.empty() && key.size() <= 64 &&
                       std::all_of(key.begin(), key.end(), [](char c) {
                         return ascii::IsAlnum(c) || c == '_' || c == '-' || c == '.';
                       });
    return Status::InvalidArgument(
        "unknown field " + (parent.empty() ? "" : std::string(parent) + ".") +
        (plain ? std::string(key) : DescribeJson(json::string(key))) +
        " (known: " + JoinedNames(known, "none") + ")");
  }
  return Status::OK();
}

Result<std::optional<std::string>> StringField(const json::object& o, std::string_view name) {
  const json::value* v = Field(o, name, FieldStyle::kBody);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return Refused(name, "a string", *v);
  return std::optional<std::string>(std::string(v->as_string()));
}

Result<std::string> RequiredStringField(const json::object& o, std::string_view name) {
  const json::value* v = Field(o, name, FieldStyle::kBody);
  if (v == nullptr) return Status::InvalidArgument(std::string(name) + " is required");
  if (!v->is_string() || v->as_string().empty()) return Refused(name, "a non-empty string", *v);
  return std::string(v->as_string());
}

Result<std::optional<bool>> BoolField(const json::object& o, std::string_view name) {
  const json::value* v = Field(o, name, FieldStyle::kBody);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_bool()) return Refused(name, "a boolean", *v);
  return std::optional<bool>(v->as_bool());
}

Result<std::optional<int64_t>> IntegerField(const json::object& o, std::string_view name,
                                            int64_t min, int64_t max, std::string_view what) {
  const json::value* v = Field(o, name, FieldStyle::kBody);
  if (v == nullptr) return std::optional<int64_t>();
  std::optional<int64_t> n = IntegerValue(*v, /*allow_strings=*/false);
  if (!n || *n < min || *n > max) return Refused(name, what, *v);
  return n;
}

}  // namespace statewatch::tools

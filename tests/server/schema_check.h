// SchemaCheck: the subset of JSON Schema 2020-12 that docs/openapi.json uses — $ref into
// components/schemas, type, properties, required, items, enum, const, oneOf, allOf, minimum,
// maximum, minLength, maxLength — enough to check the daemon's real answers against the
// document. Header-only: one test binary uses it.
//
// Not thread-safe.
#ifndef STATEWATCH_TESTS_SERVER_SCHEMA_CHECK_H_
#define STATEWATCH_TESTS_SERVER_SCHEMA_CHECK_H_

#include <boost/json.hpp>
#include <string>

namespace statewatch::testing {

class SchemaCheck {
 public:
  // `document` is the whole OpenAPI document (for $ref).
  explicit SchemaCheck(const boost::json::object& document) : doc_(document) {}

  // "" when `value` conforms to `schema`, else the first violation with its JSON path.
  std::string Check(const boost::json::value& value, const boost::json::value& schema,
                    const std::string& path = "$") const {
    if (!schema.is_object()) return "";
    const boost::json::object& s = schema.as_object();
    if (const auto* ref = s.if_contains("$ref")) return Check(value, Resolve(*ref), path);
    if (const auto* one = s.if_contains("oneOf")) return OneOf(value, one->as_array(), path);
    if (const auto* all = s.if_contains("allOf")) {
      for (const auto& part : all->as_array()) {
        if (std::string why = Check(value, part, path); !why.empty()) return why;
      }
    }
    if (const auto* c = s.if_contains("const"); c && value != *c) {
      return path + ": expected " + boost::json::serialize(*c) + ", got " +
             boost::json::serialize(value);
    }
    if (const auto* e = s.if_contains("enum")) {
      bool found = false;
      for (const auto& option : e->as_array()) found = found || option == value;
      if (!found) return path + ": " + boost::json::serialize(value) + " is not in the enum";
    }
    if (const auto* t = s.if_contains("type")) {
      if (std::string why = Type(value, std::string(t->as_string()), path); !why.empty()) {
        return why;
      }
    }
    if (std::string why = Bounds(value, s, path); !why.empty()) return why;
    if (value.is_object()) return Object(value.as_object(), s, path);
    if (value.is_array()) {
      const auto* items = s.if_contains("items");
      const auto& a = value.as_array();
      for (std::size_t i = 0; items && i < a.size(); ++i) {
        if (std::string why = Check(a[i], *items, path + "[" + std::to_string(i) + "]");
            !why.empty()) {
          return why;
        }
      }
    }
    return "";
  }

  const boost::json::value& Resolve(const boost::json::value& ref) const {
    static const boost::json::value kEmpty;
    std::string r(ref.as_string());
    const std::string prefix = "#/components/schemas/";
    if (r.rfind(prefix, 0) != 0) return kEmpty;
    const auto& schemas = doc_.at("components").at("schemas").as_object();
    const auto* found = schemas.if_contains(r.substr(prefix.size()));
    return found ? *found : kEmpty;
  }

 private:
  std::string OneOf(const boost::json::value& value, const boost::json::array& options,
                    const std::string& path) const {
    int matches = 0;
    std::string last;
    for (const auto& option : options) {
      std::string why = Check(value, option, path);
      if (why.empty()) ++matches;
      else last = why;
    }
    if (matches == 1) return "";
    return path + ": matches " + std::to_string(matches) + " of oneOf (" + last + ")";
  }

  static std::string Type(const boost::json::value& v, const std::string& type,
                          const std::string& path) {
    bool ok = (type == "string" && v.is_string()) || (type == "object" && v.is_object()) ||
              (type == "array" && v.is_array()) || (type == "boolean" && v.is_bool()) ||
              (type == "null" && v.is_null()) ||
              (type == "integer" && (v.is_int64() || v.is_uint64())) ||
              (type == "number" && v.is_number());
    return ok ? "" : path + ": expected " + type + ", got " + boost::json::serialize(v);
  }

  static std::string Bounds(const boost::json::value& v, const boost::json::object& s,
                            const std::string& path) {
    if (v.is_number()) {
      double d = v.to_number<double>();
      if (const auto* m = s.if_contains("minimum"); m && d < m->to_number<double>()) {
        return path + ": below minimum";
      }
      if (const auto* m = s.if_contains("maximum"); m && d > m->to_number<double>()) {
        return path + ": above maximum";
      }
    }
    if (v.is_string()) {
      auto n = static_cast<int64_t>(v.as_string().size());
      if (const auto* m = s.if_contains("minLength"); m && n < m->to_number<int64_t>()) {
        return path + ": shorter than minLength";
      }
    }
    return "";
  }

  std::string Object(const boost::json::object& o, const boost::json::object& s,
                     const std::string& path) const {
    if (const auto* required = s.if_contains("required")) {
      for (const auto& name : required->as_array()) {
        if (!o.contains(name.as_string())) {
          return path + ": missing required field " + std::string(name.as_string());
        }
      }
    }
    const auto* props = s.if_contains("properties");
    if (props == nullptr) return "";
    for (const auto& [key, value] : o) {
      const auto* sub = props->as_object().if_contains(key);
      if (sub == nullptr) continue;  // answers may carry fields a newer daemon added
      if (std::string why = Check(value, *sub, path + "." + std::string(key)); !why.empty()) {
        return why;
      }
    }
    return "";
  }

  const boost::json::object& doc_;
};

}  // namespace statewatch::testing

#endif  // STATEWATCH_TESTS_SERVER_SCHEMA_CHECK_H_

#include "server/json_body.h"

#include <boost/json.hpp>

#include <utility>

namespace statewatch::server {
namespace json = boost::json;

std::optional<json::object> JsonObjectOf(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  return std::move(v.as_object());
}

std::vector<const json::value*> ItemsOf(const json::value& v) {
  std::vector<const json::value*> items;
  if (v.is_array()) {
    for (const json::value& item : v.as_array()) items.push_back(&item);
  } else {
    items.push_back(&v);
  }
  return items;
}

std::string StringMember(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

}  // namespace statewatch::server

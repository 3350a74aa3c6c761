// Reading a JSON body where a malformed one is not an error of its own: the router and the
// watcher sagas fall back (forward the request as it is, and the owner refuses it as a single
// node would), so these answer "nothing" instead of a message.
#ifndef STATEWATCH_SERVER_JSON_BODY_H_
#define STATEWATCH_SERVER_JSON_BODY_H_

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace statewatch::server {

// `body` parsed, when it is a JSON object; nullopt otherwise.
std::optional<boost::json::object> JsonObjectOf(std::string_view body);

// The items of a body that is one item or an array of them (POST /v1/events, /v1/watches):
// the array's elements, else the value itself. The pointers point into `v`.
std::vector<const boost::json::value*> ItemsOf(const boost::json::value& v);

// o[name] when it is a string; "" when it is absent or not a string.
std::string StringMember(const boost::json::object& o, std::string_view name);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_JSON_BODY_H_

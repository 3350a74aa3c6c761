// The daemon's error envelope {"error": {"code": "...", "message": "..."}} as its clients
// read it (the CLI's --server verbs, the cluster router), and the one list of refusals that
// mean a request did not land anywhere, so that sending it elsewhere cannot apply it twice.
// Header-only (Boost.JSON), so that net/ itself does not link it.
#ifndef STATEWATCH_NET_ERROR_ENVELOPE_H_
#define STATEWATCH_NET_ERROR_ENVELOPE_H_

#include <boost/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace statewatch::net {

// error.<field> of an error envelope when it is a string; nullopt for any other body.
inline std::optional<std::string> ErrorField(std::string_view body, std::string_view field) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(body, ec);
  if (ec || !v.is_object()) return std::nullopt;
  const boost::json::value* e = v.as_object().if_contains("error");
  const boost::json::value* f = e && e->is_object() ? e->as_object().if_contains(field) : nullptr;
  if (f == nullptr || !f->is_string()) return std::nullopt;
  return std::string(f->as_string());
}

// The envelope's code, "" when the body is not one.
inline std::string ErrorCodeOf(std::string_view body) {
  return ErrorField(body, "code").value_or("");
}

// A cluster's 503 refusal before anything landed: the partition's owner is a standby, is
// switching, or was fenced out / lost its lease (docs/cluster-internals.md,
// "Refusals, retries, lost answers").
inline bool ClusterRefusedBeforeLanding(int status, std::string_view code) {
  return status == 503 && (code == "standby" || code == "switching" || code == "partition_moved");
}

// What a client with several endpoints may send to the next one: the cluster's refusals,
// and a daemon's own 503s that apply nothing (the router gave up, a daemon is stopping or
// full of connections).
inline bool RefusedBeforeLanding(int status, std::string_view code) {
  return ClusterRefusedBeforeLanding(status, code) ||
         (status == 503 &&
          (code == "unavailable" || code == "shutting_down" || code == "too_many_connections"));
}

}  // namespace statewatch::net

#endif  // STATEWATCH_NET_ERROR_ENVELOPE_H_

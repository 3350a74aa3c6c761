// RequestGuard: the checks every request passes before it is routed, so that a web page the
// user happens to visit cannot reach a daemon on their machine. A browser lets any page send
// "simple" cross-origin requests (a form POST, a text/plain fetch) and open WebSockets to
// 127.0.0.1, and a DNS-rebinding page reaches it under the attacker's own host name; the
// three checks below close those doors, as loopback daemons reachable from browsers must.
//
// In this order, the first failure answers (with the JSON error envelope) and the
// connection closes:
//   400 bad_request             HTTP/1.1 without a Host header (RFC 9112 §3.2).
//   421 misdirected_request     a Host that names none of: the listen address, localhost,
//                               127.0.0.1, [::1] — each with the bound port or without a
//                               port — or an --allow-host entry ("name" allows any port,
//                               "name:port" that one; "*.suffix" one or more labels before
//                               the suffix). Only on a loopback listener without a token
//                               (browsers reach those), or where --allow-host narrows a
//                               listener that requires a token: such a listener otherwise
//                               answers any Host (containers, pod IPs, service names).
//                               A health probe — GET or HEAD of /healthz or /readyz —
//                               passes whatever its Host: Kubernetes probes name the pod IP,
//                               which no --allow-host list can hold, and these answers
//                               carry only a status and the version, nothing a page could
//                               use.
//   403 forbidden_origin        an Origin header that is not in --allow-origin (compared
//                               case-insensitively); WebSocket upgrades too. Requests without
//                               an Origin (curl, gateways, SDKs) are not affected, nor those
//                               naming the daemon itself (http://localhost:PORT and the
//                               other names above with the bound port): no page is served
//                               from there, and some WebSocket clients send it by default.
//   415 unsupported_media_type  a request with a body whose Content-Type is not
//                               application/json (parameters such as charset allowed): a page
//                               can send text/plain or a form without a CORS preflight, but
//                               not application/json.
//
// Also the Authorization header's parse, with the scheme compared case-insensitively (RFC
// 9110 §11.1: "Bearer", "bearer" and "BEARER" are one scheme); AccessControl checks the
// token.
//
// Thread-safe: immutable after construction.
#ifndef STATEWATCH_SERVER_REQUEST_GUARD_H_
#define STATEWATCH_SERVER_REQUEST_GUARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/server_options.h"

namespace statewatch::server {

// What the guard reads of a request: its header only, so a refused body is never read.
struct RequestHead {
  unsigned version = 11;                   // 10 for HTTP/1.0, 11 for HTTP/1.1
  std::string_view method;                 // "GET", "POST", ...
  std::string_view target;                 // the request target: path and query
  std::optional<std::string_view> host;    // the Host header, when present
  std::optional<std::string_view> origin;  // the Origin header, when present
  std::optional<std::string_view> content_type;
  bool has_body = false;  // a Content-Length above 0, or a chunked body
};

// Why a request is refused: the HTTP status and the error envelope's code and message
// (the transport answers Api::Error(status, code, message)).
struct Refusal {
  int status = 0;
  std::string code;
  std::string message;
};

class RequestGuard {
 public:
  // `port` is the bound port (options.port may be 0).
  RequestGuard(const ServerOptions& options, uint16_t port);

  // nullopt when the request may be routed; otherwise why it is refused.
  std::optional<Refusal> Check(const RequestHead& head) const;

  bool HostAllowed(std::string_view host) const;
  bool OriginAllowed(std::string_view origin) const;

 private:
  uint16_t port_;
  bool any_host_;  // a listener requiring a token, without --allow-host
  std::string listen_host_;                 // lower case; IPv6 in brackets
  std::vector<std::string> names_;          // loopback names and the listen address
  std::vector<std::string> allow_hosts_;    // lower case, as given
  std::vector<std::string> allow_origins_;  // lower case
};

// True when `content_type` is application/json, in any case, with or without parameters
// ("application/json; charset=utf-8").
bool IsJsonContentType(std::string_view content_type);

// The token of "<scheme> <token>" with the scheme "Bearer" in any case and one or more
// spaces (surrounding spaces ignored); "" when `authorization` is not a bearer credential.
// The token is checked by AccessControl (server/access_control.h), as a digest in constant
// time.
std::string_view BearerToken(std::string_view authorization);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_REQUEST_GUARD_H_

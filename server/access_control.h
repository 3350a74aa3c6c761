// AccessControl: which bearer tokens a daemon accepts and what each may call. A request's
// `Authorization: Bearer <token>` (the scheme in any case, RFC 9110 §11.1) is hashed with
// SHA-256 and compared, in constant time, with the digest of every configured token:
// serve --token / --token-file (every scope) and the configuration file's auth.tokens (each
// with its scope, config/access_tokens.h). Each route needs one scope, named by its row of
// the route table (server/route_table.cc); the caller's token must grant it.
//
// Refusals (the JSON error envelope):
//   401 unauthorized        no Authorization header, or a token this daemon does not know;
//                           the message says how to send one (and never echoes it).
//   403 insufficient_scope  a known token without the route's scope: the message names the
//                           token (by its configured name), the scope and the route, e.g.
//                           `the token "grafana" lacks the "write" scope needed for
//                           POST /v1/events (it has "read")`.
// With no token configured (a loopback daemon without --token) every request is allowed.
//
// Reload replaces the token set atomically (SIGHUP, server/config_reload.h): a request is
// checked against the set before or after, never a mix.
//
// Thread-safe.
#ifndef STATEWATCH_SERVER_ACCESS_CONTROL_H_
#define STATEWATCH_SERVER_ACCESS_CONTROL_H_

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "config/access_tokens.h"
#include "server/request_guard.h"
#include "server/server_options.h"

namespace statewatch::server {

// Who a request authenticated as.
struct Grant {
  std::string name;  // the token's configured name; "--token" for serve's own; "" without any
  auth::Scope scope = auth::Scope::kAdmin;
};

class AccessControl {
 public:
  // The tokens of options.token, options.tokens and options.open_metrics.
  explicit AccessControl(const ServerOptions& options);

  // Replaces the token set with `options`' (the rest of `options` is ignored).
  void Reload(const ServerOptions& options);

  // True when requests need a token (any is configured).
  bool TokenRequired() const;
  // True when GET /metrics needs no token (auth.openMetrics).
  bool OpenMetrics() const;

  // Authenticates `authorization` (the header's value, "" when absent): the token's grant,
  // or a grant of every scope when no token is configured. Otherwise the 401 refusal.
  std::variant<Grant, Refusal> Authenticate(std::string_view authorization) const;

  // Authenticate, then the 403 refusal when the grant lacks `needed` for `method` `route`
  // (the route's path template). kPublic needs nothing: nullopt without looking at the token.
  std::optional<Refusal> Check(std::string_view authorization, auth::Scope needed,
                               std::string_view method, std::string_view route) const;

 private:
  struct TokenSet {
    std::vector<auth::AccessToken> tokens;
    bool open_metrics = false;
  };
  static std::shared_ptr<const TokenSet> Build(const ServerOptions& options);
  std::shared_ptr<const TokenSet> Current() const;

  mutable std::mutex mu_;
  std::shared_ptr<const TokenSet> set_;  // guarded by mu_; replaced, never changed
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_ACCESS_CONTROL_H_

#include "server/access_control.h"

#include <utility>

#include "base/ascii.h"

namespace statewatch::server {

AccessControl::AccessControl(const ServerOptions& options) : set_(Build(options)) {}

std::shared_ptr<const AccessControl::TokenSet> AccessControl::Build(const ServerOptions& o) {
  auto set = std::make_shared<TokenSet>();
  if (!o.token.empty()) {
    set->tokens.push_back({"--token", auth::Sha256(o.token), auth::Scope::kAdmin});
  }
  for (const auth::AccessToken& t : o.tokens) set->tokens.push_back(t);
  set->open_metrics = o.open_metrics;
  return set;
}

void AccessControl::Reload(const ServerOptions& options) {
  std::shared_ptr<const TokenSet> next = Build(options);
  std::lock_guard lock(mu_);
  set_ = std::move(next);
}

std::shared_ptr<const AccessControl::TokenSet> AccessControl::Current() const {
  std::lock_guard lock(mu_);
  return set_;
}

bool AccessControl::TokenRequired() const { return !Current()->tokens.empty(); }

bool AccessControl::OpenMetrics() const { return Current()->open_metrics; }

std::variant<Grant, Refusal> AccessControl::Authenticate(std::string_view authorization) const {
  std::shared_ptr<const TokenSet> set = Current();
  if (set->tokens.empty()) return Grant{};
  std::string_view token = BearerToken(authorization);
  if (!token.empty()) {
    // Every entry is compared (no early exit): the time says nothing about which matched.
    const std::string digest = auth::Sha256(token);
    const auth::AccessToken* found = nullptr;
    for (const auth::AccessToken& t : set->tokens) {
      if (auth::ConstantTimeEquals(digest, t.sha256)) found = &t;
    }
    if (found != nullptr) return Grant{found->name, found->scope};
  }
  const char* what = ascii::Trim(authorization, ascii::kHttpSpace).empty()
                         ? "this request has no Authorization header"
                     : token.empty() ? "the Authorization header is not \"Bearer <token>\""
                                     : "this server does not know the token sent";
  return Refusal{401, "unauthorized",
                 std::string(what) +
                     ": send the header Authorization: Bearer <token> (the statewatch CLI "
                     "sends the token of --token-file FILE or $STATEWATCH_TOKEN_FILE)"};
}

std::optional<Refusal> AccessControl::Check(std::string_view authorization, auth::Scope needed,
                                            std::string_view method, std::string_view route) const {
  if (needed == auth::Scope::kPublic) return std::nullopt;
  auto grant = Authenticate(authorization);
  if (auto* refused = std::get_if<Refusal>(&grant)) return std::move(*refused);
  const Grant& g = std::get<Grant>(grant);
  if (g.scope >= needed) return std::nullopt;
  return Refusal{403, "insufficient_scope",
                 "the token \"" + g.name + "\" lacks the \"" + auth::ScopeName(needed) +
                     "\" scope needed for " + std::string(method) + " " + std::string(route) +
                     " (it has \"" + auth::ScopeName(g.scope) + "\")"};
}

}  // namespace statewatch::server

// Access tokens: the bearer tokens a daemon accepts and the scope each one grants.
//
// Scopes are cumulative levels: `read` < `write` < `admin`. A token with `write` may also
// read; one with `admin` may do everything. Every route of the daemon needs one level (its
// row in server/route_table.cc says which): reads need `read`, routes that change state need
// `write`, maintenance and cluster routes need `admin`; `public` routes (GET /healthz,
// GET /readyz) need no token at all.
//
// Tokens are kept as SHA-256 digests only: the configuration file may hold a digest
// ("sha256", printf %s TOKEN | sha256sum) instead of the token, so that the file is no
// secret, and a running daemon never holds a token's text beyond the request that carried
// it. Nothing here ever prints a token or a digest.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CONFIG_ACCESS_TOKENS_H_
#define STATEWATCH_CONFIG_ACCESS_TOKENS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace statewatch::auth {

// Ordered: a token grants its scope and every lower one.
enum class Scope : uint8_t { kPublic = 0, kRead = 1, kWrite = 2, kAdmin = 3 };

// "public", "read", "write", "admin".
const char* ScopeName(Scope scope);
// "read", "write" or "admin" (exactly, lower case); nullopt for anything else.
std::optional<Scope> ParseScope(std::string_view name);

struct AccessToken {
  std::string name;    // how logs and errors refer to it; never the token itself
  std::string sha256;  // the SHA-256 digest of the token's bytes: 32 raw bytes
  Scope scope = Scope::kRead;
};

// The SHA-256 digest of `bytes`: 32 raw bytes.
std::string Sha256(std::string_view bytes);

// 64 hexadecimal digits (either case) as 32 raw bytes; nullopt for anything else.
std::optional<std::string> DigestFromHex(std::string_view hex);

// True when `a` and `b` are equal, in time that depends on their lengths only.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace statewatch::auth

#endif  // STATEWATCH_CONFIG_ACCESS_TOKENS_H_

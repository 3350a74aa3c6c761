#include "config/access_tokens.h"

#include "base/hex.h"
#include "base/sha256.h"
#include "codecs/json_fields.h"

namespace statewatch::auth {

namespace {

constexpr tools::NamedValue<Scope> kScopeNames[] = {{Scope::kPublic, "public"},
                                                    {Scope::kRead, "read"},
                                                    {Scope::kWrite, "write"},
                                                    {Scope::kAdmin, "admin"}};

}  // namespace

const char* ScopeName(Scope scope) { return tools::NameOf(kScopeNames, scope, "admin"); }

std::optional<Scope> ParseScope(std::string_view name) {
  // Exact spelling only, and never "public": that names the routes that need no token.
  for (const auto& row : kScopeNames) {
    if (row.value != Scope::kPublic && name == row.name) return row.value;
  }
  return std::nullopt;
}

std::string Sha256(std::string_view bytes) { return sha256::BytesOf(bytes); }

std::optional<std::string> DigestFromHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  return hex::Decode(hex);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // Every byte is compared whatever the first difference: timing says nothing but the length.
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace statewatch::auth

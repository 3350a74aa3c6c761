#include "config/access_tokens.h"

#include <openssl/evp.h>

namespace statewatch::auth {

const char* ScopeName(Scope scope) {
  switch (scope) {
    case Scope::kPublic:
      return "public";
    case Scope::kRead:
      return "read";
    case Scope::kWrite:
      return "write";
    case Scope::kAdmin:
      return "admin";
  }
  return "admin";
}

std::optional<Scope> ParseScope(std::string_view name) {
  if (name == "read") return Scope::kRead;
  if (name == "write") return Scope::kWrite;
  if (name == "admin") return Scope::kAdmin;
  return std::nullopt;
}

std::string Sha256(std::string_view bytes) {
  std::string out(EVP_MAX_MD_SIZE, '\0');
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), reinterpret_cast<unsigned char*>(out.data()), &len,
             EVP_sha256(), nullptr);
  out.resize(len);
  return out;
}

std::optional<std::string> DigestFromHex(std::string_view hex) {
  if (hex.size() != 64) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < hex.size(); i += 2) {
    int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
  }
  return out;
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

// SHA-256 through OpenSSL's one-shot EVP_Digest: the one place the tree hashes with it (access
// token digests, the log's frame hash chain, upstream source keys). Header-only like the rest
// of base/; whoever includes it links OpenSSL::Crypto.
//
// EVP_Digest fails only when OpenSSL cannot allocate. The digest is then all zeros: no input
// anyone can find hashes to it, so a comparison against a real digest fails, and a key made
// from it is still the same for the whole process.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_BASE_SHA256_H_
#define STATEWATCH_BASE_SHA256_H_

#include <openssl/evp.h>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace statewatch::sha256 {

inline constexpr std::size_t kDigestSize = 32;
using Digest = std::array<unsigned char, kDigestSize>;

// The SHA-256 digest of `bytes` (all zeros in the allocation failure above).
inline Digest Of(std::string_view bytes) {
  Digest out{};
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != out.size()) {
    out.fill(0);
  }
  return out;
}

// The same digest as a string of 32 raw bytes.
inline std::string BytesOf(std::string_view bytes) {
  const Digest digest = Of(bytes);
  return std::string(reinterpret_cast<const char*>(digest.data()), digest.size());
}

}  // namespace statewatch::sha256

#endif  // STATEWATCH_BASE_SHA256_H_

// SHA-256 through OpenSSL's EVP digest interface: the one place the tree hashes with it (access
// token digests, the log's frame hash chain, upstream source keys). Header-only like the rest
// of base/; whoever includes it links OpenSSL::Crypto.
//
// A digest fails only when OpenSSL cannot allocate. The digest is then all zeros: no input
// anyone can find hashes to it, so a comparison against a real digest fails, and a key made
// from it is still the same for the whole process.
//
// Thread-safe: each thread digests with its own context.
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

// The SHA-256 implementation, fetched from OpenSSL's default provider once per process, and
// a digest context per thread. EVP_Digest with EVP_sha256() makes OpenSSL 3 look the
// algorithm up in its provider store and allocate a context on every digest (locks, a
// property query, malloc and free): ~10 µs of a daemon's CPU per X-Request-Id, measured with
// perf under bench/request_id_bench.sh. Both are reused as they are; never freed before the
// process (the context with its thread) ends.
inline const EVP_MD* Sha256() {
  static EVP_MD* const fetched = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
  return fetched != nullptr ? fetched : EVP_sha256();
}

// The SHA-256 digest of `bytes` (all zeros in the allocation failure above).
inline Digest Of(std::string_view bytes) {
  struct Context {
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    ~Context() { EVP_MD_CTX_free(ctx); }
  };
  thread_local Context context;
  Digest out{};
  unsigned int len = 0;
  EVP_MD_CTX* ctx = context.ctx;
  if (ctx == nullptr || EVP_DigestInit_ex2(ctx, Sha256(), nullptr) != 1 ||
      EVP_DigestUpdate(ctx, bytes.data(), bytes.size()) != 1 ||
      EVP_DigestFinal_ex(ctx, out.data(), &len) != 1 || len != out.size()) {
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

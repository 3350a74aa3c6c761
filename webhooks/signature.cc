#include "webhooks/signature.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdlib>

#include "base/hex.h"

namespace statewatch::webhooks {

std::string HmacSha256Hex(std::string_view secret, std::string_view message) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

std::string SignatureHeader(std::string_view secret, int64_t unix_seconds, std::string_view body) {
  std::string t = std::to_string(unix_seconds);
  std::string message = t + "." + std::string(body);
  return "t=" + t + ",v1=" + HmacSha256Hex(secret, message);
}

bool VerifySignature(std::string_view secret, std::string_view header, std::string_view body,
                     int64_t now_s, int64_t tolerance_s) {
  if (header.substr(0, 2) != "t=") return false;
  std::size_t comma = header.find(",v1=");
  if (comma == std::string_view::npos || comma == 2) return false;
  std::string_view t = header.substr(2, comma - 2);
  std::string_view mac = header.substr(comma + 4);
  for (char c : t) {
    if (c < '0' || c > '9') return false;
  }
  if (t.size() > 18 || mac.size() != 64) return false;
  int64_t ts = std::strtoll(std::string(t).c_str(), nullptr, 10);
  if (std::llabs(now_s - ts) > tolerance_s) return false;
  std::string want = HmacSha256Hex(secret, std::string(t) + "." + std::string(body));
  return CRYPTO_memcmp(want.data(), mac.data(), 64) == 0;
}

}  // namespace statewatch::webhooks

#include "server/internal_call.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <fstream>
#include <sstream>

#include "base/hex.h"
#include "base/sha256.h"

namespace statewatch::server {
namespace {

constexpr std::string_view kVersion = "v1=";
constexpr std::size_t kMacHexDigits = 64;

}  // namespace

std::string InternalSignature(std::string_view secret, std::string_view method,
                              std::string_view target, std::string_view body) {
  std::string message;
  message.reserve(method.size() + target.size() + 66);
  message.append(method).append("\n").append(target).append("\n");
  message.append(hex::Encode(sha256::BytesOf(body)));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &len);
  return std::string(kVersion) +
         hex::Encode(std::string_view(reinterpret_cast<const char*>(mac), len));
}

void SignInternal(std::string_view secret, std::string_view method, std::string_view target,
                  std::string_view body, std::vector<std::pair<std::string, std::string>>* headers) {
  headers->emplace_back(kInternalHeader, InternalSignature(secret, method, target, body));
}

Status CheckInternal(std::string_view secret, std::string_view method, std::string_view target,
                     std::string_view body, std::string_view header) {
  const std::string route = std::string(method) + " " + std::string(target);
  if (secret.empty()) {
    return Status::PermissionDenied(route + " is a cluster-internal route and this process has "
                                    "no cluster secret (it is not a node of a cluster)");
  }
  if (header.empty()) {
    return Status::PermissionDenied(route + " is a cluster-internal route: only the cluster's "
                                    "own processes call it, with an " +
                                    std::string(kInternalHeader) + " header");
  }
  if (header.size() != kVersion.size() + kMacHexDigits || header.substr(0, 3) != kVersion) {
    return Status::PermissionDenied(std::string(kInternalHeader) +
                                    " must be v1= and 64 hex digits (got " +
                                    std::to_string(header.size()) + " characters)");
  }
  const std::string want = InternalSignature(secret, method, target, body);
  if (CRYPTO_memcmp(want.data(), header.data(), want.size()) != 0) {
    return Status::PermissionDenied(std::string(kInternalHeader) + " does not sign " + route +
                                    " and its body with this cluster's secret");
  }
  return Status::OK();
}

Result<std::string> GenerateClusterSecret() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    return Status::IOError("the cluster secret could not be generated: RAND_bytes failed");
  }
  return hex::Encode(std::string_view(reinterpret_cast<const char*>(bytes), sizeof(bytes)));
}

Result<std::string> ReadClusterSecretFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("--cluster-secret-file " + path + " cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const char* space = " \t\r\n";
  const std::size_t first = s.find_first_not_of(space);
  s = first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(space) - first + 1);
  if (s.size() < kMinClusterSecretBytes) {
    return Status::InvalidArgument("--cluster-secret-file " + path + " holds " +
                                   std::to_string(s.size()) + " bytes: a cluster secret needs " +
                                   "at least " + std::to_string(kMinClusterSecretBytes));
  }
  return s;
}

}  // namespace statewatch::server

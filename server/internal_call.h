// Requests between a cluster's own processes (docs/cluster-internals.md,
// "Reads across partitions"): a node's router asking a slot to answer under a context the
// client could not be trusted to state — a caller's visibility resolved at its home
// partition, a send on behalf of another partition. Such a request carries
//   X-Statewatch-Internal: v1=<hex HMAC-SHA256(secret, METHOD "\n" TARGET "\n" hex SHA-256(BODY))>
// keyed with the cluster's secret: the first node of a cluster generates 32 random bytes and
// stores them in etcd beside the partition count; every other node reads them (a
// ServerOptions::cluster_secret set beforehand, e.g. from ReadClusterSecretFile, is used
// instead). A slot answers the internal routes (/v1/internal/…) only with a valid header:
// 403 forbidden otherwise, naming what was wrong. A client never gets one: a node's port
// refuses /v1/internal/… from outside, and the router strips the header from what it
// forwards.
//
// The signature binds the method, the target (path and query) and the body; it carries no
// time, so a captured internal request could be replayed by whoever can reach a slot's port:
// keep slot ports on the cluster's network, as their tokens already assume. Internal routes
// that write must be idempotent (a dedupe key in the body).
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_SERVER_INTERNAL_CALL_H_
#define STATEWATCH_SERVER_INTERNAL_CALL_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::server {

// The header, as sent and as a ListenerRequest lower-cases it.
inline constexpr char kInternalHeader[] = "X-Statewatch-Internal";
inline constexpr char kInternalHeaderLower[] = "x-statewatch-internal";
// Every internal route's path starts with this.
inline constexpr std::string_view kInternalPrefix = "/v1/internal/";
// A secret must have at least this many bytes.
inline constexpr std::size_t kMinClusterSecretBytes = 16;

// The header's value for one request: "v1=" and 64 hex digits.
std::string InternalSignature(std::string_view secret, std::string_view method,
                              std::string_view target, std::string_view body);

// Appends {kInternalHeader, InternalSignature(...)} to `headers`.
void SignInternal(std::string_view secret, std::string_view method, std::string_view target,
                  std::string_view body, std::vector<std::pair<std::string, std::string>>* headers);

// OK when `header` is the signature of (method, target, body) under `secret` (compared in
// constant time); PermissionDenied naming what was wrong otherwise: no header, a malformed
// one, a wrong signature, or a process that has no secret (not in cluster mode).
Status CheckInternal(std::string_view secret, std::string_view method, std::string_view target,
                     std::string_view body, std::string_view header);

// True when `path` is an internal route's.
inline bool IsInternalPath(std::string_view path) {
  return path.substr(0, kInternalPrefix.size()) == kInternalPrefix;
}

// 32 random bytes from OpenSSL's CSPRNG, as 64 hex digits (what etcd stores). IOError when
// the generator fails.
Result<std::string> GenerateClusterSecret();

// The secret in `path`: its content without surrounding whitespace, at least
// kMinClusterSecretBytes bytes. InvalidArgument naming the file otherwise, IOError when it
// cannot be read.
Result<std::string> ReadClusterSecretFile(const std::string& path);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_INTERNAL_CALL_H_

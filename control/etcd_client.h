// EtcdClient: the control plane's store (docs/cluster-internals.md, "Ownership on etcd"), spoken
// through etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn, /v3/kv/deleterange,
// /v3/lease/grant, /v3/lease/keepalive, /v3/lease/revoke, /v3/lease/timetolive) over plain
// HTTP/1.1 (net/http_client.h). No C++ etcd client is packaged by Debian; the gateway is part of
// every etcd 3.4 member, so nothing beyond the HTTP client is needed. Keys and values are sent
// base64-encoded, 64-bit numbers arrive as JSON strings: both stay inside this file.
//
// Several endpoints (members of one etcd cluster) may be given: a call goes to the member
// that answered last and, when it cannot be reached or answers 5xx, to each other member in
// turn. Only when no member answers does the call fail, with IOError
// "etcd: no member answered: <url>: <reason>; ..." (IsUnreachable() recognises it). A member
// that answers with an error (4xx, or a JSON {"error"|"message"}) fails the call with
// FailedPrecondition naming the member and etcd's message; it is not retried elsewhere.
//
// Thread-safe: every call opens its own connection; the "last good member" index is atomic.
#ifndef STATEWATCH_CONTROL_ETCD_CLIENT_H_
#define STATEWATCH_CONTROL_ETCD_CLIENT_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::control {

struct EtcdOptions {
  // http://HOST:PORT of each member (the client URLs); at least one.
  std::vector<std::string> endpoints;
  // The whole exchange with one member, connect to last byte.
  int timeout_ms = 1000;
};

// "http://a:1,http://b:2" -> {"http://a:1", "http://b:2"}; InvalidArgument naming the bad
// entry (empty, or not http://HOST:PORT).
Result<std::vector<std::string>> ParseEndpoints(const std::string& comma_separated);

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;  // 0: none
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // in key order
  int64_t revision = 0;       // the store's revision when read
};

// One comparison of a transaction; every comparison is EQUAL.
struct Compare {
  enum class Target { kCreateRevision, kModRevision, kValue, kLease };
  std::string key;
  Target target = Target::kModRevision;
  int64_t revision = 0;  // kCreateRevision / kModRevision (0: the key does not exist)
  std::string value;     // kValue
  int64_t lease = 0;     // kLease
};

struct TxnOp {
  enum class Kind { kPut, kDelete };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;  // kPut
  int64_t lease = 0;  // kPut; 0: none
};

struct TxnResult {
  bool succeeded = false;  // the comparisons held and the success ops ran
  int64_t revision = 0;    // the store's revision after the transaction
};

class EtcdClient {
 public:
  // InvalidArgument when there is no endpoint or one is not http://HOST:PORT.
  static Result<std::unique_ptr<EtcdClient>> Make(EtcdOptions options);

  // A lease of `ttl_seconds`; its id.
  Result<int64_t> Grant(int64_t ttl_seconds);
  // One keep-alive: the lease's TTL from now, in seconds. NotFound "lease <id> expired"
  // when etcd no longer has it (it expired or was revoked).
  Result<int64_t> KeepAlive(int64_t lease);
  // NotFound when the lease is already gone.
  Status Revoke(int64_t lease);

  // The store's revision after the put.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // The key's entry; NotFound when it does not exist.
  Result<KeyValue> Get(const std::string& key);
  // Every key starting with `prefix`, in key order.
  Result<RangeResult> Range(const std::string& prefix);
  // Deletes `key`; the number of keys deleted (0 or 1).
  Result<int64_t> Delete(const std::string& key);
  Result<TxnResult> Txn(const std::vector<Compare>& compares, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure = {});

  const std::vector<std::string>& endpoints() const { return options_.endpoints; }

 private:
  explicit EtcdClient(EtcdOptions options) : options_(std::move(options)) {}
  // POSTs `body` to `path` on the members in turn (see the file comment); the answer's body.
  Result<std::string> Call(const std::string& path, const std::string& body);

  const EtcdOptions options_;
  std::atomic<std::size_t> preferred_{0};
};

// True for the IOError of a call no member answered (etcd is down or unreachable from here).
bool IsUnreachable(const Status& status);

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_ETCD_CLIENT_H_

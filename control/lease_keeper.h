// LeaseKeeper: this node's lease in etcd (docs/cluster-internals.md, "Ownership on etcd"), kept
// alive every TTL/3 on a thread of its own. Everything the node holds in etcd — its record, the
// controller key when it leads — is bound to this lease, so a node that dies (kill -9, a lost
// machine) disappears from the control plane one TTL later and the controller fails it over.
//
// What the node may serve follows from the last keep-alive:
//   held         a keep-alive sent at t answered with TTL s: the lease holds until t + s.
//   lapsed       past that instant with no newer answer — after a SIGSTOP, a long GC-like
//                pause, a partition from etcd that lets some member answer "expired". The
//                node must not serve its partitions: they may already have a new owner.
//   unreachable  the last keep-alive found no etcd member at all. Then no controller can
//                reassign anything either (every reassignment is an etcd transaction), so
//                the node keeps serving; only a partition's fence at the log can end its
//                ownership meanwhile, and that refuses its writes on its own.
// When etcd answers that the lease is gone (it expired or was revoked), a new lease is
// granted at once and `on_new_lease` runs (the node re-registers). A slot that became the
// owner under the old lease stays refused (ClusterNode checks the lease it was named under).
//
// Thread-safe.
#ifndef STATEWATCH_CONTROL_LEASE_KEEPER_H_
#define STATEWATCH_CONTROL_LEASE_KEEPER_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "control/etcd_client.h"

namespace statewatch::control {

enum class LeaseHealth { kHeld, kLapsed, kUnreachable };
const char* LeaseHealthName(LeaseHealth health);

class LeaseKeeper {
 public:
  // Grants the first lease (an error when etcd cannot grant it) and starts the thread.
  // `on_new_lease` runs on the keeper's thread after a lost lease was replaced.
  static Result<std::unique_ptr<LeaseKeeper>> Start(std::shared_ptr<EtcdClient> etcd,
                                                    int64_t ttl_seconds,
                                                    std::function<void(int64_t)> on_new_lease);
  ~LeaseKeeper();

  int64_t lease() const { return lease_.load(); }
  int64_t ttl_seconds() const { return ttl_seconds_; }
  LeaseHealth health() const;
  // Why the node must not serve now (lapsed), or nullopt (held, or etcd unreachable).
  std::optional<std::string> Lapsed() const;

  // Stops the thread; with `revoke`, revokes the lease so that the node's keys go at once
  // (a graceful stop: failover need not wait for the TTL).
  void Stop(bool revoke);

 private:
  LeaseKeeper(std::shared_ptr<EtcdClient> etcd, int64_t ttl_seconds,
              std::function<void(int64_t)> on_new_lease);
  void Loop();
  void KeepAliveOnce();

  const std::shared_ptr<EtcdClient> etcd_;
  const int64_t ttl_seconds_;
  const std::function<void(int64_t)> on_new_lease_;
  std::atomic<int64_t> lease_{0};

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point held_until_;
  bool unreachable_ = false;
  std::thread thread_;
};

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_LEASE_KEEPER_H_

// The operator's view and verbs on the control plane (docs/cluster-internals.md,
// "Ownership on etcd"): what `statewatch cluster status|move|drain` print and what a node's
// port answers at GET /v1/cluster/status, POST /v1/cluster/move and POST /v1/cluster/drain.
// They read etcd and write requests there; the controller does the moving.
//
// Status JSON:
//   {"cluster", "revision", "controller": id|null, "partitionCount",
//    "nodes": [{"id", "url", "lease", "partitions": [{"partition", "role", "url",
//               "position", "epoch"}]}],
//    "partitions": [{"partition", "owner", "standby", "epoch", "fenceEpoch", "ownerUrl",
//                    "standbyUrl", "position", "standbyPosition", "lag", "ready"}],
//    "moves": [{"partition", "to"}], "drains": [id]}
// "epoch" is the assignment's (its key's mod_revision); "fenceEpoch" the one the owner's slot
// fenced under (an assignment that only names a new standby does not re-fence). "ready": the
// named owner reports role owner under the lease it was named with, and the standby (when
// there is one) role standby. ownerUrl/standbyUrl are null until the node
// reports the slot.
//
// Thread-safe: pure functions over an EtcdClient (itself thread-safe).
#ifndef STATEWATCH_CONTROL_OPERATOR_H_
#define STATEWATCH_CONTROL_OPERATOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "control/controller.h"
#include "control/etcd_client.h"

namespace statewatch::control {

std::string ClusterStatusJson(const ClusterView& view, const std::string& cluster);
// True when every partition has an owner (and, with two or more live nodes not draining, a
// standby) and is ready.
bool ClusterReady(const ClusterView& view);

struct WaitOptions {
  std::chrono::milliseconds timeout{60000};
  std::chrono::milliseconds poll{100};
  const std::atomic<bool>* cancel = nullptr;  // set: give up (a node shutting down)
};

// Asks the controller to move `partition` to node `to` (a move request), then waits until
// `to` owns it and the partition is ready. Returns {"partition", "owner", "standby",
// "epoch"}. InvalidArgument: no such partition; NotFound: `to` is not a live node;
// IOError naming where it stood when `options.timeout` passed (the request stays: the
// controller goes on with it).
Result<std::string> RequestMove(EtcdClient& etcd, const ClusterKeys& keys, uint32_t partition,
                                const std::string& to, const WaitOptions& options);

// Asks the controller to move every partition and standby off node `node` (for its current
// lease: the drain ends when the node restarts), then waits until no assignment names it.
// Returns {"node", "partitions": 0}. NotFound: not a live node; IOError on timeout.
Result<std::string> RequestDrain(EtcdClient& etcd, const ClusterKeys& keys,
                                 const std::string& node, const WaitOptions& options);

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_OPERATOR_H_

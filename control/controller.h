// Controller: the one node that writes assignments (docs/cluster-internals.md,
// "Ownership on etcd"). Every node runs one and calls Round() on a timer; a round
//   1. campaigns when no node leads: a transaction creates /sw/<cluster>/controller with
//      this node's id, bound to its lease — whoever creates it leads until its lease ends;
//   2. when this node leads, reads the whole cluster prefix once (ReadClusterView), runs
//      Plan() (control/placement.h) and writes each change in its own transaction that
//      compares the election key's create_revision with the one this node created (a
//      deposed controller's writes fail: another node has created the key since) and the
//      assignment's mod_revision with the one read (nothing overwrites a newer decision).
// The new assignment's mod_revision is the partition's epoch: the owner it names fences
// the log under it (cluster::ReplicatedLogOptions::assignment_epoch).
//
// Thread contract: one thread calls Round(); leading() may be read from any thread.
#ifndef STATEWATCH_CONTROL_CONTROLLER_H_
#define STATEWATCH_CONTROL_CONTROLLER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "control/cluster_records.h"
#include "control/etcd_client.h"
#include "control/placement.h"

namespace statewatch::control {

// Everything under /sw/<cluster>/, decoded. A record that does not decode is skipped with a
// warning (one bad key must not stop the cluster), except the config, which is an error.
struct ClusterView {
  int64_t revision = 0;
  uint32_t partitions = 0;  // 0: no config yet
  std::optional<std::string> controller;
  int64_t controller_create_revision = 0;
  int64_t controller_lease = 0;
  PlacementInput placement;  // nodes, assignments, moves, drains
};
Result<ClusterView> ReadClusterView(EtcdClient& etcd, const ClusterKeys& keys);

class Controller {
 public:
  Controller(std::shared_ptr<EtcdClient> etcd, ClusterKeys keys, std::string node_id,
             uint64_t warm_lag = 1000);

  // One round under `lease` (the node's current lease). Returns whether this node leads
  // after it. IOError when etcd could not be read or written (the next round retries).
  Result<bool> Round(int64_t lease);
  bool leading() const { return leading_.load(); }

 private:
  Result<bool> Campaign(const ClusterView& view, int64_t lease);
  Status Apply(const PlacementPlan& plan);

  const std::shared_ptr<EtcdClient> etcd_;
  const ClusterKeys keys_;
  const std::string node_id_;
  const uint64_t warm_lag_;
  int64_t election_revision_ = 0;  // the create_revision of the key this node created
  std::atomic<bool> leading_{false};
};

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_CONTROLLER_H_

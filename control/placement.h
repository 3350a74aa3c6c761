// Placement: what the controller decides, as a pure function of what it read from etcd
// (docs/cluster-internals.md, "Ownership on etcd"). Given the live nodes (those whose
// lease-bound record exists), the current assignments and the pending move and drain requests,
// Plan() returns the assignment changes to make now. The controller writes them in one
// transaction each, guarded by its election key and each assignment's mod_revision, and runs
// Plan() again on what it reads next: every rule below makes progress from one read to the next,
// so no state lives outside etcd and a new controller carries on where the old one stopped.
//
// Rules, partition by partition (p = 0, 1, ...):
//   1. No assignment: the least loaded eligible node owns it, the next least loaded stands by.
//   2. The owner is gone (no record, or a record under another lease: it restarted):
//      failover. The standby, when live, is promoted; else the least loaded eligible node
//      owns it (it restores from the stream and checkpoint). A new standby is picked.
//   3. No usable standby (none, gone, the owner itself, or draining): one is picked.
//   4. A planned move to T (a move request, or the owner is draining): first T becomes the
//      standby (warm-up: it follows the stream); once its slot reports role standby fewer
//      than `warm_lag` positions behind the owner's, T is promoted and the old owner stands
//      by. A move that is done stays as a pin: the balancer leaves that partition where the
//      operator put it. A move (or pin) whose target is gone or draining ends (the request
//      is deleted); a later move of the partition replaces it.
//   5. Balance, only when nothing else changed in this round and no move waits for its
//      target to warm up (balancing would undo the warm-up): when the most-owning eligible
//      node owns two more than the least-owning one, one of its partitions that no move
//      pins moves to that node as in rule 4 (standby first); likewise for standbys.
// "Eligible": live and not draining. "Load" counts owned partitions first, then standbys,
// then the node id, so ties break the same way on every controller.
//
// Thread-safe: a pure function.
#ifndef STATEWATCH_CONTROL_PLACEMENT_H_
#define STATEWATCH_CONTROL_PLACEMENT_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "control/cluster_records.h"

namespace statewatch::control {

struct PlacementInput {
  uint32_t partitions = 1;
  std::map<std::string, NodeRecord> nodes;       // live nodes by id (record.lease filled)
  std::map<uint32_t, Assignment> assignments;    // by partition (epoch filled)
  std::map<uint32_t, std::string> moves;         // partition -> target node id
  std::map<std::string, int64_t> drains;         // node id -> the lease the drain is for
  uint64_t warm_lag = 1000;
};

struct PlacementChange {
  uint32_t partition = 0;
  Assignment next;             // owner, owner_lease, standby
  int64_t expected_epoch = 0;  // the assignment's mod_revision now (0: none yet)
  std::string reason;          // assign, failover, standby, warm-up, move, balance
};

struct PlacementPlan {
  std::vector<PlacementChange> changes;
  std::vector<uint32_t> moves_done;      // requests to delete: their target is gone or draining
  std::vector<std::string> drains_done;  // requests to delete: the node holds nothing, or
                                         // restarted (another lease), or is gone
};

PlacementPlan Plan(const PlacementInput& input);

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_PLACEMENT_H_

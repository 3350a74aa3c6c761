// The control plane's keys and records in etcd (docs/cluster-internals.md,
// "Ownership on etcd"). Everything a node, the controller and the operator verbs read or
// write there goes through these names and codecs, so the layout is written down once:
//
//   /sw/<cluster>/config            {"partitions": P}            written once, by the first node
//   /sw/<cluster>/nodes/<id>        NodeRecord                   bound to the node's lease
//   /sw/<cluster>/controller        the controller's node id     bound to its lease
//   /sw/<cluster>/assign/<p>        Assignment; its mod_revision is the partition's epoch
//   /sw/<cluster>/requests/move/<p> MoveRequest                  a planned move, until done
//   /sw/<cluster>/requests/drain/<id> DrainRequest               a drain, for one lease of the node
//
// Records are JSON (etcdctl shows them as they are). Decoding a record that is not what it
// should be is Corruption naming the key's kind and what was wrong.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CONTROL_CLUSTER_RECORDS_H_
#define STATEWATCH_CONTROL_CLUSTER_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "statewatch/status.h"

namespace statewatch::control {

class ClusterKeys {
 public:
  explicit ClusterKeys(std::string cluster) : root_("/sw/" + std::move(cluster) + "/") {}

  const std::string& Root() const { return root_; }  // "/sw/<cluster>/"
  std::string Config() const { return root_ + "config"; }
  std::string NodesPrefix() const { return root_ + "nodes/"; }
  std::string Node(std::string_view id) const { return NodesPrefix() + std::string(id); }
  std::string Controller() const { return root_ + "controller"; }
  std::string AssignPrefix() const { return root_ + "assign/"; }
  std::string Assign(uint32_t partition) const {
    return AssignPrefix() + std::to_string(partition);
  }
  std::string MovesPrefix() const { return root_ + "requests/move/"; }
  std::string Move(uint32_t partition) const { return MovesPrefix() + std::to_string(partition); }
  std::string DrainsPrefix() const { return root_ + "requests/drain/"; }
  std::string Drain(std::string_view id) const { return DrainsPrefix() + std::string(id); }

  // The part of `key` after `prefix`, or nullopt when `key` does not start with it.
  static std::optional<std::string> Suffix(std::string_view key, std::string_view prefix);
  // The partition a key under AssignPrefix()/MovesPrefix() names; nullopt when the suffix is
  // not a decimal number below `partitions`.
  static std::optional<uint32_t> PartitionOf(std::string_view suffix, uint32_t partitions);

 private:
  std::string root_;
};

// A node id: 1 to 64 characters of [A-Za-z0-9._-]. InvalidArgument naming the value.
Status ValidateNodeId(std::string_view id);

// What a node serves of one partition, as it reports it.
struct SlotReport {
  uint32_t partition = 0;
  std::string role;      // standby, switching, owner, moved (cluster::PartitionRoleName)
  std::string url;       // http://HOST:PORT the partition's routes answer at on this node
  uint64_t position = 0;  // the last stream position applied there
  uint64_t epoch = 0;     // owner: its fence epoch; standby: the last fence it folded
};

struct NodeRecord {
  std::string id;
  std::string url;  // the node's own port: /healthz, /v1/cluster/*
  int64_t lease = 0;  // filled from the key's lease when read, not from the JSON
  std::vector<SlotReport> slots;  // by partition

  const SlotReport* Slot(uint32_t partition) const;
};
std::string EncodeNodeRecord(const NodeRecord& record);
Result<NodeRecord> DecodeNodeRecord(std::string_view json);

// Who owns and who stands by for a partition. `owner_lease` is the lease the owner held when
// it was named: a node that restarted (a new lease) is not the owner of its old assignment
// until the controller names it again under a new epoch.
struct Assignment {
  std::string owner;
  int64_t owner_lease = 0;
  std::string standby;  // empty: none
  int64_t epoch = 0;    // the key's mod_revision when read; not in the JSON
};
std::string EncodeAssignment(const Assignment& assignment);
Result<Assignment> DecodeAssignment(std::string_view json);

struct MoveRequest {
  std::string to;
};
std::string EncodeMoveRequest(const MoveRequest& request);
Result<MoveRequest> DecodeMoveRequest(std::string_view json);

// A drain applies while the node holds the lease it had when the drain was asked for: once
// the node restarts (a new lease), the drain is over and the controller deletes it.
struct DrainRequest {
  int64_t lease = 0;
};
std::string EncodeDrainRequest(const DrainRequest& request);
Result<DrainRequest> DecodeDrainRequest(std::string_view json);

std::string EncodeClusterConfig(uint32_t partitions);
Result<uint32_t> DecodeClusterConfig(std::string_view json);

}  // namespace statewatch::control

#endif  // STATEWATCH_CONTROL_CLUSTER_RECORDS_H_

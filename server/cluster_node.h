// ClusterNode: `statewatch serve --cluster NATS --etcd ETCD --node-id ID --partitions P`
// (docs/cluster-internals.md, "Ownership on etcd") — a node under the control plane. It
//   - holds a lease in etcd (control/lease_keeper.h) and registers /sw/<cluster>/nodes/<id>
//     under it: its own URL and, for every partition it serves, the slot's role, URL,
//     stream position and epoch;
//   - runs the controller (control/controller.h): one node of the cluster leads and writes
//     the assignments;
//   - reconciles its slots with the assignments every poll interval. A slot is a
//     StandbyDaemon on DATA/p<p>, listening on a port of its own: opened as a standby when
//     the node is the partition's owner or standby, taken over (fenced under the
//     assignment's epoch) when the node is named owner under its current lease, closed and
//     reopened as a standby when an owner must step down, closed when the node has no role.
//     An owner a planned move replaces hands over: it refuses reads but keeps taking writes
//     until the new owner reports it has fenced (bounded by two TTLs), so that writes stall
//     for about one fence;
//   - answers its own port (net/http_listener.h): GET /healthz (liveness), GET /readyz (the
//     lease held and every partition assigned to this node as owner owned, by a serving
//     owner slot whose engine takes writes; else 503 naming each), GET /v1/cluster/status,
//     POST /v1/cluster/move {"partition", "to"}, POST /v1/cluster/drain {"node"}; every other
//     request goes to the owner of the partition it concerns (server/partition_router.h).
// Every slot's gate refuses all routes with 503 partition_moved while the lease has lapsed,
// and an owner slot also once the node holds another lease than the one it was named owner
// under (a node whose lease expired may have been failed over already).
//
// Thread-safe: Shutdown() from any thread; Run() once.
#ifndef STATEWATCH_SERVER_CLUSTER_NODE_H_
#define STATEWATCH_SERVER_CLUSTER_NODE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "control/controller.h"
#include "control/etcd_client.h"
#include "control/lease_keeper.h"
#include "log/checkpoint_store.h"
#include "log/log_backend.h"
#include "net/http_listener.h"
#include "server/access_control.h"
#include "server/partition_router.h"
#include "server/server_options.h"
#include "server/standby_daemon.h"
#include "server/watcher_sagas.h"

namespace statewatch::server {

// A partition's stream and checkpoint store (JetStream in production).
struct PartitionLogs {
  std::shared_ptr<log::LogBackend> stream;
  std::shared_ptr<log::CheckpointStore> checkpoints;
};

struct ClusterNodeOptions {
  // host, port (the node's own port; 0: a free one), data_dir (the node's root: a slot's
  // directory is data_dir/p<p>), token and the rest: as for a daemon; every slot gets them.
  ServerOptions server;
  std::vector<std::string> etcd;  // the etcd members' client URLs
  std::string cluster = "statewatch";
  std::string node_id;
  uint32_t partitions = 1;
  int64_t lease_ttl_seconds = 5;
  std::chrono::milliseconds poll{100};  // reconcile and controller rounds
  uint64_t checkpoint_every = 100000;   // cluster checkpoints (ReplicatedLogOptions)
  uint64_t warm_lag = 1000;             // a move promotes a standby this close to the owner
  // Opens partition p's stream and checkpoints.
  std::function<Result<PartitionLogs>(uint32_t partition)> open_partition;
};

class ClusterNode {
 public:
  // Connects to etcd, checks the cluster's partition count (the first node writes it),
  // waits up to one lease TTL for an earlier run's record of this node id to expire
  // (FailedPrecondition when a running node holds the id), takes a lease, binds the
  // node's port and starts reconciling. InvalidArgument for bad options.
  static Result<std::unique_ptr<ClusterNode>> Start(ClusterNodeOptions options);
  ~ClusterNode();

  uint16_t port() const { return listener_->port(); }
  // Blocks until Shutdown() (or a signal after HandleSignals()).
  void Run();
  // Stops reconciling, closes every slot, revokes the lease (the controller fails over at
  // once instead of after the TTL).
  void Shutdown();
  void HandleSignals();

 private:
  // One partition this node serves: the standby daemon (which becomes the owner's daemon on
  // a takeover) and the thread running it.
  struct Slot {
    std::unique_ptr<StandbyDaemon> daemon;
    std::thread runner;
    std::atomic<bool> finished{false};
    // The lease this node held when it was named owner; 0 while a standby.
    std::shared_ptr<std::atomic<int64_t>> owner_lease =
        std::make_shared<std::atomic<int64_t>>(0);
    // Set while this owner hands the partition to the owner a newer assignment named: the
    // new owner's name. Empty otherwise. Read by the owner's gate.
    std::shared_ptr<std::mutex> handover_mu = std::make_shared<std::mutex>();
    std::shared_ptr<std::string> handing_to = std::make_shared<std::string>();
    std::chrono::steady_clock::time_point handover_since;
    std::string url;
  };
  explicit ClusterNode(ClusterNodeOptions options);
  // Lifecycle (server/cluster_node.cc).
  Status CheckConfig();
  Status LoadSecret();
  Status WaitForOldRecord();
  Status Publish();
  void ReconcileLoop();
  void ControllerLoop();
  // The slots (server/cluster_node_slots.cc).
  void Reconcile();
  Status OpenSlot(uint32_t p);
  void CloseSlot(uint32_t p);
  void MakeOwner(uint32_t p, const control::Assignment& a);
  bool HandedOver(uint32_t p, const control::Assignment& a, const control::PlacementInput& cluster);
  std::optional<std::string> SlotLapsed(const std::shared_ptr<std::atomic<int64_t>>& owner_lease) const;
  // The owners' slot URLs, as the last read of etcd named them (the router's directory).
  void UpdateOwners(const control::PlacementInput& cluster);
  std::optional<OwnerAddress> OwnerOf(uint32_t partition, bool refresh);
  std::vector<control::SlotReport> Reports();
  // The node's own port (server/cluster_node_port.cc).
  net::ListenerAnswer Handle(const net::ListenerRequest& request);
  net::ListenerAnswer Readiness();

  const ClusterNodeOptions options_;
  const control::ClusterKeys keys_;
  std::shared_ptr<control::EtcdClient> etcd_;
  std::unique_ptr<control::LeaseKeeper> keeper_;
  std::unique_ptr<control::Controller> controller_;
  std::unique_ptr<PartitionRouter> router_;
  std::unique_ptr<net::HttpListener> listener_;
  std::string url_;
  std::string secret_;  // the cluster's (server/internal_call.h): the router and every slot

  std::mutex slots_mu_;  // slots_ and what a slot holds; taken by the reconcile thread and
                         // by Reports() (the publisher)
  std::map<uint32_t, std::unique_ptr<Slot>> slots_;
  std::map<uint32_t, PartitionLogs> logs_;  // opened once per partition, kept
  std::map<uint32_t, uint16_t> ports_;      // a slot reopens on the port it had

  std::mutex owners_mu_;
  std::map<uint32_t, OwnerAddress> owners_;

  // The node's port checks tokens as a daemon does (the slots check the routes' scopes).
  std::unique_ptr<AccessControl> access_;
  std::mutex ready_mu_;  // what the last reconcile read, for GET /readyz
  std::vector<uint32_t> should_own_;  // assigned to this node as owner under its lease
  bool assignments_read_ = false;

  std::atomic<bool> stop_{false};
  std::atomic<bool> republish_{true};
  std::mutex wait_mu_;
  std::condition_variable wake_;
  std::thread reconciler_;
  std::thread controller_thread_;
  // The watcher directory and the watcher-removal sagas (server/watcher_sagas.h); the saga
  // thread resumes the sagas journaled at the partitions this node owns, every second.
  std::unique_ptr<WatcherCoordinator> watchers_;
  std::thread sagas_thread_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_CLUSTER_NODE_H_

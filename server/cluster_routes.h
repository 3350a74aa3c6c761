// ClusterGate: the daemon's cluster mode at the HTTP edge (docs/cluster-internals.md,
// "`statewatch serve --cluster … --partition p --role owner|standby`"). It runs after
// authentication and before the route's handler, and
//   - answers the cluster routes, the route table's cluster-only rows (server/route_table.h;
//     the router matches them only when a gate is installed, and the OpenAPI document marks
//     them x-statewatch-cluster-only), in every role:
//       GET  /v1/cluster/status    -> {"partition", "role", "epoch", "position",
//                                      "checkpointPosition", "takenOverAt"?, "movedReason"?}
//       GET  /v1/cluster/digest    -> {"partition", "role", "position", "digest", "bytes"}:
//                                     SHA-256 of GET /v1/export's body, read at one position
//       POST /v1/cluster/takeover  {"partition"?} -> {"partition", "role", "epoch",
//                                     "position"}; 409 when this node is not a standby
//     and names them in its 404 for any other path under /v1/cluster/;
//   - on a standby: serves the read routes (verify, export, stats, versions, session state,
//     notices peek, cursor, clock, openapi) from a read-only engine opened between two
//     folds, and refuses every other route with 503 {"error": {"code": "standby"}} naming the
//     partition and the owner's epoch;
//   - while a takeover runs: 503 "switching";
//   - once the partition moved (a newer owner fenced this one out), or while the node's etcd
//     lease has lapsed (Hooks::lease_lapsed): 503 "partition_moved" for every route — a
//     fenced node's reads could be stale, and a node without its lease may be fenced any
//     moment.
// GET /healthz and GET /metrics are answered in every role (the node is alive).
//
// Thread-safe: Intercept runs concurrently on the server's I/O threads; the hooks must be
// thread-safe.
#ifndef STATEWATCH_SERVER_CLUSTER_ROUTES_H_
#define STATEWATCH_SERVER_CLUSTER_ROUTES_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cluster/partition_state.h"
#include "server/api.h"
#include "statewatch/engine.h"

namespace statewatch::server {

class ClusterGate final : public RequestGate {
 public:
  struct TakeoverResult {
    uint64_t epoch = 0;
    uint64_t position = 0;  // the stream position of the new owner's fence
  };
  // What only a standby has. Empty in an owner.
  struct Hooks {
    // Runs `read` on a read-only engine over the standby's directory while no fold runs,
    // with the stream position that directory holds.
    std::function<Status(const std::function<Status(Engine&, uint64_t position)>& read)>
        with_snapshot;
    // Turns the standby into the owner (server/standby_daemon.h).
    std::function<Result<TakeoverResult>()> takeover;
    // In a node under the control plane (server/cluster_node.h): why this node must not
    // serve its partitions right now (its etcd lease lapsed), or nullopt. When set and it
    // gives a reason, every route but /healthz, /metrics and the cluster routes answers 503
    // partition_moved with it — in every role, before the role's own answer.
    std::function<std::optional<std::string>()> lease_lapsed;
    // In such a node: why this owner is handing its partition over (a planned move named
    // another owner), or nullopt. While it gives a reason the owner refuses reads (GET
    // routes, WebSocket feeds) with 503 partition_moved — the new owner may fence and write
    // any moment — and keeps taking writes: each lands before the new owner's fence (which
    // folds it) or is refused at the log, so writes stall for about one fence, not longer.
    std::function<std::optional<std::string>()> stepping_down;
  };

  ClusterGate(std::shared_ptr<cluster::PartitionState> state, Hooks hooks);

  std::optional<ApiResponse> Intercept(const HandlerContext& ctx, const ApiRequest& request,
                                       std::string_view path,
                                       const RouteLookup& found) override;
  ApiResponse AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                 const ApiRequest& request) override;

 private:
  ApiResponse StatusAnswer(const cluster::PartitionView& view) const;
  ApiResponse Digest(const HandlerContext& ctx, const cluster::PartitionView& view) const;
  ApiResponse Takeover(const ApiRequest& request, const cluster::PartitionView& view) const;
  ApiResponse FromSnapshot(const HandlerContext& ctx, const ApiRequest& request,
                           const RouteLookup& found) const;

  std::shared_ptr<cluster::PartitionState> state_;
  Hooks hooks_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_CLUSTER_ROUTES_H_

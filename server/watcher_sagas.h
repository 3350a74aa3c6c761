// The watcher directory and the watcher-removal sagas across a cluster's partitions
// (docs/cluster-internals.md, "Watchers across partitions"). Two halves:
//
// At a slot — WatcherDirectoryGate, a RequestGate around the partition's ClusterGate that
// answers the cluster-internal routes of the directory (include/statewatch/watcher_directory.h)
// on the owner, after the ClusterGate's own checks for a write (a standby, a switching or
// moved partition, a lapsed lease refuse them as they refuse any write):
//   GET  /v1/internal/watchers/partitions?watcher=W  -> {"watcher", "partitions", "version"}
//   POST /v1/internal/watchers/register {"watcher", "partition"}           -> the listing
//   POST /v1/internal/watchers/clear    {"watcher", "saga": number}  removes W's cursors
//        here once per saga number (a late copy removes nothing) -> {"cleared"[, "late"]}
//   POST /v1/internal/watchers/saga     {"watcher", "kind", "home"[, "requestId"]}
//        removes W's cursors at the home and journals the saga -> {"saga", "version"}, or
//        {"replayed": true} when the home already has a record of that X-Request-Id
//   POST /v1/internal/watchers/confirm  {"watcher", "partition", "version"} -> {"saga"}
//   GET  /v1/internal/watchers/sagas    -> {"sagas": [{..., "version"}]}
// Every one is idempotent. Authorization: a valid X-Statewatch-Internal header when the
// daemon has a cluster secret (ServerOptions::cluster_secret; a node's port never forwards
// /v1/internal/… from a client), else the daemon's own token when it has one. The routes
// are not in the route table (no client calls them).
//
// At a node — WatcherCoordinator, used by the node's port (server/cluster_node.h):
//   - BeforeForward: a watch (POST /v1/watches) or events naming watchers (POST /v1/events,
//     "watchers") whose target lies outside the watcher's home partition first registers the
//     target's partition at the home; only then is the request forwarded, so the directory
//     is a superset of the partitions holding W's cursors. A registration that fails
//     refuses the request (503, nothing written).
//   - NoticePartitions: the home and what its directory lists (PartitionRouterOptions::
//     watcher_partitions); nullopt when the home cannot be read (the router asks all).
//   - Remove: POST /v1/sessions/{key}/reset and DELETE /v1/sessions/{key} of an agent-scoped
//     key W journal a saga at W's home naming the home and every listed partition, forward
//     the request to the home as before, then clear W's cursors at each partition and
//     confirm each at the home; the answer carries X-Statewatch-Saga: done or pending
//     (replayed, with no saga, for a retry the home answers from its X-Request-Id record).
//   - ResumeOnce: drives every saga journaled at the partitions this node owns (the node
//     runs it every second, so a restart or takeover of a home owner carries a saga on).
// A saga step that cannot be done now stays journaled; every step is idempotent.
//
// Thread-safe: every method may run concurrently (steps race harmlessly: idempotent).
#ifndef STATEWATCH_SERVER_WATCHER_SAGAS_H_
#define STATEWATCH_SERVER_WATCHER_SAGAS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/object.hpp>

#include "net/http_client.h"
#include "net/http_listener.h"
#include "server/api.h"
#include "server/partition_router.h"

namespace statewatch::server {

inline constexpr std::string_view kWatcherRoutesPrefix = "/v1/internal/watchers/";

class WatcherDirectoryGate final : public RequestGate {
 public:
  // `inner`: the partition's ClusterGate (owned by the caller, outlives this gate).
  explicit WatcherDirectoryGate(RequestGate* inner) : inner_(inner) {}

  std::optional<ApiResponse> Intercept(const HandlerContext& ctx, const ApiRequest& request,
                                       std::string_view path, const RouteLookup& found) override;
  ApiResponse AnswerClusterRoute(ClusterRoute route, const HandlerContext& ctx,
                                 const ApiRequest& request) override {
    return inner_->AnswerClusterRoute(route, ctx, request);
  }

 private:
  RequestGate* inner_;
};

// The answer of one internal route (the request's target under kWatcherRoutesPrefix) on
// `engine`, with no gate or token check: what WatcherDirectoryGate answers once they passed.
ApiResponse AnswerWatcherRoute(Engine& engine, const ApiRequest& request);

// A gate that owns its inner ClusterGate (for ServerOptions::gate, a shared_ptr).
std::shared_ptr<RequestGate> WithWatcherDirectory(std::shared_ptr<RequestGate> inner);

struct WatcherCoordinatorOptions {
  uint32_t partitions = 1;
  // As PartitionRouterOptions.
  OwnerLookup owner;
  OwnerSend send;
  std::function<void(std::chrono::milliseconds)> sleep;
  std::string token;  // the slots' token (ServerOptions::token), "" when none
  // The cluster's secret: every call carries X-Statewatch-Internal (server/internal_call.h).
  std::string secret;
  // How long one internal call is retried while its partition has no serving owner (a
  // failover), and the wait between tries; one exchange's timeout.
  std::chrono::milliseconds retry_for{5000};
  std::chrono::milliseconds retry_wait{100};
  std::chrono::milliseconds request_timeout{5000};
};

class WatcherCoordinator {
 public:
  explicit WatcherCoordinator(WatcherCoordinatorOptions options);

  std::optional<net::ListenerAnswer> BeforeForward(const net::ListenerRequest& request) const;
  std::optional<std::vector<uint32_t>> NoticePartitions(const std::string& watcher) const;
  // True (with the watcher and kind) for a reset or a deletion of an agent-scoped session.
  bool IsRemoval(const net::ListenerRequest& request, std::string* watcher,
                 std::string* kind) const;
  net::ListenerAnswer Remove(const net::ListenerRequest& request,
                             const std::function<net::ListenerAnswer()>& forward) const;
  // Drives the sagas pending at every partition `owned` accepts. Returns how many sagas
  // finished.
  int ResumeOnce(const std::function<bool(uint32_t partition)>& owned) const;

  // The home partition of an agent-scoped watcher key; nullopt for any other key.
  std::optional<uint32_t> HomeOf(const std::string& watcher) const;

 private:
  // One internal call to partition p's owner, retried while the owner refuses before
  // anything landed or cannot be reached; the answer's body as an object.
  Result<boost::json::object> Call(uint32_t partition, const std::string& method,
                                   const std::string& target, const std::string& body) const;
  Status Register(const std::string& watcher, uint32_t home, uint32_t partition) const;
  // Clears W's cursors at each partition of `saga` and confirms it at `home`. OK once the
  // saga is done.
  Status Drive(uint32_t home, const boost::json::object& saga, uint64_t version) const;

  const WatcherCoordinatorOptions options_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_WATCHER_SAGAS_H_

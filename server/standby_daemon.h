// StandbyDaemon: `statewatch serve --cluster URLS --partition p --role standby`
// (docs/cluster-internals.md, "The standby: fold the stream",
// "Fencing and `statewatch takeover --partition p`" and
// "`statewatch serve --cluster … --partition p --role owner|standby`"). It folds the
// partition's stream into its data directory continuously (cluster::Follower), serves the
// read routes from that directory and refuses writes with 503 (server/cluster_routes.h),
// and on POST /v1/cluster/takeover becomes the partition's owner without a restart:
//   1. the follow loop stops and the directory is closed;
//   2. the owner's engine opens on it through cluster::OwnerLog — it folds to the stream's
//      tail, appends Fence{last epoch + 1} (the previous owner's next append fails), replays,
//      and runs the restart sweep;
//   3. the answer {"epoch", "position"} goes out, the standby's HTTP server stops, and a
//      server::Daemon around that engine binds the same address and serves reads and
//      writes. New connections are refused for the moments between the two servers.
// A takeover that fails before the fence (no stream, another owner appending through every
// fence round) reopens the directory and the node follows again; the error is the answer.
//
// The standby's own HTTP server runs on a read-only engine opened at start (for the
// transport's plumbing: wakes never fire on a standby); each read route opens a fresh
// read-only engine while the fold is paused, so every read sees one stream position.
//
// Thread-safe: Shutdown() from any thread; Run() once.
#ifndef STATEWATCH_SERVER_STANDBY_DAEMON_H_
#define STATEWATCH_SERVER_STANDBY_DAEMON_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "cluster/follower.h"
#include "cluster/partition_state.h"
#include "cluster/replicated_log.h"
#include "log/log_backend.h"
#include "server/cluster_routes.h"
#include "server/daemon.h"
#include "server/http_server.h"

namespace statewatch::server {

struct StandbyDaemonOptions {
  // data_dir, listen address, token, ...: as for a Daemon; the owner daemon a takeover opens
  // gets the same ones (wrap_log and partition are set by the StandbyDaemon).
  ServerOptions server;
  std::shared_ptr<log::LogBackend> remote;  // the partition's stream
  cluster::ReplicatedLogOptions log;        // partition, partitions, node, retry, fence rounds,
                                            // checkpoints (the follower restores from them too)
  std::chrono::milliseconds follow_interval{50};
  // Given to both the standby's gate and, after a takeover, the owner's
  // (ClusterGate::Hooks::lease_lapsed). Null outside a control-plane node.
  std::function<std::optional<std::string>()> lease_lapsed;
  // Given to the owner's gate after a takeover (ClusterGate::Hooks::stepping_down).
  std::function<std::optional<std::string>()> stepping_down;
  // Called once after a takeover, when the owner's server is bound to the address (a
  // connection made from then on is served). Null: nobody is told.
  std::function<void()> owner_bound;
};

class StandbyDaemon {
 public:
  // Opens the directory, folds to the stream's tail, starts following and binds. Errors:
  // InvalidArgument (options), FailedPrecondition (the directory follows another
  // partition), Busy (held by another process), IOError (bind or stream).
  static Result<std::unique_ptr<StandbyDaemon>> Open(StandbyDaemonOptions options);
  ~StandbyDaemon();

  uint16_t port() const { return port_; }
  const std::shared_ptr<cluster::PartitionState>& partition() const { return state_; }

  // Serves as the standby until Shutdown(), or after a takeover as the owner until
  // Shutdown(). The error when the owner's daemon could not be opened after the fence (the
  // engine is closed then; restart the node with --role owner).
  Status Run();
  void Shutdown();
  // SIGINT / SIGTERM -> Shutdown(), in either role.
  void HandleSignals();

  // After a takeover: the owner's daemon, non-null once its server is bound to the address.
  // From the takeover's answer until then the address refuses connections (the standby's
  // server is gone, the owner's not yet there); null before a takeover.
  Daemon* owner();

  // The takeover of POST /v1/cluster/takeover, called by the control plane's node with the
  // partition's assignment epoch (ReplicatedLogOptions::assignment_epoch; 0: last + 1).
  // Returns once the owner's engine is open and fenced; Run() then serves as the owner.
  // FailedPrecondition when this node is no longer a standby or the assignment is stale.
  Result<ClusterGate::TakeoverResult> TakeOver(uint64_t assignment_epoch);

 private:
  explicit StandbyDaemon(StandbyDaemonOptions options);
  Status StartFollowing();
  Status WithSnapshot(const std::function<Status(Engine&, uint64_t)>& read);

  StandbyDaemonOptions options_;
  std::shared_ptr<cluster::PartitionState> state_;
  std::shared_ptr<ManualClock> snapshot_clock_;  // with --manual-clock: the reads' clock
  uint16_t port_ = 0;

  std::mutex mu_;
  std::shared_ptr<cluster::Follower> follower_;      // null while taking over / after
  std::optional<Daemon::OpenedEngine> owner_engine_;  // from the takeover until Run() uses it
  std::unique_ptr<Daemon> owner_;
  bool shutdown_ = false;
  bool signals_ = false;

  std::unique_ptr<Engine> anchor_;  // read-only; the standby transport's engine
  Metrics metrics_;
  std::unique_ptr<ClusterGate> gate_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_STANDBY_DAEMON_H_

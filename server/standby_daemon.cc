#include "server/standby_daemon.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "server/session_mail_route.h"
#include "server/watcher_sagas.h"

namespace statewatch::server {

namespace {

Result<std::unique_ptr<Engine>> OpenReadOnly(const ServerOptions& server,
                                             std::shared_ptr<ManualClock> clock) {
  EngineOptions o;
  o.read_only = true;
  o.partition = server.partition;  // the owner's numbering, checked against the meta
  o.partitions = server.partitions;
  if (clock) o.clock = std::move(clock);
  return Engine::Open(o, server.data_dir);
}

}  // namespace

StandbyDaemon::StandbyDaemon(StandbyDaemonOptions options)
    : options_(std::move(options)),
      state_(std::make_shared<cluster::PartitionState>(options_.log.partition)) {
  options_.log.state = state_;
  // The read-only engine and the takeover's owner number n * P + p like the old owner.
  options_.server.partition = options_.log.partition;
  options_.server.partitions = options_.log.partitions;
  if (options_.server.manual_clock) {
    snapshot_clock_ = std::make_shared<ManualClock>(options_.server.manual_clock_start_ms);
  }
}

Result<std::unique_ptr<StandbyDaemon>> StandbyDaemon::Open(StandbyDaemonOptions options) {
  SW_RETURN_IF_ERROR(ValidateServerOptions(options.server));
  if (!options.remote) return Status::InvalidArgument("StandbyDaemon: no stream (remote)");
  std::unique_ptr<StandbyDaemon> d(new StandbyDaemon(std::move(options)));
  SW_RETURN_IF_ERROR(d->StartFollowing());
  auto anchor = OpenReadOnly(d->options_.server, d->snapshot_clock_);
  if (!anchor.ok()) return anchor.status();
  d->anchor_ = std::move(*anchor);
  ClusterGate::Hooks hooks;
  StandbyDaemon* raw = d.get();
  hooks.with_snapshot = [raw](const std::function<Status(Engine&, uint64_t)>& read) {
    return raw->WithSnapshot(read);
  };
  hooks.takeover = [raw] { return raw->TakeOver(0); };
  hooks.lease_lapsed = d->options_.lease_lapsed;
  d->gate_ = std::make_unique<ClusterGate>(d->state_, std::move(hooks));
  ApiServices services;
  services.engine = d->anchor_.get();
  services.metrics = &d->metrics_;
  services.gate = d->gate_.get();
  d->api_ = std::make_unique<Api>(services, d->options_.server);
  auto server = HttpServer::Bind(d->anchor_.get(), d->api_.get(), &d->metrics_, d->options_.server);
  if (!server.ok()) return server.status();
  d->server_ = std::move(*server);
  d->port_ = d->server_->port();
  spdlog::info("event=cluster_standby partition={} position={} epoch={}",
               d->options_.log.partition, d->state_->view().position, d->state_->view().epoch);
  return d;
}

StandbyDaemon::~StandbyDaemon() {
  Shutdown();
  server_.reset();
  api_.reset();
  gate_.reset();
  owner_.reset();
  owner_engine_.reset();
  std::shared_ptr<cluster::Follower> follower;
  {
    std::lock_guard lock(mu_);
    follower = std::move(follower_);
  }
  if (follower) follower->Stop();
  anchor_.reset();
}

Status StandbyDaemon::StartFollowing() {
  cluster::FollowerOptions fo;
  fo.path = options_.server.data_dir;
  fo.remote = options_.remote;
  fo.partition = options_.log.partition;
  fo.partitions = options_.log.partitions;
  fo.state = state_;
  fo.interval = options_.follow_interval;
  fo.checkpoints = options_.log.checkpoints;  // a standby behind the purge restores from it
  auto follower = cluster::Follower::Start(fo);
  if (!follower.ok()) return follower.status();
  std::lock_guard lock(mu_);
  follower_ = std::move(*follower);
  return Status::OK();
}

Status StandbyDaemon::WithSnapshot(const std::function<Status(Engine&, uint64_t)>& read) {
  std::shared_ptr<cluster::Follower> follower;
  {
    std::lock_guard lock(mu_);
    follower = follower_;
  }
  if (!follower) {
    return Status::FailedPrecondition(
        "partition " + std::to_string(options_.log.partition) +
        " is not being followed here (a takeover by this node is under way, or failed and "
        "following again failed too): retry");
  }
  return follower->Paused([&](const cluster::AppliedState& applied) {
    auto engine = OpenReadOnly(options_.server, snapshot_clock_);
    if (!engine.ok()) return engine.status();
    return read(**engine, applied.position);
  });
}

// Runs on an I/O thread of the standby's server (the gate has checked the role), or on the
// control plane node's reconcile thread.
Result<ClusterGate::TakeoverResult> StandbyDaemon::TakeOver(uint64_t assignment_epoch) {
  if (!state_->BeginTakeover()) {
    return Status::FailedPrecondition("partition " + std::to_string(options_.log.partition) +
                                      ": this node is no longer a standby");
  }
  std::shared_ptr<cluster::Follower> follower;
  {
    std::lock_guard lock(mu_);
    follower = std::move(follower_);
  }
  // None when an earlier takeover failed and so did following again (the log was
  // unreachable for both): then nothing holds the directory, and this is the retry.
  if (follower) {
    follower->Stop();  // closes the directory for the owner's engine
    follower.reset();
  }
  ServerOptions owner = options_.server;
  cluster::ReplicatedLogOptions log = options_.log;
  log.assignment_epoch = assignment_epoch;
  owner.wrap_log = cluster::OwnerLog(options_.remote, log);
  auto opened = Daemon::OpenEngine(owner);
  if (!opened.ok()) {
    spdlog::error("event=takeover_failed partition={} error=\"{}\"", options_.log.partition,
                  opened.status().ToString());
    state_->AbortTakeover();
    // Not following is not fatal: reads here answer "retry", and the control plane's next
    // takeover (or this one's retry) starts from the directory as it was.
    if (Status s = StartFollowing(); !s.ok()) {
      spdlog::error("event=follow_restart_failed partition={} error=\"{}\"",
                    options_.log.partition, s.ToString());
    }
    return opened.status();
  }
  const cluster::PartitionView view = state_->view();
  // scripts/cluster-chaos.py reads this line (and event=owner_serving) to place the new
  // owner's restart sweep among the writers' operations: keep its form.
  spdlog::info("event=takeover partition={} epoch={} position={}", view.partition, view.epoch,
               view.taken_over_at);
  {
    std::lock_guard lock(mu_);
    owner_engine_ = std::move(*opened);
  }
  // Graceful: this request's answer is written before the server's Run() returns.
  server_->Shutdown();
  return ClusterGate::TakeoverResult{view.epoch, view.taken_over_at};
}

Status StandbyDaemon::Run() {
  server_->Run();
  std::optional<Daemon::OpenedEngine> engine;
  std::unique_ptr<HttpServer> standby_server;
  {
    std::lock_guard lock(mu_);
    if (!owner_engine_ || shutdown_) return Status::OK();
    engine = std::move(owner_engine_);
    owner_engine_.reset();
    standby_server = std::move(server_);
  }
  standby_server.reset();  // frees the address for the owner's server
  api_.reset();
  gate_.reset();
  anchor_.reset();
  ServerOptions o = options_.server;
  o.port = port_;
  ClusterGate::Hooks owner_hooks;
  owner_hooks.lease_lapsed = options_.lease_lapsed;
  owner_hooks.stepping_down = options_.stepping_down;
  // The owner also answers the watcher directory's internal routes (server/watcher_sagas.h).
  o.gate = WithWatcherDirectory(std::make_shared<ClusterGate>(state_, std::move(owner_hooks)));
  // A node's owner slot also takes session mail from other partitions
  // (docs/cluster-internals.md, "Session tools across partitions").
  if (o.session_mail) o.gate = WithSessionMail(std::move(o.gate));
  auto daemon = Daemon::Open(o, std::move(*engine));
  if (!daemon.ok()) {
    spdlog::error("event=owner_open_failed partition={} error=\"{}\"", options_.log.partition,
                  daemon.status().ToString());
    return daemon.status();
  }
  Daemon* running = nullptr;
  {
    std::lock_guard lock(mu_);
    owner_ = std::move(*daemon);
    if (shutdown_) return Status::OK();
    if (signals_) owner_->HandleSignals();
    running = owner_.get();
  }
  if (options_.owner_bound) options_.owner_bound();
  spdlog::info("event=owner_serving partition={} port={}", options_.log.partition,
               running->port());
  running->Run();
  return Status::OK();
}

void StandbyDaemon::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  if (owner_) {
    owner_->Shutdown();
  } else if (server_) {
    server_->Shutdown();
  }
}

void StandbyDaemon::HandleSignals() {
  std::lock_guard lock(mu_);
  signals_ = true;
  if (server_) server_->HandleSignals();
}

Daemon* StandbyDaemon::owner() {
  std::lock_guard lock(mu_);
  return owner_.get();
}

}  // namespace statewatch::server

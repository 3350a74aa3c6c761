// Daemon: everything `statewatch serve` runs — the engine (opened, restart sweep done), the
// session messaging (sessions_send and friends, the delivery feed), the upstream monitor on
// its own thread, the metrics, the Api and the HttpServer — owned together and torn down in
// the right order (the monitor stopped, then the server, then the messaging, then the
// engine, which closes the database cleanly). In cluster mode options.gate sees every
// request first. The end-to-end tests run the very same object
// in-process.
//
// Thread-safe: Shutdown() from any thread; Run() once.
#ifndef STATEWATCH_SERVER_DAEMON_H_
#define STATEWATCH_SERVER_DAEMON_H_

#include <memory>

#include "monitor/upstream_monitor.h"
#include "server/api.h"
#include "server/delivery_hub.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/mcp_server.h"
#include "server/monitor_driver.h"
#include "server/prune_scheduler.h"
#include "server/server_options.h"
#include "server/wake_log.h"
#include "statewatch/clock.h"
#include "statewatch/engine.h"
#include "tools/session_mail_forwarder.h"
#include "tools/session_messaging.h"
#include "webhooks/dispatcher.h"

namespace statewatch::server {

class Daemon {
 public:
  // Validates the options, checks that the address can be bound (a port in use is an IOError
  // before the data directory is touched), opens the engine on options.data_dir, runs its
  // start step (the restart sweep), and binds. Errors: InvalidArgument (options), Busy (the
  // database is held by another process), IOError (bind), and whatever Engine::Open returns.
  static Result<std::unique_ptr<Daemon>> Open(const ServerOptions& options);

  // The engine as Open opens it (started: the restart sweep done), with the manual clock
  // the options ask for. A standby's takeover (server/standby_daemon.h) opens the owner's
  // engine first and then the daemon around it.
  struct OpenedEngine {
    std::unique_ptr<Engine> engine;
    std::shared_ptr<ManualClock> manual_clock;  // null without options.manual_clock
  };
  static Result<OpenedEngine> OpenEngine(const ServerOptions& options);
  static Result<std::unique_ptr<Daemon>> Open(const ServerOptions& options, OpenedEngine opened);
  ~Daemon();

  uint16_t port() const { return server_->port(); }
  Engine& engine() { return *engine_; }
  tools::SessionMessaging& messaging() { return *messaging_; }
  monitor::UpstreamMonitor& upstream_monitor() { return *monitor_; }
  const ServerOptions& options() const { return options_; }

  // Applies the reloadable part of `next` — the session tools' policy (visibility,
  // agent-to-agent, tool policy, ping-pong turns) and the access tokens (token, tokens,
  // open_metrics) — to every later request, without touching a connection. The rest of
  // `next` is ignored (see server/config_reload.h).
  // InvalidArgument (and nothing changes) when the policy is invalid, or when `next` has no
  // token while the daemon started with one (that needs a restart: the Host policy depends
  // on it). With TLS, the
  // certificate, key and client CA files are re-read first (HttpServer::ReloadTls); one that
  // no longer loads is an error naming it, and nothing changes.
  Status Reconfigure(const ServerOptions& next);

  void Run() { server_->Run(); }
  void Shutdown() { server_->Shutdown(); }
  void HandleSignals() { server_->HandleSignals(); }

 private:
  explicit Daemon(const ServerOptions& options) : options_(options) {}
  // The session messaging and the upstream monitor (not started) over the open engine.
  Status OpenServices();
  void OpenMcp();

  ServerOptions options_;
  std::shared_ptr<ManualClock> manual_clock_;
  std::unique_ptr<Engine> engine_;
  DeliveryHub deliveries_;
  std::unique_ptr<tools::SessionMessaging> messaging_;
  // Cluster mode with options_.session_mail: carries the session mail outbox
  // (docs/cluster-internals.md, "Session tools across partitions").
  std::unique_ptr<tools::SessionMailForwarder> mail_forwarder_;
  std::unique_ptr<monitor::UpstreamMonitor> monitor_;
  std::unique_ptr<MonitorDriver> monitor_driver_;
  std::unique_ptr<PruneScheduler> pruner_;  // retention on the engine's clock
  std::unique_ptr<webhooks::Dispatcher> webhooks_;  // notice webhooks (docs/webhooks.md)
  Metrics metrics_;
  std::unique_ptr<WakeLog> wake_log_;  // the console's last wake per watcher
  std::unique_ptr<McpServer> mcp_;  // /mcp; holds a wake subscription
  uint64_t mcp_wakes_ = 0;
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_DAEMON_H_

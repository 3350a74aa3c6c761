// Daemon: everything `statewatch serve` runs — the engine (opened, restart sweep done), the
// metrics, the Api and the HttpServer — owned together and torn down in the right order
// (server first, then the engine, which closes the database cleanly). The end-to-end tests
// run the very same object in-process.
//
// Thread-safe: Shutdown() from any thread; Run() once.
#ifndef STATEWATCH_SERVER_DAEMON_H_
#define STATEWATCH_SERVER_DAEMON_H_

#include <memory>

#include "server/api.h"
#include "server/http_server.h"
#include "server/metrics.h"
#include "server/server_options.h"
#include "statewatch/clock.h"
#include "statewatch/engine.h"

namespace statewatch::server {

class Daemon {
 public:
  // Validates the options, opens the engine on options.data_dir, runs its start step (the
  // restart sweep), and binds. Errors: InvalidArgument (options), Busy (the database is
  // held by another process), IOError (bind), and whatever Engine::Open returns.
  static Result<std::unique_ptr<Daemon>> Open(const ServerOptions& options);
  ~Daemon();

  uint16_t port() const { return server_->port(); }
  Engine& engine() { return *engine_; }
  const ServerOptions& options() const { return options_; }

  void Run() { server_->Run(); }
  void Shutdown() { server_->Shutdown(); }
  void HandleSignals() { server_->HandleSignals(); }

 private:
  explicit Daemon(const ServerOptions& options) : options_(options) {}

  ServerOptions options_;
  std::shared_ptr<ManualClock> manual_clock_;
  std::unique_ptr<Engine> engine_;
  Metrics metrics_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpServer> server_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_DAEMON_H_

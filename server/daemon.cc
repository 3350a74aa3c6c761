#include "server/daemon.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace statewatch::server {

Result<std::unique_ptr<Daemon>> Daemon::Open(const ServerOptions& options) {
  SW_RETURN_IF_ERROR(ValidateServerOptions(options));
  std::unique_ptr<Daemon> d(new Daemon(options));
  EngineOptions engine_options;
  engine_options.durability = options.durability;
  engine_options.wake_window_ms = options.wake_window_ms;
  if (options.manual_clock) {
    int64_t start = options.manual_clock_start_ms;
    if (start == 0) {
      start = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    }
    d->manual_clock_ = std::make_shared<ManualClock>(start);
    engine_options.clock = d->manual_clock_;
  }
  auto engine = Engine::Open(engine_options, options.data_dir);
  if (!engine.ok()) return engine.status();
  d->engine_ = std::move(engine).value();
  SW_RETURN_IF_ERROR(d->engine_->Start());  // the restart sweep (semantics.md §3.2)
  auto stats = d->engine_->Stats();
  if (stats.ok()) {
    spdlog::info("event=engine_open data={} rows={} sessions={} cursors={} pending_notices={}",
                 options.data_dir, stats->journal_rows, stats->sessions, stats->cursors,
                 stats->pending_notices);
  }
  d->api_ =
      std::make_unique<Api>(d->engine_.get(), d->options_, d->manual_clock_.get(), &d->metrics_);
  auto server = HttpServer::Bind(d->engine_.get(), d->api_.get(), &d->metrics_, d->options_);
  if (!server.ok()) return server.status();
  d->server_ = std::move(server).value();
  return d;
}

Daemon::~Daemon() {
  server_.reset();  // no request can reach the engine after this
  api_.reset();
  engine_.reset();  // closes the database
}

}  // namespace statewatch::server

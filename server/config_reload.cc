#include "server/config_reload.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <exception>
#include <thread>

namespace statewatch::server {

namespace asio = boost::asio;

tools::DaemonConfig ConfigOf(const ServerOptions& o) {
  tools::DaemonConfig c;
  c.sessions = o.tools;
  c.tool_policy = o.messaging.tool_policy;
  c.max_ping_pong_turns = o.messaging.max_ping_pong_turns;
  c.upstream_first_tick_ms = o.upstream.first_tick_delay_ms;
  c.upstream_interval_ms = o.upstream.tick_interval_ms;
  c.upstream_roots = o.upstream.roots;
  c.tokens = o.tokens;
  c.open_metrics = o.open_metrics;
  c.retention_ms = o.retention_ms;
  c.prune_interval_ms = o.prune_interval_ms;
  c.webhooks = o.webhooks;
  c.guards = o.messaging.guards;
  return c;
}

void ApplyDaemonConfig(const tools::DaemonConfig& c, ServerOptions* o) {
  o->tools = c.sessions;
  o->messaging.tool_policy = c.tool_policy;
  o->messaging.max_ping_pong_turns = c.max_ping_pong_turns;
  o->upstream.first_tick_delay_ms = c.upstream_first_tick_ms;
  o->upstream.tick_interval_ms = c.upstream_interval_ms;
  o->upstream.roots = c.upstream_roots;
  o->tokens = c.tokens;
  o->open_metrics = c.open_metrics;
  o->retention_ms = c.retention_ms;
  o->prune_interval_ms = c.prune_interval_ms;
  o->webhooks = c.webhooks;
  o->messaging.guards = c.guards;
}

std::vector<std::string> SettingsNeedingRestart(const ServerOptions& before,
                                                const ServerOptions& after) {
  std::vector<std::string> out;
  if (before.upstream.first_tick_delay_ms != after.upstream.first_tick_delay_ms) {
    out.push_back("upstream.firstTickMs");
  }
  if (before.upstream.roots != after.upstream.roots) out.push_back("upstream.roots");
  if (before.upstream.tick_interval_ms != after.upstream.tick_interval_ms) {
    out.push_back("upstream.intervalMs");
  }
  if (before.host != after.host || before.port != after.port) out.push_back("--listen");
  if (before.retention_ms != after.retention_ms) out.push_back("retention.ms");
  if (before.prune_interval_ms != after.prune_interval_ms) {
    out.push_back("retention.pruneIntervalMs");
  }
  if (before.max_rows != after.max_rows) out.push_back("--max-rows");
  if (before.row_cache_bytes != after.row_cache_bytes) out.push_back("--row-cache-bytes");
  return out;
}

// Asio's signal_set works on any io_context, so the watcher runs on a context of its own and
// the server's transport (http_server.cc, which owns SIGINT/SIGTERM) stays untouched.
struct ReloadSignal::Impl {
  asio::io_context context;
  asio::signal_set signals{context, SIGHUP};
  std::function<void()> on_signal;
  std::thread thread;

  void Wait() {
    signals.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec) return;  // cancelled: shutting down
      try {
        on_signal();
      } catch (const std::exception& e) {  // the edge of this thread
        spdlog::error("event=config_reload_failed error=\"{}\"", e.what());
      }
      Wait();
    });
  }
};

Result<std::unique_ptr<ReloadSignal>> ReloadSignal::Start(std::function<void()> on_signal) {
  auto impl = std::make_unique<Impl>();
  impl->on_signal = std::move(on_signal);
  try {
    impl->Wait();
    impl->thread = std::thread([i = impl.get()] { i->context.run(); });
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot watch SIGHUP: ") + e.what());
  }
  return std::unique_ptr<ReloadSignal>(new ReloadSignal(std::move(impl)));
}

ReloadSignal::ReloadSignal(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ReloadSignal::~ReloadSignal() {
  boost::system::error_code ignored;
  impl_->signals.cancel(ignored);
  impl_->context.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

}  // namespace statewatch::server

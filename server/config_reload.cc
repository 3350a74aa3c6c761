#include "server/config_reload.h"

#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <csignal>
#include <exception>
#include <thread>

namespace statewatch::server {

namespace asio = boost::asio;

namespace {

// The one list of what a DaemonConfig carries: copy(options' field, the config's field) for
// each pair, so that ConfigOf and ApplyDaemonConfig cannot drift apart. `Options` and
// `Config` are const where `copy` only reads them.
template <typename Options, typename Config, typename Copy>
void ForEachConfigField(Options& o, Config& c, Copy copy) {
  copy(o.tools, c.sessions);
  copy(o.messaging.tool_policy, c.tool_policy);
  copy(o.messaging.max_ping_pong_turns, c.max_ping_pong_turns);
  copy(o.upstream.first_tick_delay_ms, c.upstream_first_tick_ms);
  copy(o.upstream.tick_interval_ms, c.upstream_interval_ms);
  copy(o.upstream.roots, c.upstream_roots);
  copy(o.tokens, c.tokens);
  copy(o.open_metrics, c.open_metrics);
  copy(o.retention_ms, c.retention_ms);
  copy(o.prune_interval_ms, c.prune_interval_ms);
  copy(o.webhooks, c.webhooks);
  copy(o.messaging.guards, c.guards);
}

}  // namespace

tools::DaemonConfig ConfigOf(const ServerOptions& o) {
  tools::DaemonConfig c;
  ForEachConfigField(o, c, [](const auto& from, auto& to) { to = from; });
  return c;
}

void ApplyDaemonConfig(const tools::DaemonConfig& c, ServerOptions* o) {
  ForEachConfigField(*o, c, [](auto& to, const auto& from) { to = from; });
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

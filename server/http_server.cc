// HttpServer: the listener (connection cap, accept back-off), the timeout sweeper, the wake
// and deadline timers, and shutdown. HTTP connections are in http_session.cc, WebSocket
// streams in wake_stream.cc.
#include "server/http_server.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <thread>
#include <vector>

#include "net/tls.h"
#include "server/transport.h"

namespace statewatch::server {

using namespace transport;  // NOLINT: the Beast aliases of transport.h

namespace {

// How long the listener waits after an accept failure it cannot remedy (out of memory or
// buffers, or out of descriptors with no idle connection to close).
constexpr int64_t kAcceptBackoffMs = 100;
// Connections accepted at the cap that may wait for an idle one to close at the same time.
constexpr int kMaxWaitingAdmissions = 8;

int ThreadCount(const ServerOptions& options) {
  if (options.threads > 0) return options.threads;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(2, 2 * cores);
}

// Answers 503 on a connection beyond the cap without giving it a session: what already
// arrived is discarded (closing with unread data would reset the connection before the
// client reads the answer), one non-blocking write of the answer, then close.
void RefuseOverCap(tcp::socket& socket, int cap) {
  ApiResponse r = Api::Error(503, "too_many_connections",
                             "this server holds its maximum of " + std::to_string(cap) +
                                 " connections (--max-connections) and none is idle; retry later");
  std::string raw =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(r.body.size()) + "\r\n\r\n" + r.body;
  beast::error_code ec;
  socket.non_blocking(true, ec);
  char sink[4096];
  for (int i = 0; i < 16 && !ec && socket.available(ec) > 0; ++i) {
    socket.read_some(asio::buffer(sink), ec);
  }
  ec = {};
  asio::write(socket, asio::buffer(raw), ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  socket.close(ec);
}

// The TLS context of options' files (null without TLS). Errors name the file.
Result<std::shared_ptr<asio::ssl::context>> LoadTls(const ServerOptions& options) {
  if (options.tls_cert_file.empty() && options.tls_key_file.empty()) {
    if (!options.tls_client_ca_file.empty()) {
      return Status::InvalidArgument("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return std::shared_ptr<asio::ssl::context>();
  }
  if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key go together (got only " +
                                   std::string(options.tls_cert_file.empty() ? "--tls-key"
                                                                             : "--tls-cert") +
                                   ")");
  }
  if (options.tls_handshake_timeout_ms <= 0) {
    return Status::InvalidArgument("--tls-handshake-timeout-ms must be positive (got " +
                                   std::to_string(options.tls_handshake_timeout_ms) + ")");
  }
  auto native = net::MakeTlsServerContext(
      {options.tls_cert_file, options.tls_key_file, options.tls_client_ca_file});
  if (!native.ok()) return native.status();
  return std::make_shared<asio::ssl::context>(native->release());  // it owns the SSL_CTX now
}

Status WritePortFile(const std::string& path, uint16_t port) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << port << "\n";
    if (!out) return Status::IOError("cannot write the port file " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IOError("cannot rename " + tmp + " to " + path);
  }
  return Status::OK();
}

}  // namespace

// One io_context per thread, each run by exactly one thread: a connection lives on one
// context, so its handlers never run concurrently (no strands), and the contexts share no
// scheduler lock — the shared-scheduler alternative spent a measurable share of each request
// on cross-thread wake-ups. The cost: a handler blocked in a durable write (one fsync) delays
// the other connections of its context, which is why there are more contexts than cores.
struct HttpServer::Impl {
  Impl(Engine* engine, Api* api, Metrics* metrics, const ServerOptions& options)
      : contexts(MakeContexts(ThreadCount(options))),
        ctx(*contexts[0], *engine, *api, *metrics, options),
        control(contexts[0]->get_executor()),
        acceptor(control),
        sweep_timer(control),
        wake_timer(control),
        deadline_timer(control),
        grace_timer(control),
        accept_timer(control) {
    for (auto& c : contexts) guards.emplace_back(c->get_executor());
  }

  static std::vector<std::unique_ptr<asio::io_context>> MakeContexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < n; ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  asio::io_context& NextContext() { return *contexts[next_context++ % contexts.size()]; }

  // Runs on `control`, as do all the accept handlers below.
  void Accept() {
    acceptor.async_accept(NextContext(), [this](beast::error_code ec, tcp::socket s) {
      if (ctx.stopping.load() || ec == asio::error::operation_aborted || !acceptor.is_open()) {
        return;
      }
      if (ec) return OnAcceptError(ec);
      Admit(std::move(s));
      Accept();
    });
  }

  // An accept that failed fails again at once: retrying in a loop spun a core and logged
  // millions of lines while /healthz went unanswered. Instead: one log line a second with a
  // count; out of descriptors, close the longest-idle connection and retry once it is
  // closed; otherwise retry after kAcceptBackoffMs.
  void OnAcceptError(const beast::error_code& ec) {
    if (uint64_t n = accept_errors.Count(SteadyNowMs())) {
      spdlog::warn("event=accept_failed error=\"{}\" count={} connections={} max_connections={}",
                   ec.message(), n, ctx.ConnectionCount(), ctx.max_connections);
    }
    bool out_of_descriptors = ec == asio::error::no_descriptors ||
                              ec == beast::error_code(ENFILE, boost::system::system_category());
    if (out_of_descriptors) {
      if (auto idle = ctx.TakeLongestIdle()) {
        idle->Evict([this](bool) {
          asio::post(control, [this] {
            if (!ctx.stopping.load()) Accept();
          });
        });
        return;
      }
    }
    accept_timer.expires_after(std::chrono::milliseconds(kAcceptBackoffMs));
    accept_timer.async_wait([this](beast::error_code e) {
      if (!e && !ctx.stopping.load()) Accept();
    });
  }

  // At the cap a new connection takes the place of the longest-idle one (a kept-alive
  // connection's client reconnects when it next needs one; an idle flood cannot lock
  // everyone out); when no connection is idle it is answered 503.
  void Admit(tcp::socket socket) {
    // Connections waiting for an eviction hold their slot already: counting them keeps a
    // slot freed by an eviction from going to a newer connection first.
    int used = static_cast<int>(ctx.ConnectionCount()) + admissions_waiting;
    if (used < ctx.max_connections) return StartHttpSession(ctx, std::move(socket));
    // A waiting connection holds a descriptor beyond the cap: a flood must not turn them
    // into the very descriptor exhaustion the cap prevents.
    if (admissions_waiting >= kMaxWaitingAdmissions) return Refuse(std::move(socket));
    std::shared_ptr<Connection> idle = ctx.TakeLongestIdle();
    if (!idle) return Refuse(std::move(socket));
    auto waiting = std::make_shared<tcp::socket>(std::move(socket));
    ++admissions_waiting;
    idle->Evict([this, waiting](bool closed) {
      asio::post(control, [this, waiting, closed] {
        --admissions_waiting;
        if (!closed || ctx.stopping.load()) return Refuse(std::move(*waiting));
        if (uint64_t n = evictions.Count(SteadyNowMs())) {
          spdlog::info(
              "event=idle_connection_closed reason=max_connections max_connections={} count={}",
              ctx.max_connections, n);
        }
        StartHttpSession(ctx, std::move(*waiting));
      });
    });
  }

  void Refuse(tcp::socket socket) {
    if (uint64_t n = refusals.Count(SteadyNowMs())) {
      spdlog::warn("event=connection_refused reason=max_connections max_connections={} count={}",
                   ctx.max_connections, n);
    }
    if (ctx.Tls()) {  // a plain-text 503 would be garbage to a TLS client: only close
      beast::error_code ignored;
      socket.close(ignored);
      return;
    }
    RefuseOverCap(socket, ctx.max_connections);
  }

  int64_t SweepIntervalMs() const {
    if (ctx.stopping.load()) return 10;  // notice the last connection closing promptly
    int64_t shortest = std::min(ctx.options.read_timeout_ms, ctx.options.idle_timeout_ms);
    return std::clamp<int64_t>(shortest / 4, 10, 250);
  }

  // Expires overdue connections; after a shutdown, ends the grace period early once every
  // connection is gone.
  void Sweep() {
    int64_t now = SteadyNowMs();
    std::vector<std::shared_ptr<Connection>> due;
    bool empty;
    {
      std::lock_guard<std::mutex> lock(ctx.mu);
      for (auto& [raw, weak] : ctx.connections) {
        std::shared_ptr<Connection> c = weak.lock();  // before any read: it may be gone
        if (c && c->deadline_ms.load() <= now) due.push_back(std::move(c));
      }
      empty = ctx.connections.empty();
    }
    for (auto& c : due) c->Expire();
    if (ctx.stopping.load() && empty) {
      grace_timer.cancel();
      guards.clear();  // every context ends its run() once its last handler is done
      return;
    }
    sweep_timer.expires_after(std::chrono::milliseconds(SweepIntervalMs()));
    sweep_timer.async_wait([this](beast::error_code ec) {
      if (!ec) Sweep();
    });
  }

  // Runs on `control`. Arms the wake timer for the engine's next merged wake, unless it is
  // already armed for that time or earlier.
  void ArmWakeTimer() {
    if (ctx.stopping.load()) return;
    ArmDueTimer(ctx.engine.NextWakeDueMs(), wake_timer, wake_armed_for, [this] {
      ctx.engine.RunDueWakes();
      ArmWakeTimer();
    });
  }

  // Runs on `control`. Arms the timer that times out waiting sessions_send calls at the
  // messaging's next deadline (the same pattern as the wake timer).
  void ArmDeadlineTimer() {
    if (ctx.stopping.load()) return;
    ArmDueTimer(ctx.api.NextRunDeadlineMs(), deadline_timer, deadline_armed_for, [this] {
      ctx.api.ExpireDueRuns();
      ArmDeadlineTimer();
      ArmWakeTimer();  // a timeout may enqueue deliveries and open notices
    });
  }

  // Whether a timer armed for `armed_for` (kNotArmed: none) must be armed earlier to run
  // `next` on time: ArmDueTimer would do something.
  static bool NeedsEarlierArm(std::optional<int64_t> next,
                              const std::atomic<int64_t>& armed_for) {
    return next && *next < armed_for.load();
  }

  // Runs on `control`. Arms `timer` to run `due` at `next` (engine clock; none: nothing to
  // arm), unless `armed_for` says it is already armed for that time or earlier.
  void ArmDueTimer(std::optional<int64_t> next, asio::steady_timer& timer,
                   std::atomic<int64_t>& armed_for, std::function<void()> due) {
    if (!NeedsEarlierArm(next, armed_for)) return;
    armed_for.store(*next);
    int64_t delay = std::max<int64_t>(0, *next - ctx.engine.clock().NowMs());
    timer.expires_after(std::chrono::milliseconds(delay));
    timer.async_wait([&armed_for, due = std::move(due)](beast::error_code ec) {
      if (ec) return;  // re-armed earlier, or shutting down
      armed_for.store(kNotArmed);
      due();
    });
  }

  // After every write (on the writer's thread): posts the re-arming of the wake and deadline
  // timers to `control` only when one must fire earlier than it is armed for. Posting after
  // every write woke `control`'s thread once a request whenever the connection lived on
  // another context (four context switches a request instead of one, counted per thread from
  // /proc). The checks are cheap (WakeScheduler::NextDue is O(1)). Race-free: a timer that
  // fires clears its mark before it reads the engine's next due time, so a write this check
  // skips is either covered by the armed timer or seen by its re-arming.
  void AfterWrite() {
    if (NeedsEarlierArm(ctx.engine.NextWakeDueMs(), wake_armed_for) ||
        NeedsEarlierArm(ctx.api.NextRunDeadlineMs(), deadline_armed_for)) {
      asio::post(control, [this] {
        ArmWakeTimer();
        ArmDeadlineTimer();
      });
    }
  }

  void BeginShutdown() {
    if (ctx.stopping.exchange(true)) return;
    spdlog::info("event=shutdown_begin in_flight=finishing");
    beast::error_code ignored;
    acceptor.close(ignored);
    if (signals) signals->cancel(ignored);
    wake_timer.cancel();
    deadline_timer.cancel();
    accept_timer.cancel();
    std::vector<std::shared_ptr<Connection>> live;
    {
      std::lock_guard<std::mutex> lock(ctx.mu);
      for (auto& [raw, weak] : ctx.connections) {
        if (auto c = weak.lock()) live.push_back(std::move(c));
      }
    }
    for (auto& c : live) c->Shutdown();
    grace_timer.expires_after(std::chrono::milliseconds(ctx.options.shutdown_grace_ms));
    grace_timer.async_wait([this](beast::error_code ec) {
      if (ec) return;
      spdlog::warn("event=shutdown_forced reason=grace_period_over");
      for (auto& c : contexts) c->stop();
    });
    sweep_timer.cancel();  // its handler sees operation_aborted and does not re-arm
    Sweep();
  }

  std::vector<std::unique_ptr<asio::io_context>> contexts;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::size_t next_context = 0;  // used by the acceptor only (on control)
  ServerContext ctx;
  asio::io_context::executor_type control;  // contexts[0]: acceptor, timers, signals
  tcp::acceptor acceptor;
  asio::steady_timer sweep_timer;
  asio::steady_timer wake_timer;
  asio::steady_timer deadline_timer;
  asio::steady_timer grace_timer;
  asio::steady_timer accept_timer;  // the back-off after a failed accept
  LogThrottle accept_errors;
  LogThrottle evictions;       // idle connections closed at the cap
  LogThrottle refusals;        // connections answered 503 at the cap
  int admissions_waiting = 0;  // accepted, waiting for an idle connection to close (control)
  // When the wake and deadline timers are armed for (engine clock; kNotArmed: not armed).
  // Written on `control` only; read by writers in AfterWrite.
  static constexpr int64_t kNotArmed = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> wake_armed_for{kNotArmed};
  std::atomic<int64_t> deadline_armed_for{kNotArmed};
  std::optional<asio::signal_set> signals;
  uint64_t wake_counter = 0;
  uint16_t port = 0;
};

namespace {

// Opens `acceptor` and binds it to options.host:options.port (reusing an address in
// TIME_WAIT), not yet listening. Throws what Asio throws on open.
Status BindAcceptor(tcp::acceptor& acceptor, const ServerOptions& options) {
  beast::error_code ec;
  auto address = asio::ip::make_address(options.host, ec);
  if (ec) {
    return Status::InvalidArgument("cannot listen on \"" + options.host + "\": " + ec.message());
  }
  tcp::endpoint endpoint(address, options.port);
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint, ec);
  if (ec) {
    return Status::IOError("cannot bind " + options.host + ":" + std::to_string(options.port) +
                           ": " + ec.message());
  }
  return Status::OK();
}

}  // namespace

Status HttpServer::CheckBindable(const ServerOptions& options) {
  if (options.port == 0) return Status::OK();
  try {
    asio::io_context io;
    tcp::acceptor probe(io);
    return BindAcceptor(probe, options);  // closed on return: nothing listens
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot listen: ") + e.what());
  }
}

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(Engine* engine, Api* api, Metrics* metrics,
                                                     const ServerOptions& options) {
  auto tls = LoadTls(options);
  if (!tls.ok()) return tls.status();
  auto impl = std::make_unique<Impl>(engine, api, metrics, options);
  impl->ctx.SetTls(std::move(*tls));
  try {
    SW_RETURN_IF_ERROR(BindAcceptor(impl->acceptor, options));
    impl->acceptor.listen(asio::socket_base::max_listen_connections);
    impl->port = impl->acceptor.local_endpoint().port();
    impl->ctx.guard.emplace(options, impl->port);
    impl->ctx.max_connections = EffectiveMaxConnections(options);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("cannot listen: ") + e.what());
  }
  if (!options.port_file.empty()) SW_RETURN_IF_ERROR(WritePortFile(options.port_file, impl->port));
  Impl* raw = impl.get();
  raw->wake_counter = engine->SubscribeWakes([metrics](const Wake&) { metrics->AddWakeSent(); });
  if (!options.manual_clock) {
    api->after_write = [raw] { raw->AfterWrite(); };
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  impl_->ctx.api.after_write = nullptr;
  impl_->ctx.engine.UnsubscribeWakes(impl_->wake_counter);
}

uint16_t HttpServer::port() const { return impl_->port; }

void HttpServer::Run() {
  Impl* impl = impl_.get();
  impl->Accept();
  asio::post(impl->control, [impl] {
    impl->Sweep();
    impl->ArmWakeTimer();  // wakes merged before this start (restart sweep)
    if (!impl->ctx.options.manual_clock) impl->ArmDeadlineTimer();  // sends before a restart
  });
  spdlog::info("event=serving addr={}:{} threads={} tls={}", impl->ctx.options.host,
               impl->port, impl->contexts.size(),
               !impl->ctx.Tls()                              ? "off"
               : impl->ctx.options.tls_client_ca_file.empty() ? "on"
                                                              : "mutual");
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < impl->contexts.size(); ++i) {
    pool.emplace_back([impl, i] { impl->contexts[i]->run(); });
  }
  impl->contexts[0]->run();
  for (std::thread& t : pool) t.join();
  spdlog::info("event=server_stopped");
}

void HttpServer::Shutdown() {
  Impl* impl = impl_.get();
  asio::post(impl->control, [impl] { impl->BeginShutdown(); });
}

Status HttpServer::ReloadTls() {
  if (!impl_->ctx.Tls()) return Status::OK();
  auto tls = LoadTls(impl_->ctx.options);
  if (!tls.ok()) return tls.status();
  impl_->ctx.SetTls(std::move(*tls));
  spdlog::info("event=tls_reloaded cert={}", impl_->ctx.options.tls_cert_file);
  return Status::OK();
}

void HttpServer::HandleSignals() {
  Impl* impl = impl_.get();
  impl->signals.emplace(impl->control, SIGINT, SIGTERM);
  impl->signals->async_wait([impl](beast::error_code ec, int signal) {
    if (ec) return;
    spdlog::info("event=signal signal={}", signal);
    impl->BeginShutdown();
  });
}

}  // namespace statewatch::server

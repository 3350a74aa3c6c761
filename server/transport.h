// The Beast side of the server, shared by http_server.cc (listener, timers),
// http_session.cc (HTTP connections) and wake_stream.cc (WebSocket streams) — the only files
// that include this header. Internal.
//
// Every connection lives on one single-threaded io_context (the executor of its socket), so
// its handlers never run concurrently. Timeouts are not per-operation timers: a connection
// publishes a deadline (an atomic), and one sweeper timer expires the overdue ones — one atomic
// store per request instead of a timer arm and cancel.
#ifndef STATEWATCH_SERVER_TRANSPORT_H_
#define STATEWATCH_SERVER_TRANSPORT_H_

#include <atomic>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "server/api.h"
#include "server/log_throttle.h"
#include "server/metrics.h"
#include "server/request_guard.h"
#include "server/server_options.h"
#include "statewatch/engine.h"

namespace statewatch::server::transport {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

inline constexpr int64_t kNoDeadline = std::numeric_limits<int64_t>::max();

inline int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One connection's byte stream: plain TCP, or TLS over it (--tls-cert). A small runtime
// variant rather than a template over the stream type: Beast's HTTP and WebSocket code is
// instantiated once, for this type, so TLS adds no second copy of the sessions (compile
// time on two cores). Only the TLS layer's own operations are instantiated per handler.
class Stream {
 public:
  using executor_type = beast::tcp_stream::executor_type;
  using TlsStream = beast::ssl_stream<beast::tcp_stream>;

  explicit Stream(tcp::socket socket)
      : executor_(socket.get_executor()), plain_(std::in_place, std::move(socket)) {}
  Stream(tcp::socket socket, std::shared_ptr<asio::ssl::context> tls)
      : executor_(socket.get_executor()),
        tls_context_(std::move(tls)),
        tls_(std::make_unique<TlsStream>(std::move(socket), *tls_context_)) {}
  Stream(Stream&&) = default;
  Stream& operator=(Stream&&) = default;

  executor_type get_executor() const { return executor_; }
  beast::tcp_stream& next_layer() { return tls_ ? tls_->next_layer() : *plain_; }
  const beast::tcp_stream& next_layer() const { return tls_ ? tls_->next_layer() : *plain_; }
  tcp::socket& socket() { return next_layer().socket(); }
  bool is_tls() const { return tls_ != nullptr; }
  TlsStream& tls() { return *tls_; }  // REQUIRES: is_tls()

  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_->async_read_some(buffers, std::forward<Handler>(handler));
    }
  }
  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_->async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

  // The WebSocket close: a TLS stream sends its close_notify, then the socket closes.
  friend void teardown(beast::role_type role, Stream& s, beast::error_code& ec) {
    using websocket::teardown;
    if (s.tls_) return teardown(role, *s.tls_, ec);
    teardown(role, s.plain_->socket(), ec);
  }
  template <typename Handler>
  friend void async_teardown(beast::role_type role, Stream& s, Handler&& handler) {
    using websocket::async_teardown;
    if (s.tls_) return async_teardown(role, *s.tls_, std::forward<Handler>(handler));
    async_teardown(role, s.plain_->socket(), std::forward<Handler>(handler));
  }

 private:
  executor_type executor_;  // kept: valid even once the layers moved to a WebSocket stream
  std::optional<beast::tcp_stream> plain_;              // when plain
  std::shared_ptr<asio::ssl::context> tls_context_;     // when TLS: kept for the stream's life
  std::unique_ptr<TlsStream> tls_;                      // when TLS
};

// A live connection that the server can time out and shut down.
class Connection {
 public:
  virtual ~Connection() = default;
  // Graceful shutdown. Thread-safe: posts onto the connection's strand.
  virtual void Shutdown() = 0;
  // The deadline passed (sweeper). Thread-safe: posts onto the strand, which re-checks it.
  virtual void Expire() = 0;
  // Makes room for a new connection: closes this one if it is still idle (a kept-alive
  // HTTP connection waiting for its next request, with no byte of one arrived), then calls
  // `then(closed)` on the connection's strand. Thread-safe.
  virtual void Evict(std::function<void(bool closed)> then) = 0;

  // Steady-clock ms after which Expire() is due; kNoDeadline when none.
  std::atomic<int64_t> deadline_ms{kNoDeadline};
  // Steady-clock ms since which the connection waits idle for a request; kNotIdle while it
  // is busy, and always for a WebSocket stream. Eviction picks the smallest.
  static constexpr int64_t kNotIdle = std::numeric_limits<int64_t>::max();
  std::atomic<int64_t> idle_since_ms{kNotIdle};
};

// What every connection shares.
struct ServerContext {
  ServerContext(asio::io_context& ioc, Engine& engine, Api& api, Metrics& metrics,
                const ServerOptions& options)
      : ioc(ioc), engine(engine), api(api), metrics(metrics), options(options) {}

  asio::io_context& ioc;
  Engine& engine;
  Api& api;
  Metrics& metrics;
  const ServerOptions& options;
  std::atomic<bool> stopping{false};
  // Set once bound (it needs the port), before anything is served.
  std::optional<RequestGuard> guard;
  // The connection cap (EffectiveMaxConnections) and the open WebSocket streams.
  int max_connections = 0;
  std::atomic<int> streams{0};
  LogThrottle stream_refusals;  // upgrades refused at --max-streams
  LogThrottle slow_clients;     // WebSocket clients dropped for not reading
  LogThrottle tls_failures;     // TLS handshakes failed or timed out

  // The TLS context new connections use (null: plain HTTP). Swapped on a reload; a
  // connection keeps the context it started with.
  std::shared_ptr<asio::ssl::context> Tls() {
    std::lock_guard<std::mutex> lock(tls_mu);
    return tls;
  }
  void SetTls(std::shared_ptr<asio::ssl::context> next) {
    std::lock_guard<std::mutex> lock(tls_mu);
    tls = std::move(next);
  }
  std::mutex tls_mu;
  std::shared_ptr<asio::ssl::context> tls;  // guarded by tls_mu

  void Add(const std::shared_ptr<Connection>& c) {
    std::lock_guard<std::mutex> lock(mu);
    connections[c.get()] = c;
  }
  void Remove(Connection* c) {
    std::lock_guard<std::mutex> lock(mu);
    connections.erase(c);
  }
  std::size_t ConnectionCount() {
    std::lock_guard<std::mutex> lock(mu);
    return connections.size();
  }
  // The connection idle the longest, or null when none is idle. It is claimed (no longer
  // counts as idle), so that two new connections never pick the same one to evict.
  std::shared_ptr<Connection> TakeLongestIdle() {
    std::lock_guard<std::mutex> lock(mu);
    std::shared_ptr<Connection> best;
    int64_t best_since = Connection::kNotIdle;
    for (auto& [raw, weak] : connections) {
      std::shared_ptr<Connection> c = weak.lock();  // before any read: it may be gone
      if (!c) continue;
      int64_t since = c->idle_since_ms.load();
      if (since >= best_since) continue;
      best_since = since;
      best = std::move(c);
    }
    if (best) best->idle_since_ms.store(Connection::kNotIdle);
    return best;
  }
  // Takes one of the --max-streams slots; false when all are taken.
  bool ReserveStream() {
    if (streams.fetch_add(1) < options.max_streams) return true;
    streams.fetch_sub(1);
    return false;
  }
  void ReleaseStream() { streams.fetch_sub(1); }

  std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
};

// Serves one accepted HTTP connection until it closes or upgrades to a stream; with a TLS
// context (ctx.Tls()) the TLS handshake comes first, within the handshake timeout.
void StartHttpSession(ServerContext& ctx, tcp::socket socket);

// Takes over an upgraded connection: subscribes to what `target` names — the engine's wakes
// (filtered by watcher) or the delivery feed (filtered by agent; the unacknowledged
// deliveries are replayed after subscribing) — answers the WebSocket handshake and streams
// until the client or the server closes. REQUIRES: the caller reserved a stream slot
// (ReserveStream); the stream releases it when it ends.
void StartStream(ServerContext& ctx, Stream stream,
                 http::request<http::string_body> request, StreamTarget target);

}  // namespace statewatch::server::transport

#endif  // STATEWATCH_SERVER_TRANSPORT_H_

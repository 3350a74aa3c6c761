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
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
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

// Serves one accepted HTTP connection until it closes or upgrades to a stream.
void StartHttpSession(ServerContext& ctx, tcp::socket socket);

// Takes over an upgraded connection: subscribes to what `target` names — the engine's wakes
// (filtered by watcher) or the delivery feed (filtered by agent; the unacknowledged
// deliveries are replayed after subscribing) — answers the WebSocket handshake and streams
// until the client or the server closes. REQUIRES: the caller reserved a stream slot
// (ReserveStream); the stream releases it when it ends.
void StartStream(ServerContext& ctx, beast::tcp_stream stream,
                 http::request<http::string_body> request, StreamTarget target);

}  // namespace statewatch::server::transport

#endif  // STATEWATCH_SERVER_TRANSPORT_H_

// The Beast side of the server, shared by http_server.cc and wake_stream.cc (the only two
// files that include this header). Internal.
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
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/api.h"
#include "server/metrics.h"
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

  // Steady-clock ms after which Expire() is due; kNoDeadline when none.
  std::atomic<int64_t> deadline_ms{kNoDeadline};
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

  void Add(const std::shared_ptr<Connection>& c) {
    std::lock_guard<std::mutex> lock(mu);
    connections[c.get()] = c;
  }
  void Remove(Connection* c) {
    std::lock_guard<std::mutex> lock(mu);
    connections.erase(c);
  }

  std::mutex mu;
  std::unordered_map<Connection*, std::weak_ptr<Connection>> connections;
};

// Takes over an upgraded connection: subscribes to what `target` names — the engine's wakes
// (filtered by watcher) or the delivery feed (filtered by agent; the unacknowledged
// deliveries are replayed after subscribing) — answers the WebSocket handshake and streams
// until the client or the server closes.
void StartStream(ServerContext& ctx, beast::tcp_stream stream,
                 http::request<http::string_body> request, StreamTarget target);

}  // namespace statewatch::server::transport

#endif  // STATEWATCH_SERVER_TRANSPORT_H_

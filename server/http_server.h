// HttpServer: the transport of `statewatch serve` — Boost.Beast HTTP/1.1 and WebSocket on
// Asio. Requests go to an Api (server/api.h); GET /v1/wakes upgrades to a WebSocket stream
// of the engine's wakes. This header is Beast-free: only http_server.cc, http_session.cc and
// wake_stream.cc include Beast, so nothing else pays its compile time.
//
//   auto server = HttpServer::Bind(&engine, &api, &metrics, options);  // listening now
//   server.value()->HandleSignals();   // SIGINT / SIGTERM -> Shutdown()
//   server.value()->Run();             // blocks until shut down
//
// TLS: with ServerOptions::tls_cert_file/tls_key_file every connection is HTTPS (WSS for
// the streams), the handshake first, within tls_handshake_timeout_ms; with
// tls_client_ca_file a client must present a certificate signed by that CA. Everything
// below holds for both.
//
// Connections: HTTP/1.1 keep-alive (and pipelining); a request body over the cap is answered
// 413, a request that does not arrive completely within the read timeout 408, malformed HTTP
// 400, a request the guard refuses (foreign Origin, Host or Content-Type;
// server/request_guard.h) 403/421/415 — each then closes its connection, lingering long
// enough for the client to read the answer. Idle kept-alive connections close after the
// idle timeout.
//
// Limits: at most ServerOptions::max_connections connections (default sized to the file
// limit); at the cap a new connection takes the place of the longest-idle one, or is
// answered 503 when none is idle (with TLS: closed, as no handshake was made). An accept that fails (out of file descriptors) is never
// retried in a loop: the longest-idle connection is closed to free a descriptor, else the
// listener waits 100 ms; such conditions are logged at most once a second, with a count.
// At most max_streams WebSocket streams (503 beyond), each with bounded memory
// (wake_stream.cc).
//
// Wakes: each WebSocket client subscribes to the engine's wakes (filtered by ?watcher=)
// before its handshake answer is sent, so a client that has its 101 answer never misses a
// wake. With the system clock a timer calls Engine::RunDueWakes when merged wakes fall due;
// with a manual clock POST /v1/clock does.
//
// Shutdown: stops accepting, closes idle connections and WebSocket streams (close frame
// "going away"), lets in-flight requests finish, then Run() returns; after the grace period
// it stops hard.
//
// Thread-safe: Shutdown() may be called from any thread; Run() once.
#ifndef STATEWATCH_SERVER_HTTP_SERVER_H_
#define STATEWATCH_SERVER_HTTP_SERVER_H_

#include <cstdint>
#include <memory>

#include "server/api.h"
#include "server/metrics.h"
#include "server/server_options.h"
#include "statewatch/engine.h"
#include "statewatch/status.h"

namespace statewatch::server {

class HttpServer {
 public:
  // Binds and listens on options.host:options.port (port 0: a free port, see port()) and
  // writes options.port_file. Nothing is served until Run(). The engine, api and metrics
  // must outlive the server. IOError when the address cannot be bound.
  static Result<std::unique_ptr<HttpServer>> Bind(Engine* engine, Api* api, Metrics* metrics,
                                                  const ServerOptions& options);

  // Whether Bind could bind options.host:options.port now: the same IOError it would return,
  // without listening. A daemon asks before it opens (and perhaps creates) its database, so
  // that a port already in use leaves no data directory behind. Port 0 always can.
  static Status CheckBindable(const ServerOptions& options);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port.
  uint16_t port() const;

  // Serves on the configured number of threads (the caller's included) until Shutdown()
  // completes.
  void Run();

  // Begins a graceful shutdown; returns at once. Idempotent.
  void Shutdown();

  // Makes SIGINT and SIGTERM call Shutdown() (for the daemon; tests call Shutdown()).
  void HandleSignals();

  // Re-reads the TLS certificate, key and client CA files (the paths given at start): new
  // connections use them, open ones keep theirs. A no-op without TLS. On an error (naming
  // the file) the running certificate stays. Thread-safe.
  Status ReloadTls();

  struct Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_HTTP_SERVER_H_

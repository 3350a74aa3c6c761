// ServerOptions: every knob of `statewatch serve`, with its default and its trade-off.
//
// Thread-safe: a plain value, read-only once the server runs.
#ifndef STATEWATCH_SERVER_SERVER_OPTIONS_H_
#define STATEWATCH_SERVER_SERVER_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/access_tokens.h"
#include "monitor/upstream_monitor.h"
#include "statewatch/options.h"
#include "statewatch/status.h"
#include "tools/session_messaging.h"
#include "tools/session_tools.h"
#include "webhooks/webhook_options.h"

namespace statewatch::server {

class RequestGate;  // server/api.h

struct ServerOptions {
  // ---- behaviour -------------------------------------------------------------------------

  // Where to listen. Default 127.0.0.1:7411. Port 0 picks a free port (see port_file).
  std::string host = "127.0.0.1";
  uint16_t port = 7411;

  // The database directory. Default ./data.
  std::string data_dir = "./data";

  // A bearer token every request must carry (`Authorization: Bearer <token>`, the scheme
  // in any case), except the public routes (GET /healthz, GET /readyz). It grants every
  // scope (config/access_tokens.h). A token (this one or one of `tokens`) is required when
  // `host` is not a loopback address; optional on loopback. `statewatch serve --token-file
  // FILE` reads it from a file, so that it does not show in `ps`.
  std::string token;
  // More tokens, each with its scope (the configuration file's auth.tokens; kept as
  // SHA-256 digests). A reload (SIGHUP) replaces them and `token` without a restart.
  std::vector<auth::AccessToken> tokens;
  // GET /metrics without a token (auth.openMetrics). Default false: it needs `read`.
  bool open_metrics = false;

  // Browsers reach loopback daemons too; these keep a web page out (request_guard.h).
  // Origins allowed to call (`Origin` header, e.g. "http://localhost:3000"); any other
  // Origin is answered 403, WebSocket upgrades included. Default none: requests from a
  // browser page are refused, requests without an Origin (curl, gateways) are served.
  std::vector<std::string> allow_origins;
  // The Host names answered. A loopback listener without a token answers only the listen
  // address, localhost, 127.0.0.1 and [::1] (each with the bound port or none) and these
  // (DNS rebinding: a browser page may reach it); any other Host is answered 421. A listener
  // that requires a token (non-loopback, or a token configured at start) answers any Host
  // while this is empty, and else only these and the names above. "name" allows that name
  // with any port, "name:port" only that port; "*.suffix" (e.g. "*.svc.cluster.local")
  // matches one or more labels before the suffix. Default none.
  std::vector<std::string> allow_hosts;

  // The engine's clock moves only through POST /v1/clock (end-to-end tests cross 30 days
  // and 20-second wake windows without sleeping). Refused with a non-loopback host.
  bool manual_clock = false;
  int64_t manual_clock_start_ms = 0;  // 0: the wall clock at start

  // Session tools: visibility (default tree) and agent-to-agent access (default off).
  tools::SessionToolsOptions tools;

  // sessions_send / spawn / subagents / yield: ping-pong turns, children per session, the
  // tool profile, the steer interval (tools::MessagingOptions, defaults there). Its
  // `sessions` and `on_delivery` are ignored: the daemon sets them from `tools` and its
  // delivery feed.
  tools::MessagingOptions messaging;

  // The upstream monitor: first tick 15 s after start, then every 60 s, a 45 s provider
  // timeout, 1 MiB per scan (monitor::UpstreamMonitorOptions). With the manual clock a tick
  // runs when POST /v1/clock moves the clock past its time.
  monitor::UpstreamMonitorOptions upstream;

  // The notice webhooks (config file section `webhooks`, docs/webhooks.md). Applied at
  // start; a reload keeps the running dispatcher's.
  webhooks::WebhookOptions webhooks;

  // Wakes for one watcher within this window merge into one at its end
  // (EngineOptions::wake_window_ms). Default 20 s.
  int64_t wake_window_ms = 20000;

  // The engine's durability (EngineOptions::durability). Default kSync.
  Durability durability = Durability::kSync;

  // Cluster mode (EngineOptions::wrap_log; cli/cluster_serve.h sets it for --cluster).
  // Empty: a single node.
  decltype(EngineOptions::wrap_log) wrap_log;
  // Cluster mode: the partition this node serves and the partition count
  // (EngineOptions::partition/partitions; --partition/--partitions). Default 0 of 1.
  uint32_t partition = 0;
  uint32_t partitions = 1;
  // Cluster mode: the gate that answers the /v1/cluster routes and refuses requests once
  // the partition moved (server/cluster_routes.h; cli/cluster_serve.h sets it). Null: none.
  std::shared_ptr<RequestGate> gate;
  // Cluster mode: the key of the X-Statewatch-Internal header (server/internal_call.h) that
  // the internal routes (/v1/internal/…) require. Empty: they answer 403.
  std::string cluster_secret;
  // Cluster mode, on a control-plane node's owner slot (docs/cluster-internals.md,
  // "Session tools across partitions"): hands one session mail to its destination
  // partition's owner (server/session_mail_route.h). When set, sessions_send reaches
  // sessions of other partitions through this partition's outbox and a forwarder the daemon
  // runs; empty: such a send is 421 misdirected.
  std::function<Status(const SessionMail&)> session_mail;

  // When set, one line per answered request (method, target, route, status, bytes, time) is
  // appended to this file; "-" is stderr. Default: none (request lines at --log-level debug).
  std::string access_log;

  // The journal's row cap (EngineOptions::max_rows): the oldest rows beyond it are pruned.
  // Default 50,000.
  uint64_t max_rows = EngineOptions{}.max_rows;

  // History kept by occurredAt, and the idle expiry of cursors (EngineOptions::retention_ms;
  // --retention-ms, retention.ms). Default 30 days.
  int64_t retention_ms = EngineOptions{}.retention_ms;
  // The daemon prunes (age, row cap, idle cursors) this often on the engine's clock, also
  // while no write arrives (EngineOptions::prune_interval_ms too; --prune-interval-ms,
  // retention.pruneIntervalMs). With the manual clock, POST /v1/clock runs a due prune.
  // Default 1 hour.
  int64_t prune_interval_ms = EngineOptions{}.prune_interval_ms;

  // Bytes of recently read journal rows kept decoded for changesSince pages
  // (EngineOptions::row_cache_bytes); 0 turns the cache off. Default 8 MiB.
  std::size_t row_cache_bytes = EngineOptions{}.row_cache_bytes;

  // How often the engine's own checkpoint may run (EngineOptions::checkpoint_min_records);
  // in cluster mode it is also when a cluster checkpoint may be written. Default 100,000.
  uint64_t checkpoint_min_records = EngineOptions{}.checkpoint_min_records;

  // When set, the bound port is written there (atomically, by rename) once listening.
  std::string port_file;

  // TLS: HTTPS and WSS on the one listener. The certificate chain and its private key (PEM
  // files, both or neither; --tls-cert/--tls-key). With tls_client_ca_file (mutual TLS) a
  // client without a certificate signed by that CA is refused at the handshake. The files
  // are re-read on SIGHUP (the same paths; new connections use them). Default: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;
  // A client must finish the TLS handshake within this, else its connection is closed.
  // Default 10 s.
  int64_t tls_handshake_timeout_ms = 10000;

  // ---- limits ----------------------------------------------------------------------------

  // Largest request body; more is answered 413 and the connection closed. Default 4 MiB
  // (a batch of ~10,000 small events).
  std::size_t body_limit_bytes = 4u << 20;

  // A request must arrive completely within this time once its first byte arrived, else it
  // is answered 408 and the connection closed. Default 10 s.
  int64_t read_timeout_ms = 10000;

  // A kept-alive connection with no request for this long is closed. Default 60 s.
  int64_t idle_timeout_ms = 60000;

  // After SIGINT/SIGTERM, in-flight requests get this long to finish before the server
  // stops hard. Default 5 s.
  int64_t shutdown_grace_ms = 5000;

  // Open connections (HTTP and WebSocket). At the cap a new connection closes the
  // longest-idle kept-alive connection to make room; when none is idle it is answered 503
  // and closed. Default 0: sized to the file limit (DefaultMaxConnections).
  int max_connections = 0;

  // Open WebSocket streams (/v1/wakes and /v1/deliveries together); an upgrade beyond it is
  // answered 503. Default 256.
  int max_streams = 256;

  // A WebSocket client that falls this far behind (messages queued and not yet written)
  // while the kernel's send queue to it is full (it does not read) is disconnected; it
  // reconnects and re-syncs (deliveries are offered again, notices are peeked). A client
  // that reads is kept through a burst up to 16 times these bounds. Default 4096 messages
  // or 1 MiB, whichever comes first; one message larger than the byte bound is still sent.
  std::size_t ws_queue_limit = 4096;
  std::size_t ws_queue_bytes = 1u << 20;

  // Largest message a WebSocket client may send (clients send nothing but control frames
  // on these streams); a larger one closes the stream with 1009 (message too big).
  std::size_t ws_message_limit = 4096;

  // ---- performance -----------------------------------------------------------------------

  // I/O threads. Handlers call the engine on them, and a write waits for its group commit
  // (one fsync), so more threads than cores lets concurrent writers share a group.
  // Default 0: twice the number of cores, at least 2.
  int threads = 0;
};

// 127.0.0.0/8, ::1 and "localhost".
bool IsLoopbackHost(const std::string& host);

// True when requests need a bearer token: `token` or any of `tokens` is set.
bool TokenConfigured(const ServerOptions& options);

// Parses "HOST:PORT", "[V6]:PORT", ":PORT" (loopback) or "PORT" into host and port.
Status ParseListen(const std::string& text, ServerOptions* options);

// Refuses combinations that are unsafe: a non-loopback host without a token, the manual
// clock on a non-loopback host, zero limits, malformed --allow-origin / --allow-host
// entries, upstream roots that are not existing directories.
Status ValidateServerOptions(const ServerOptions& options);

// The connection cap for a process allowed `open_files_limit` descriptors (RLIMIT_NOFILE):
// what is left after a reserve for the database's files, the log and the event loops
// (a quarter of the limit, at least 64), at least 16 and at most 65,536.
int DefaultMaxConnections(uint64_t open_files_limit);

// options.max_connections, or DefaultMaxConnections of this process's soft RLIMIT_NOFILE
// when it is 0.
int EffectiveMaxConnections(const ServerOptions& options);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_SERVER_OPTIONS_H_

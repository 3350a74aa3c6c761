// The daemon's configuration file in the daemon: applying a tools::DaemonConfig
// (config/config_file.h) to ServerOptions, and the SIGHUP watcher that makes a running
// `statewatch serve --config FILE` apply a new tool policy without dropping a connection.
//
// What a reload changes: the session tools' policy (tools.*, agents.*,
// session.agentToAgent.maxPingPongTurns) — every later tool call is answered under it, calls
// in flight finish under the old one — and the access tokens (auth.*, --token,
// --token-file): every later request is checked against the new set (a reload that leaves
// no token on a daemon that started with one is refused: see Daemon::Reconfigure). What it does not: the
// upstream monitor's cadence and roots, retention.*, and every other flag-only setting
// (listen address, limits); those need a restart, and a reload that changes them logs which
// ones it left alone (by name: a log line never holds a token).
//
// Thread-safe: ReloadSignal's callback runs on its own thread.
#ifndef STATEWATCH_SERVER_CONFIG_RELOAD_H_
#define STATEWATCH_SERVER_CONFIG_RELOAD_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config_file.h"
#include "server/server_options.h"
#include "statewatch/status.h"

namespace statewatch::server {

// The part of `options` the configuration file describes.
tools::DaemonConfig ConfigOf(const ServerOptions& options);
// Writes `config` into `*options` (the part the file describes; nothing else changes).
void ApplyDaemonConfig(const tools::DaemonConfig& config, ServerOptions* options);

// The settings a reload from `before` to `after` cannot apply (they need a restart), by
// their configuration key: e.g. {"upstream.intervalMs"}.
std::vector<std::string> SettingsNeedingRestart(const ServerOptions& before,
                                                const ServerOptions& after);

// Calls `on_signal` on its own thread each time the process receives SIGHUP, until
// destroyed. Only one may exist at a time.
class ReloadSignal {
 public:
  static Result<std::unique_ptr<ReloadSignal>> Start(std::function<void()> on_signal);
  ~ReloadSignal();
  ReloadSignal(const ReloadSignal&) = delete;
  ReloadSignal& operator=(const ReloadSignal&) = delete;

  struct Impl;

 private:
  explicit ReloadSignal(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_CONFIG_RELOAD_H_

// `statewatch serve`: reads the options, sets up structured logging, runs the Daemon until
// SIGINT/SIGTERM.
#include "cli/serve_command.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <sstream>

#include "cli/cluster_control.h"
#include "cli/cluster_serve.h"
#include "config/config_file.h"
#include "server/config_reload.h"
#include "server/daemon.h"
#include "statewatch/version.h"

namespace statewatch::cli {

using server::Daemon;
using server::ParseListen;
using server::ServerOptions;
using server::ValidateServerOptions;
namespace {

Result<bool> ParseBool(std::string_view name, const std::string& v) {
  if (v == "true" || v == "on" || v == "yes" || v == "1") return true;
  if (v == "false" || v == "off" || v == "no" || v == "0") return false;
  return Status::InvalidArgument("--" + std::string(name) + " must be true or false (got \"" + v +
                                 "\")");
}

// Every value of a repeatable option, each also split at commas.
std::vector<std::string> ListOption(const cli::Args& args, std::string_view name) {
  std::vector<std::string> out;
  for (const std::string& list : args.GetAll(name)) {
    std::stringstream ss(list);
    std::string item;
    while (std::getline(ss, item, ',')) {
      if (!item.empty()) out.push_back(item);
    }
  }
  return out;
}

Result<int64_t> PositiveOption(const cli::Args& args, std::string_view name, int64_t fallback) {
  auto text = args.Get(name);
  if (!text) return fallback;
  auto n = cli::ParseIntOption(name, *text);
  if (!n.ok()) return n.status();
  if (*n <= 0) {
    return Status::InvalidArgument("--" + std::string(name) + " must be positive (got " + *text +
                                   ")");
  }
  return *n;
}

// A byte count where 0 means "none" (e.g. --row-cache-bytes 0 turns the cache off).
Result<int64_t> NonNegativeOption(const cli::Args& args, std::string_view name,
                                  int64_t fallback) {
  auto text = args.Get(name);
  if (!text) return fallback;
  auto n = cli::ParseIntOption(name, *text);
  if (!n.ok()) return n.status();
  if (*n < 0) {
    return Status::InvalidArgument("--" + std::string(name) + " must be 0 or more (got " +
                                   *text + ")");
  }
  return *n;
}

// --max-ping-pong-turns: the sessions_send reply-back loop, 0..20
// (docs/semantics.md, "Session tools").
Status ReadPingPongTurns(const cli::Args& args, ServerOptions* o) {
  auto text = args.Get("max-ping-pong-turns");
  if (!text) return Status::OK();
  auto n = cli::ParseIntOption("max-ping-pong-turns", *text);
  if (!n.ok()) return n.status();
  if (*n < 0 || *n > 20) {
    return Status::InvalidArgument("--max-ping-pong-turns must be from 0 to 20 (got " + *text +
                                   ")");
  }
  o->messaging.max_ping_pong_turns = static_cast<int>(*n);
  return Status::OK();
}

Status ReadManualClock(const cli::Command& c, ServerOptions* o) {
  if (auto v = c.args.Get("manual-clock")) {
    if (!v->empty() && v->find_first_not_of("0123456789") == std::string::npos && v->size() > 1) {
      o->manual_clock = true;
      o->manual_clock_start_ms = std::stoll(*v);
    } else {
      auto on = ParseBool("manual-clock", *v);
      if (!on.ok()) return on.status();
      o->manual_clock = *on;
    }
  }
  // --now is the clock of a one-shot command. A daemon's clock either runs or moves by
  // POST /v1/clock; refusing --now keeps a mistyped `--now` from silently freezing it.
  if (c.global.now_ms) {
    return Status::InvalidArgument(
        "serve does not take --now: use --manual-clock START_MS for a clock that only moves "
        "through POST /v1/clock");
  }
  return Status::OK();
}

Status ReadTools(const cli::Args& args, ServerOptions* o) {
  if (auto v = args.Get("visibility")) {
    auto parsed = tools::ParseVisibility(*v);
    if (!parsed) {
      return Status::InvalidArgument("--visibility must be self, tree, agent or all (got \"" + *v +
                                     "\")");
    }
    o->tools.visibility = *parsed;
  }
  if (auto v = args.Get("agent-to-agent")) {
    auto on = ParseBool("agent-to-agent", *v);
    if (!on.ok()) return on.status();
    o->tools.agent_to_agent.enabled = *on;
  }
  for (std::string& id : ListOption(args, "agent-to-agent-allow")) {
    o->tools.agent_to_agent.allow.push_back(std::move(id));
  }
  return Status::OK();
}

// --token (or the global --token-file, read with the other global options, as for
// --server: it keeps the token out of the process list; --token wins when both are given),
// --allow-origin, --allow-host.
// `file_token` is the token of the global --token-file as read now (at start, or again on
// SIGHUP).
Status ReadAccess(const cli::Command& c, const std::string& file_token, ServerOptions* o) {
  o->token = c.args.Get("token").value_or(file_token);
  // An empty token file must not turn into a daemon without authentication.
  auto token_file = c.args.Get("token-file");
  if (!c.args.Has("token") && token_file && file_token.empty()) {
    return Status::InvalidArgument("--token-file " + *token_file +
                                   " holds no token on its first line");
  }
  o->allow_origins = ListOption(c.args, "allow-origin");
  o->allow_hosts = ListOption(c.args, "allow-host");
  return Status::OK();
}

template <typename T>
Status Set(Result<int64_t> r, T* out) {
  if (!r.ok()) return r.status();
  *out = static_cast<T>(*r);
  return Status::OK();
}

// --config FILE: the file first, so that every flag given beside it overrides it.
Status ReadConfigFile(const cli::Args& args, ServerOptions* o) {
  auto path = args.Get("config");
  if (!path) return Status::OK();
  tools::DaemonConfig config = server::ConfigOf(*o);
  SW_RETURN_IF_ERROR(tools::ApplyConfigFile(*path, &config));
  server::ApplyDaemonConfig(config, o);
  return Status::OK();
}

Result<ServerOptions> ReadServeOptions(const cli::Command& c, const std::string& file_token) {
  ServerOptions o;
  o.data_dir = c.global.data_dir;
  o.durability = c.global.durability;
  const cli::Args& args = c.args;
  SW_RETURN_IF_ERROR(ReadConfigFile(args, &o));
  if (auto v = args.Get("listen")) SW_RETURN_IF_ERROR(ParseListen(*v, &o));
  if (auto v = args.Get("threads")) {
    auto n = cli::ParseIntOption("threads", *v);
    if (!n.ok()) return n.status();
    o.threads = static_cast<int>(*n);
  }
  SW_RETURN_IF_ERROR(ReadAccess(c, file_token, &o));
  SW_RETURN_IF_ERROR(ReadManualClock(c, &o));
  SW_RETURN_IF_ERROR(ReadTools(args, &o));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "body-limit", o.body_limit_bytes), &o.body_limit_bytes));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "read-timeout-ms", o.read_timeout_ms), &o.read_timeout_ms));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "idle-timeout-ms", o.idle_timeout_ms), &o.idle_timeout_ms));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "shutdown-grace-ms", o.shutdown_grace_ms), &o.shutdown_grace_ms));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "wake-window-ms", o.wake_window_ms), &o.wake_window_ms));
  SW_RETURN_IF_ERROR(ReadPingPongTurns(args, &o));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "upstream-first-tick-ms", o.upstream.first_tick_delay_ms),
          &o.upstream.first_tick_delay_ms));
  SW_RETURN_IF_ERROR(Set(PositiveOption(args, "upstream-interval-ms", o.upstream.tick_interval_ms),
                         &o.upstream.tick_interval_ms));
  // Given on the command line, the roots replace the --config file's.
  if (args.Has("upstream-root")) o.upstream.roots = args.GetAll("upstream-root");
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "max-connections", o.max_connections), &o.max_connections));
  SW_RETURN_IF_ERROR(Set(PositiveOption(args, "max-streams", o.max_streams), &o.max_streams));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "max-rows", static_cast<int64_t>(o.max_rows)), &o.max_rows));
  SW_RETURN_IF_ERROR(
      Set(PositiveOption(args, "retention-ms", o.retention_ms), &o.retention_ms));
  SW_RETURN_IF_ERROR(Set(PositiveOption(args, "prune-interval-ms", o.prune_interval_ms),
                         &o.prune_interval_ms));
  SW_RETURN_IF_ERROR(Set(NonNegativeOption(args, "row-cache-bytes",
                                           static_cast<int64_t>(o.row_cache_bytes)),
                         &o.row_cache_bytes));
  o.port_file = args.Get("port-file").value_or("");
  o.access_log = args.Get("access-log").value_or("");
  if (auto v = args.Get("tls-cert")) o.tls_cert_file = *v;
  if (auto v = args.Get("tls-key")) o.tls_key_file = *v;
  if (auto v = args.Get("tls-client-ca")) o.tls_client_ca_file = *v;
  SW_RETURN_IF_ERROR(Set(PositiveOption(args, "tls-handshake-timeout-ms", o.tls_handshake_timeout_ms),
                         &o.tls_handshake_timeout_ms));
  SW_RETURN_IF_ERROR(ValidateServerOptions(o));
  return o;
}

// Logs as `ts=... level=... event=... key=value ...` lines on stderr.
Status SetUpLogging(const cli::Args& args) {
  std::string level = args.Get("log-level").value_or("info");
  spdlog::level::level_enum parsed = spdlog::level::from_str(level);
  if (parsed == spdlog::level::off && level != "off") {
    return Status::InvalidArgument(
        "--log-level must be trace, debug, info, warn, error or off (got \"" + level + "\")");
  }
  auto logger = spdlog::stderr_color_mt("statewatch");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("ts=%Y-%m-%dT%H:%M:%S.%eZ level=%l %v", spdlog::pattern_time_type::utc);
  spdlog::set_level(parsed);
  return Status::OK();
}

}  // namespace

std::vector<OptionHelp> ServeOptionHelp() {
  std::vector<OptionHelp> help = {
      {"listen", "HOST:PORT", "127.0.0.1:7411",
       "Where to listen; port 0 picks a free one (see --port-file)."},
      {"threads", "N", "twice the cores, at least 2", "I/O threads (handlers run on them)."},
      {"token", "TOKEN", "", "A bearer token (every scope) each request but GET /healthz and "
                             "/readyz must carry; a token is required on a non-loopback "
                             "address. Prefer the global --token-file, which keeps it out of "
                             "the process list; scoped tokens go in --config (auth.tokens)."},
      {"manual-clock", "[START_MS]", "off",
       "The clock moves only through POST /v1/clock (tests); loopback only."},
      {"visibility", "self|tree|agent|all", "tree", "What the session tools let a caller see."},
      {"agent-to-agent", "", "off", "Allow cross-agent access (with --visibility all)."},
      {"agent-to-agent-allow", "ID[,ID]", "", "The agents cross-agent access may reach "
                                              "(repeatable).", false, true},
      {"body-limit", "BYTES", "4194304", "Largest request body; more is answered 413."},
      {"read-timeout-ms", "MS", "10000", "A started request must arrive within this; else 408."},
      {"idle-timeout-ms", "MS", "60000", "Idle kept-alive connections close after this."},
      {"port-file", "FILE", "", "Write the bound port there once listening."},
      {"log-level", "LEVEL", "info", "trace, debug, info, warn, error or off."},
      {"access-log", "FILE", "", "One line per answered request to FILE (- = stderr)."},
      {"tls-cert", "FILE", "", "Serve HTTPS and WSS with this PEM certificate chain (with "
                               "--tls-key); re-read on SIGHUP."},
      {"tls-key", "FILE", "", "The PEM private key of --tls-cert."},
      {"tls-client-ca", "FILE", "",
       "Mutual TLS: a client without a certificate signed by this PEM CA is refused at the "
       "handshake."},
      {"tls-handshake-timeout-ms", "MS", "10000",
       "A client must finish the TLS handshake within this; else it is disconnected."},
      {"shutdown-grace-ms", "MS", "5000", "In-flight requests get this long after SIGTERM."},
      {"wake-window-ms", "MS", "20000",
       "Wakes for one watcher within this window merge into one at its end."},
      {"max-ping-pong-turns", "0..20", "5", "sessions_send's reply-back loop."},
      {"upstream-first-tick-ms", "MS", "15000", "The upstream monitor's first tick after start."},
      {"upstream-interval-ms", "MS", "60000", "The upstream monitor's tick interval."},
      {"config", "FILE", "",
       "The tool policy, upstream, retention and access tokens as JSON (see `statewatch "
       "config check`); flags given beside it override it; SIGHUP reloads it."},
      {"upstream-root", "DIR", "",
       "Upstream links must resolve (realpath) under one of these (repeatable); with none, "
       "no link is accepted.", false, true},
      {"allow-origin", "ORIGIN[,ORIGIN]", "",
       "Browser origins allowed to call the daemon (repeatable); any other Origin is "
       "answered 403.", false, true},
      {"allow-host", "HOST[:PORT][,...]", "",
       "Host headers answered (repeatable; *.suffix matches any labels before it). Without a "
       "token: these, the listen address and the loopback names, others 421. With a token: "
       "any Host, unless this narrows it to these and the loopback names.", false, true},
      {"max-connections", "N", "the file limit less a quarter, at least 64",
       "Open HTTP connections; beyond it the longest-idle one is closed, or 503."},
      {"max-streams", "N", "256", "Open WebSocket streams; an upgrade beyond it is answered 503."},
      {"max-rows", "N", "50000", "The journal's row cap; the oldest rows beyond it are pruned."},
      {"retention-ms", "MS", "2592000000 (30 days)",
       "History kept by occurredAt, and the idle expiry of cursors."},
      {"prune-interval-ms", "MS", "3600000",
       "The daemon prunes (age, row cap, idle cursors) this often, also without writes."},
      {"row-cache-bytes", "BYTES", "8388608",
       "Recently read journal rows kept decoded for changesSince pages; 0 turns it off."},
  };
  for (OptionHelp& h : ClusterServeOptionHelp()) help.push_back(std::move(h));
  for (OptionHelp& h : ClusterNodeOptionHelp()) help.push_back(std::move(h));
  return help;
}

int RunServeCommand(cli::Command& c) {
  auto options = ReadServeOptions(c, c.global.token);
  if (!options.ok()) return cli::UsageError(c, options.status().message());
  if (Status s = AttachCluster(c.args, &*options); !s.ok()) {
    return s.IsInvalidArgument() ? cli::UsageError(c, s.message()) : cli::RuntimeError(c, s);
  }
  if (Status s = SetUpLogging(c.args); !s.ok()) return cli::UsageError(c, s.message());
  if (IsNodeServe(c.args) || IsStandbyServe(c.args)) {
    // A cluster node and a standby read their settings at start only. SIGHUP (a logrotate,
    // `systemctl reload`) must not end them, as its default action would: it is logged.
    auto reload = server::ReloadSignal::Start([] {
      spdlog::warn(
          "event=config_reload_unsupported hint=\"a cluster node or standby reads its settings "
          "at start: restart it to apply changes\"");
    });
    if (!reload.ok()) return cli::RuntimeError(c, reload.status());
    return IsNodeServe(c.args) ? RunNodeServe(c, *options) : RunStandbyServe(c, *options);
  }

  auto daemon = Daemon::Open(*options);
  // Printed once, by RuntimeError (stderr): a log line too would say it twice.
  if (!daemon.ok()) return cli::RuntimeError(c, daemon.status());
  (*daemon)->HandleSignals();
  // SIGHUP: read the file, the token file and the flags again and apply the new tool policy
  // and tokens. A file that no longer reads keeps the running ones (and says why).
  Daemon* running = daemon->get();
  auto reload = server::ReloadSignal::Start([&c, running] {
    // The token file again: a rotated token applies without a restart.
    auto global = cli::ReadGlobalOptions(c.args);
    auto next = global.ok() ? ReadServeOptions(c, global->token)
                            : Result<ServerOptions>(global.status());
    Status s = next.ok() ? running->Reconfigure(*next) : next.status();
    if (!s.ok()) {
      spdlog::error("event=config_reload_refused error=\"{}\"", s.message());
      return;
    }
    for (const std::string& key : server::SettingsNeedingRestart(running->options(), *next)) {
      spdlog::warn("event=config_reload_needs_restart key={}", key);
    }
    // Tokens by count only: a log line never holds a token or its digest.
    spdlog::info("event=config_reloaded config={} visibility={} profile={} tokens={}",
                 c.args.Get("config").value_or("-"), tools::VisibilityName(next->tools.visibility),
                 tools::ToolProfileName(next->messaging.tool_policy.profile),
                 next->tokens.size() + (next->token.empty() ? 0 : 1));
  });
  if (!reload.ok()) return cli::RuntimeError(c, reload.status());
  if (c.args.Has("token")) {
    spdlog::warn(
        "event=token_on_command_line hint=\"--token is visible to every local user "
        "in ps; use --token-file FILE\"");
  }
  std::error_code ec;
  std::string data_dir = std::filesystem::absolute(options->data_dir, ec).lexically_normal();
  spdlog::info(
      "event=listening version={} addr={}:{} data={} durability={} visibility={} "
      "manual_clock={} auth={} max_connections={} upstream_roots={}",
      kVersion, options->host, (*daemon)->port(), ec ? options->data_dir : data_dir,
      options->durability == Durability::kSync ? "sync" : "buffered",
      tools::VisibilityName(options->tools.visibility), options->manual_clock,
      server::TokenConfigured(*options) ? "bearer" : "none",
      server::EffectiveMaxConnections(*options),
      options->upstream.roots.size());
  c.out << "{\"listening\":\"" << options->host << ":" << (*daemon)->port()
        << "\",\"port\":" << (*daemon)->port() << "}\n";
  c.out.flush();
  (*daemon)->Run();
  reload->reset();  // no reload may reach a daemon being torn down
  daemon->reset();  // server first, then the engine: the database closes cleanly
  spdlog::info("event=stopped data={}", options->data_dir);
  return cli::kExitOk;
}

}  // namespace statewatch::cli

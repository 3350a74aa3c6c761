#include "server/daemon.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace statewatch::server {

Result<std::unique_ptr<Daemon>> Daemon::Open(const ServerOptions& options) {
  SW_RETURN_IF_ERROR(ValidateServerOptions(options));
  // Before the database: a port in use must not leave a new data directory behind. (Another
  // process may still take the port in between; then Bind says so, after the open.)
  SW_RETURN_IF_ERROR(HttpServer::CheckBindable(options));
  auto opened = OpenEngine(options);
  if (!opened.ok()) return opened.status();
  return Open(options, std::move(*opened));
}

Result<Daemon::OpenedEngine> Daemon::OpenEngine(const ServerOptions& options) {
  OpenedEngine out;
  EngineOptions engine_options;
  engine_options.durability = options.durability;
  engine_options.wake_window_ms = options.wake_window_ms;
  engine_options.max_rows = options.max_rows;
  engine_options.retention_ms = options.retention_ms;
  engine_options.prune_interval_ms = options.prune_interval_ms;
  engine_options.row_cache_bytes = options.row_cache_bytes;
  engine_options.wrap_log = options.wrap_log;
  engine_options.partition = options.partition;
  engine_options.partitions = options.partitions;
  engine_options.checkpoint_min_records = options.checkpoint_min_records;
  if (options.manual_clock) {
    int64_t start = options.manual_clock_start_ms;
    if (start == 0) {
      start = std::chrono::duration_cast<std::chrono::milliseconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
    }
    out.manual_clock = std::make_shared<ManualClock>(start);
    engine_options.clock = out.manual_clock;
  }
  auto engine = Engine::Open(engine_options, options.data_dir);
  if (!engine.ok()) return engine.status();
  out.engine = std::move(engine).value();
  // The restart sweep (docs/semantics.md, "The transition table").
  SW_RETURN_IF_ERROR(out.engine->Start());
  return out;
}

Result<std::unique_ptr<Daemon>> Daemon::Open(const ServerOptions& options, OpenedEngine opened) {
  SW_RETURN_IF_ERROR(ValidateServerOptions(options));
  if (!opened.engine) return Status::InvalidArgument("Daemon::Open: no engine");
  std::unique_ptr<Daemon> d(new Daemon(options));
  d->manual_clock_ = std::move(opened.manual_clock);
  d->engine_ = std::move(opened.engine);
  auto stats = d->engine_->Stats();
  if (stats.ok()) {
    spdlog::info("event=engine_open data={} rows={} sessions={} cursors={} pending_notices={}",
                 options.data_dir, stats->journal_rows, stats->sessions, stats->cursors,
                 stats->pending_notices);
  }
  SW_RETURN_IF_ERROR(d->OpenServices());
  ApiServices services;
  services.engine = d->engine_.get();
  services.manual_clock = d->manual_clock_.get();
  services.metrics = &d->metrics_;
  services.messaging = d->messaging_.get();
  services.deliveries = &d->deliveries_;
  services.monitor = d->monitor_.get();
  services.monitor_driver = d->monitor_driver_.get();
  services.prune_scheduler = d->pruner_.get();
  services.gate = d->options_.gate.get();
  d->wake_log_ = std::make_unique<WakeLog>(d->engine_.get());
  services.wake_log = d->wake_log_.get();
  d->OpenMcp();
  services.mcp = d->mcp_.get();
  services.webhooks = d->webhooks_.get();
  d->api_ = std::make_unique<Api>(services, d->options_);
  Api* api = d->api_.get();
  d->mcp_->SetDispatch([api](const ApiRequest& request) { return api->Handle(request); });
  auto server = HttpServer::Bind(d->engine_.get(), d->api_.get(), &d->metrics_, d->options_);
  if (!server.ok()) return server.status();
  d->server_ = std::move(server).value();
  // Last: a tick may record events and re-arm the wake timer through api_->after_write,
  // which HttpServer::Bind has just set.
  d->monitor_driver_->Start();
  d->pruner_->Start();
  d->webhooks_->Start();
  if (d->mail_forwarder_) d->mail_forwarder_->Start();
  return d;
}

Status Daemon::OpenServices() {
  tools::MessagingOptions messaging = options_.messaging;
  messaging.sessions = options_.tools;
  // Deliveries become durable inside SessionMessaging; the hub pushes them to live feeds.
  messaging.on_delivery = [hub = &deliveries_](const Delivery& d) { hub->Publish(d); };
  if (options_.session_mail) {
    // docs/cluster-internals.md, "Session tools across partitions": sends to other
    // partitions go through the outbox; the forwarder starts with every row due (a new
    // owner resends what the old one left).
    mail_forwarder_ =
        std::make_unique<tools::SessionMailForwarder>(engine_.get(), options_.session_mail);
    messaging.cross_partition = true;
    messaging.partitions = options_.partitions;
    messaging.on_mail = [f = mail_forwarder_.get()] { f->Wake(); };
  }
  auto opened = tools::SessionMessaging::Open(engine_.get(), std::move(messaging));
  if (!opened.ok()) return opened.status();
  messaging_ = std::move(opened).value();
  monitor_ = std::make_unique<monitor::UpstreamMonitor>(*engine_, options_.upstream);
  webhooks::UrlPolicy policy{options_.webhooks.allow_http, options_.webhooks.allow_private_networks};
  webhooks_ = std::make_unique<webhooks::Dispatcher>(engine_.get(), &engine_->clock(),
                                                     options_.webhooks,
                                                     webhooks::NewHttpSender(policy));
  SW_RETURN_IF_ERROR(webhooks_->Load());  // the outbox a crash left; the first pass rescans
  pruner_ = std::make_unique<PruneScheduler>(engine_.get(), &engine_->clock(),
                                             options_.manual_clock, options_.prune_interval_ms);
  monitor_driver_ = std::make_unique<MonitorDriver>(monitor_.get(), &engine_->clock(),
                                                    options_.manual_clock, [this] {
                                                      if (api_ && api_->after_write)
                                                        api_->after_write();
                                                    });
  return Status::OK();
}

// The MCP endpoint: its tool calls go through the Api (set once the Api exists), its
// notifications come from the engine's wakes.
void Daemon::OpenMcp() {
  McpServer::Services mcp;
  Engine* engine = engine_.get();
  mcp.pending_targets = [engine](const std::string& watcher) {
    std::vector<SessionName> targets;
    auto notices = engine->PendingNotices(watcher);
    if (notices.ok()) {
      for (const Notice& n : *notices) targets.push_back(n.target);
    }
    return targets;
  };
  mcp.acknowledge = [this](const std::string& watcher, const SessionName& target) {
    Status s = engine_->Acknowledge(watcher, {target});
    if (!s.ok()) spdlog::warn("event=mcp_acknowledge_failed error=\"{}\"", s.ToString());
    if (api_ && api_->after_write) api_->after_write();  // a new notice may need the timer
  };
  mcp.clock = &engine_->clock();
  mcp_ = std::make_unique<McpServer>(std::move(mcp), McpOptions());
  McpServer* server = mcp_.get();
  mcp_wakes_ = engine_->SubscribeWakes([server](const Wake& wake) { server->OnWake(wake); });
}

Status Daemon::Reconfigure(const ServerOptions& next) {
  // The Host policy was fixed at start (request_guard.h): a daemon that required a token
  // answers any Host, which only a token makes safe (a browser page can rebind a name to
  // 127.0.0.1).
  if (TokenConfigured(options_) && !TokenConfigured(next)) {
    return Status::InvalidArgument(
        "the reload removes every access token (--token, --token-file, auth.tokens) from a "
        "daemon that started with one; restart it to run without a token");
  }
  tools::MessagingOptions policy = next.messaging;
  policy.sessions = next.tools;
  // The certificate files named at start, re-read (a renewed certificate in place); one
  // that no longer loads keeps the running one, and the policy too.
  SW_RETURN_IF_ERROR(server_->ReloadTls());
  SW_RETURN_IF_ERROR(messaging_->Reconfigure(policy));
  api_->ReloadTokens(next);  // last: a refused reload changes nothing
  return Status::OK();
}

Daemon::~Daemon() {
  if (webhooks_) webhooks_->Stop();  // waits for the calls in flight; unsubscribes its wakes
  if (mail_forwarder_) mail_forwarder_->Stop();  // waits for the send in flight
  if (monitor_driver_) monitor_driver_->Stop();  // aborts a tick; before the engine closes
  if (pruner_) pruner_->Stop();
  server_.reset();                               // no request can reach the engine after this
  api_.reset();
  if (mcp_) engine_->UnsubscribeWakes(mcp_wakes_);
  mcp_.reset();
  wake_log_.reset();  // unsubscribes from the engine's wakes
  monitor_driver_.reset();
  pruner_.reset();
  webhooks_.reset();
  monitor_.reset();
  messaging_.reset();
  mail_forwarder_.reset();
  engine_.reset();  // closes the database
}

}  // namespace statewatch::server

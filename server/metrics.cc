#include "server/metrics.h"

#include <cstdio>

#include "server/route_table.h"
#include "statewatch/version.h"

namespace statewatch::server {
namespace {

// Upper bounds of the latency buckets, in seconds (the last bucket is +Inf).
constexpr double kBucketBounds[] = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                    0.01,    0.025,  0.05,    0.1,    0.5,   2.5};
constexpr int kStatusCodes[] = {200, 400, 401, 403, 404, 405, 408, 413, 426, 431, 500, 503};

int CodeIndex(int status) {
  for (int i = 0; i < static_cast<int>(std::size(kStatusCodes)); ++i) {
    if (kStatusCodes[i] == status) return i;
  }
  return static_cast<int>(std::size(kStatusCodes));  // "other"
}

int BucketIndex(int64_t nanos) {
  double seconds = static_cast<double>(nanos) / 1e9;
  for (int i = 0; i < static_cast<int>(std::size(kBucketBounds)); ++i) {
    if (seconds <= kBucketBounds[i]) return i;
  }
  return static_cast<int>(std::size(kBucketBounds));
}

void Line(std::string& out, const char* name, const std::string& labels, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", value);
  out += name;
  if (!labels.empty()) out += "{" + labels + "}";
  out += " ";
  out += buf;
  out += "\n";
}

void Header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

uint64_t Load(const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); }

}  // namespace

static_assert(std::size(kBucketBounds) + 1 == 14, "kBuckets");
static_assert(std::size(kStatusCodes) + 1 == 13, "kCodes");

Metrics::Metrics()
    : route_count_(Routes().size() + 1),
      routes_(std::make_unique<RouteCounters[]>(Routes().size() + 1)) {}

namespace {
// The labels of a route row: method and path template; "unmatched" has no method.
std::string RouteLabels(std::size_t route) {
  const auto& routes = Routes();
  if (route >= routes.size()) return "route=\"unmatched\"";
  return std::string("method=\"") + routes[route].method + "\",route=\"" + routes[route].path +
         "\"";
}
}  // namespace

void Metrics::ObserveRequest(std::size_t route, int status, int64_t nanos) {
  if (route >= route_count_) route = route_count_ - 1;
  RouteCounters& r = routes_[route];
  r.by_code[CodeIndex(status)].fetch_add(1, std::memory_order_relaxed);
  r.buckets[BucketIndex(nanos)].fetch_add(1, std::memory_order_relaxed);
  r.count.fetch_add(1, std::memory_order_relaxed);
  r.sum_nanos.fetch_add(static_cast<uint64_t>(nanos < 0 ? 0 : nanos), std::memory_order_relaxed);
}

void Metrics::CountRecorded(const std::vector<RecordResult>& results) {
  std::lock_guard<std::mutex> lock(kinds_mu_);
  for (const RecordResult& r : results) {
    if (r.deduplicated) {
      deduplicated_.fetch_add(1, std::memory_order_relaxed);
    } else {
      ++recorded_by_kind_[r.event.kind];
    }
  }
}

void Metrics::AddPruned(const PruneStats& stats) {
  rows_pruned_.fetch_add(stats.rows_deleted, std::memory_order_relaxed);
  cursors_expired_.fetch_add(stats.cursors_expired, std::memory_order_relaxed);
}

void Metrics::RenderHttp(std::string& out) const {
  Header(out, "statewatch_http_requests_total", "counter",
         "HTTP requests answered, by route and status.");
  for (std::size_t i = 0; i < route_count_; ++i) {
    std::string route = RouteLabels(i);
    for (int c = 0; c < kCodes; ++c) {
      uint64_t n = Load(routes_[i].by_code[c]);
      if (n == 0) continue;
      std::string code = c < kCodes - 1 ? std::to_string(kStatusCodes[c]) : "other";
      Line(out, "statewatch_http_requests_total", route + ",code=\"" + code + "\"",
           static_cast<double>(n));
    }
  }
  Header(out, "statewatch_http_request_duration_seconds", "histogram",
         "Time to handle a request (parse, engine call, response body), by route.");
  for (std::size_t i = 0; i < route_count_; ++i) {
    const RouteCounters& r = routes_[i];
    uint64_t count = Load(r.count);
    if (count == 0) continue;
    std::string route = RouteLabels(i);
    uint64_t cumulative = 0;
    for (int b = 0; b < kBuckets; ++b) {
      cumulative += Load(r.buckets[b]);
      char le[32];
      if (b < kBuckets - 1) {
        std::snprintf(le, sizeof(le), "%g", kBucketBounds[b]);
      } else {
        std::snprintf(le, sizeof(le), "+Inf");
      }
      Line(out, "statewatch_http_request_duration_seconds_bucket", route + ",le=\"" + le + "\"",
           static_cast<double>(cumulative));
    }
    Line(out, "statewatch_http_request_duration_seconds_sum", route,
         static_cast<double>(Load(r.sum_nanos)) / 1e9);
    Line(out, "statewatch_http_request_duration_seconds_count", route, static_cast<double>(count));
  }
}

std::string Metrics::Render(const EngineStats* stats, const ServiceGauges* services) const {
  std::string out;
  out.reserve(8192);
  Header(out, "statewatch_build_info", "gauge", "The running statewatch's version (always 1).");
  Line(out, "statewatch_build_info", std::string("version=\"") + kVersion + "\"", 1);
  Header(out, "statewatch_events_recorded_total", "counter",
         "Events recorded through this daemon, by kind.");
  {
    std::lock_guard<std::mutex> lock(kinds_mu_);
    for (const auto& [kind, n] : recorded_by_kind_) {
      Line(out, "statewatch_events_recorded_total", "kind=\"" + EscapeLabel(kind) + "\"",
           static_cast<double>(n));
    }
  }
  auto counter = [&](const char* name, const char* help, double v) {
    Header(out, name, "counter", help);
    Line(out, name, "", v);
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    Header(out, name, "gauge", help);
    Line(out, name, "", v);
  };
  counter("statewatch_events_deduplicated_total",
          "Records answered with an existing event (dedupe key).", double(Load(deduplicated_)));
  counter("statewatch_notices_drained_total", "Notices handed out by POST /v1/notices/drain.",
          double(Load(notices_drained_)));
  counter("statewatch_wakes_sent_total", "Wakes the engine fired (each may reach several clients).",
          double(Load(wakes_sent_)));
  counter("statewatch_websocket_messages_total", "Wake messages queued to WebSocket clients.",
          double(Load(ws_messages_)));
  counter("statewatch_websocket_dropped_total", "WebSocket clients dropped for falling behind.",
          double(Load(ws_dropped_)));
  counter("statewatch_rows_pruned_total", "Journal rows deleted by POST /v1/prune.",
          double(Load(rows_pruned_)));
  counter("statewatch_cursors_expired_total", "Idle cursors deleted by POST /v1/prune.",
          double(Load(cursors_expired_)));
  gauge("statewatch_websocket_clients", "Open WebSocket wake streams.",
        double(ws_clients_.load(std::memory_order_relaxed)));
  gauge("statewatch_http_connections", "Open HTTP connections.",
        double(connections_.load(std::memory_order_relaxed)));
  if (stats != nullptr) {
    gauge("statewatch_journal_rows", "Journal rows retained.", double(stats->journal_rows));
    gauge("statewatch_sessions", "Sessions with a state version.", double(stats->sessions));
    gauge("statewatch_cursors", "Watch cursors.", double(stats->cursors));
    gauge("statewatch_pending_notices", "Notices pending (opened and not drained).",
          double(stats->pending_notices));
    gauge("statewatch_last_sequence", "The engine's last assigned sequence.",
          double(stats->last_sequence));
    gauge("statewatch_rocksdb_bytes_on_disk", "RocksDB files on disk (SST + WAL), bytes.",
          double(stats->bytes_on_disk));
    gauge("statewatch_log_records_since_checkpoint", "Log records since the projection snapshot.",
          double(stats->log_records_since_checkpoint));
  }
  if (services != nullptr) {
    gauge("statewatch_deliveries_unacked", "Deliveries not yet acknowledged by a gateway.",
          double(services->unacked_deliveries));
    gauge("statewatch_runs_active", "Runs (sessions_send, sessions_spawn) still running.",
          double(services->active_runs));
  }
  RenderHttp(out);
  return out;
}

std::string RenderMonitorMetrics(const monitor::MonitorStats& stats) {
  std::string out;
  auto one = [&](const char* name, const char* type, const char* help, double v) {
    Header(out, name, type, help);
    Line(out, name, "", v);
  };
  one("statewatch_upstream_ticks_total", "counter", "Upstream monitor ticks completed.",
      double(stats.ticks));
  one("statewatch_upstream_ticks_aborted_total", "counter", "Ticks aborted by a stop.",
      double(stats.ticks_aborted));
  one("statewatch_upstream_links_scanned_total", "counter", "Link scans that succeeded.",
      double(stats.links_scanned));
  one("statewatch_upstream_human_turns_total", "counter", "Human turns found upstream.",
      double(stats.human_turns));
  one("statewatch_upstream_echoes_total", "counter", "Upstream user turns dropped as self-echo.",
      double(stats.echoes));
  one("statewatch_upstream_events_recorded_total", "counter",
      "human_direct_message and upstream_missing events recorded.", double(stats.events_recorded));
  one("statewatch_upstream_failed_checks_total", "counter",
      "Failed source checks (missing, unreadable, timed out).", double(stats.failed_checks));
  one("statewatch_upstream_timeouts_total", "counter", "Provider calls that timed out.",
      double(stats.timeouts));
  one("statewatch_upstream_links_removed_total", "counter", "Links removed after missing.",
      double(stats.links_removed));
  one("statewatch_upstream_blocked_total", "counter",
      "Blocked-line reports (a line over the scan cap).", double(stats.blocked));
  one("statewatch_upstream_blocked_links", "gauge", "Links blocked at the last tick.",
      double(stats.blocked_links));
  one("statewatch_upstream_errors_total", "counter", "Engine reads or writes that failed.",
      double(stats.errors));
  one("statewatch_upstream_bytes_scanned_total", "counter", "JSONL bytes classified.",
      double(stats.bytes_scanned));
  one("statewatch_upstream_last_tick_at_ms", "gauge", "Engine time of the last tick.",
      double(stats.last_tick_at_ms));
  return out;
}

}  // namespace statewatch::server

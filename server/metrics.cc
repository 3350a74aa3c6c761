#include "server/metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <span>
#include <sstream>
#include <utility>

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

// A metric of one sample without labels: its HELP and TYPE, then the sample.
void Single(std::string& out, const char* name, const char* type, const char* help, double v) {
  Header(out, name, type, help);
  Line(out, name, "", v);
}

std::string FormatBound(double bound) {
  char le[32];
  std::snprintf(le, sizeof(le), "%g", bound);
  return le;
}

// The samples of one histogram series: the cumulative <name>_bucket lines (le="<bound>", then
// le="+Inf" for the count past the last bound), <name>_sum and <name>_count, each with
// `labels` (may be empty) before its own.
void HistogramSamples(std::string& out, const std::string& name, const std::string& labels,
                      std::span<const double> bounds, std::span<const uint64_t> counts,
                      double sum, uint64_t count) {
  const std::string prefix = labels.empty() ? labels : labels + ",";
  uint64_t cumulative = 0;
  for (std::size_t b = 0; b < counts.size(); ++b) {
    cumulative += counts[b];
    std::string le = b < bounds.size() ? FormatBound(bounds[b]) : "+Inf";
    Line(out, (name + "_bucket").c_str(), prefix + "le=\"" + le + "\"", double(cumulative));
  }
  Line(out, (name + "_sum").c_str(), labels, sum);
  Line(out, (name + "_count").c_str(), labels, double(count));
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

// The reasons of statewatch_writes_refused_total, in the order of Metrics::refused_. All are
// rendered (zero included) so that a rate over any of them exists from the first scrape.
constexpr const char* kRefusalReasons[] = {
    "bad_request",   "too_large", "unauthorized", "forbidden", "not_found",
    "conflict",      "not_owner", "degraded",     "disk_full", "overloaded",
    "shutting_down", "timeout",   "internal",     "other"};

// Error codes (the JSON answer's error.code) by reason; a code not listed goes by status.
constexpr std::pair<const char*, const char*> kCodeReasons[] = {
    {"invalid_argument", "bad_request"},
    {"invalid_json", "bad_request"},
    {"invalid_caller", "bad_request"},
    {"invalid_parameter", "bad_request"},
    {"bad_request", "bad_request"},
    {"method_not_allowed", "bad_request"},
    {"body_too_large", "too_large"},
    {"header_too_large", "too_large"},
    {"unauthorized", "unauthorized"},
    {"forbidden", "forbidden"},
    {"insufficient_scope", "forbidden"},
    {"not_found", "not_found"},
    {"unknown_session", "not_found"},
    {"unknown_tool", "not_found"},
    {"already_owner", "conflict"},
    {"not_standby", "conflict"},
    {"misdirected", "not_owner"},
    {"partition_moved", "not_owner"},
    {"switching", "not_owner"},
    {"standby", "not_owner"},
    {"unavailable", "degraded"},
    {"insufficient_storage", "disk_full"},
    {"too_many_connections", "overloaded"},
    {"too_many_streams", "overloaded"},
    {"shutting_down", "shutting_down"},
    {"request_timeout", "timeout"},
    {"unsupported_media_type", "bad_request"},
    {"misdirected_request", "bad_request"},
    {"cross_partition_batch", "bad_request"},
    {"partition_required", "bad_request"},
    {"forbidden_origin", "forbidden"},
    {"internal", "internal"}};

int ReasonIndex(std::string_view reason) {
  for (int i = 0; i < static_cast<int>(std::size(kRefusalReasons)); ++i) {
    if (reason == kRefusalReasons[i]) return i;
  }
  return static_cast<int>(std::size(kRefusalReasons)) - 1;  // "other"
}

}  // namespace

const char* RefusalReason(std::string_view error_code, int status) {
  for (const auto& [code, reason] : kCodeReasons) {
    if (error_code == code) return reason;
  }
  switch (status) {
    case 400:
    case 415:
      return "bad_request";
    case 401:
      return "unauthorized";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 413:
    case 431:
      return "too_large";
    case 421:
      return "not_owner";
    case 503:
      return "degraded";
    case 507:
      return "disk_full";
    case 500:
      return "internal";
    default:
      return "other";
  }
}

void Metrics::CountRefusedWrite(std::string_view error_code, int status) {
  refused_[ReasonIndex(RefusalReason(error_code, status))].fetch_add(1, std::memory_order_relaxed);
}

void Metrics::RenderRefused(std::string& out) const {
  Header(out, "statewatch_writes_refused_total", "counter",
         "Write requests (any method but GET) answered with an error, by reason.");
  for (int i = 0; i < kReasons; ++i) {
    Line(out, "statewatch_writes_refused_total",
         std::string("reason=\"") + kRefusalReasons[i] + "\"", double(Load(refused_[i])));
  }
}

static_assert(std::size(kBucketBounds) + 1 == 14, "kBuckets");
static_assert(std::size(kStatusCodes) + 1 == 13, "kCodes");
static_assert(std::size(kRefusalReasons) == 14, "kReasons");

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
    uint64_t buckets[kBuckets];
    for (int b = 0; b < kBuckets; ++b) buckets[b] = Load(r.buckets[b]);
    HistogramSamples(out, "statewatch_http_request_duration_seconds", RouteLabels(i),
                     kBucketBounds, buckets, static_cast<double>(Load(r.sum_nanos)) / 1e9, count);
  }
}

namespace {

void RenderHistogram(std::string& out, const char* name, const char* help, const HistogramData& h) {
  Header(out, name, "histogram", help);
  HistogramSamples(out, name, "", h.bounds, h.counts, h.sum, h.count);
}

void RenderEngineHistograms(std::string& out, const EngineStats& s) {
  RenderHistogram(out, "statewatch_commit_duration_seconds",
                  "Commit groups: from the leader taking the group off the queue to the group "
                  "durable (written, fsynced under sync durability) and visible to readers.",
                  s.commit_seconds);
  RenderHistogram(out, "statewatch_wal_sync_duration_seconds",
                  "One fsync of the RocksDB write-ahead log.", s.wal_sync_seconds);
  RenderHistogram(out, "statewatch_commit_group_writes",
                  "Write calls (a record, a batch, a watch, an ack...) per durable commit group.",
                  s.group_commands);
  RenderHistogram(out, "statewatch_commit_group_events",
                  "Events recorded per durable commit group.", s.group_events);
  RenderHistogram(out, "statewatch_wake_latency_seconds",
                  "From a commit group visible to readers to its notices' wakes handed to the "
                  "wake subscribers (WebSocket streams queue them); wakes merged into a "
                  "coalescing window, which wait on purpose, are not timed.",
                  s.wake_seconds);
}

void RenderRocksDb(std::string& out, const RocksDbStats& r) {
  Single(out, "statewatch_rocksdb_write_stopped", "gauge",
         "1 while RocksDB stops writes (rocksdb.is-write-stopped), else 0.",
         r.write_stopped ? 1 : 0);
  Single(out, "statewatch_rocksdb_delayed_write_rate_bytes_per_second", "gauge",
         "RocksDB's write rate limit while it delays writes (0: not delaying).",
         double(r.delayed_write_rate));
  Single(out, "statewatch_rocksdb_running_compactions", "gauge", "Compactions running now.",
         double(r.running_compactions));
  Single(out, "statewatch_rocksdb_running_flushes", "gauge", "Memtable flushes running now.",
         double(r.running_flushes));
  Single(out, "statewatch_rocksdb_compactions_pending", "gauge",
         "Column families with at least one compaction pending.", double(r.compactions_pending));
  Single(out, "statewatch_rocksdb_pending_compaction_bytes", "gauge",
         "Bytes RocksDB estimates compaction must rewrite to settle the levels.",
         double(r.pending_compaction_bytes));
  Header(out, "statewatch_rocksdb_write_stalls_total", "counter",
         "Times a column family entered a write stall (RocksDB's stall notifications).");
  Line(out, "statewatch_rocksdb_write_stalls_total", "condition=\"delayed\"",
       double(r.stalls_delayed));
  Line(out, "statewatch_rocksdb_write_stalls_total", "condition=\"stopped\"",
       double(r.stalls_stopped));
  Single(out, "statewatch_rocksdb_write_stall_seconds_total", "counter",
         "Time with writes delayed or stopped by RocksDB in any column family.", r.stall_seconds);
}

// Fields of /proc/self/stat after the command name, from the state (field 3) on.
std::vector<std::string> StatFields() {
  std::ifstream in("/proc/self/stat");
  std::string line;
  if (!std::getline(in, line)) return {};
  std::size_t close = line.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return {};
  std::istringstream rest(line.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f;) fields.push_back(f);
  return fields;
}

double BootTimeSeconds() {
  std::ifstream in("/proc/stat");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("btime ", 0) == 0) return std::strtod(line.c_str() + 6, nullptr);
  }
  return 0;
}

void RenderProcess(std::string& out) {
  ProcessStats p = ReadProcessStats();
  if (p.ok) {
    Single(out, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.", p.cpu_seconds);
    Single(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
           p.resident_bytes);
    Single(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
           p.virtual_bytes);
    Single(out, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.", p.start_time_seconds);
  }
  if (p.open_fds >= 0)
    Single(out, "process_open_fds", "gauge", "Number of open file descriptors.", p.open_fds);
  if (p.max_fds >= 0) {
    Single(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.", p.max_fds);
  }
}

}  // namespace

ProcessStats ReadProcessStats() {
  ProcessStats p;
  std::vector<std::string> f = StatFields();  // f[i] is field i + 3 of proc(5)
  if (f.size() > 21) {
    const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(sysconf(_SC_PAGESIZE));
    p.cpu_seconds =
        (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) / ticks;
    p.start_time_seconds = BootTimeSeconds() + std::strtod(f[19].c_str(), nullptr) / ticks;
    p.virtual_bytes = std::strtod(f[20].c_str(), nullptr);
    p.resident_bytes = std::strtod(f[21].c_str(), nullptr) * page;
    p.ok = true;
  }
  std::error_code ec;
  double fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) p.open_fds = fds;
  rlimit limit{};  // what /proc/self/limits shows as "Max open files" (soft)
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    p.max_fds = static_cast<double>(limit.rlim_cur);
  }
  return p;
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
    Single(out, name, "counter", help, v);
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    Single(out, name, "gauge", help, v);
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
    if (!services->guard_refusals.empty()) {
      Header(out, "statewatch_guard_refusals_total", "counter",
             "Session tool calls refused by a loop or cost guard (docs/guards.md), by guard.");
      for (const auto& [guard, n] : services->guard_refusals) {
        Line(out, "statewatch_guard_refusals_total", "guard=\"" + guard + "\"", double(n));
      }
    }
  }
  if (stats != nullptr) {
    RenderEngineHistograms(out, *stats);
    RenderRocksDb(out, stats->rocksdb);
  }
  RenderRefused(out);
  RenderHttp(out);
  RenderProcess(out);
  return out;
}

std::string RenderMonitorMetrics(const monitor::MonitorStats& stats) {
  std::string out;
  Single(out, "statewatch_upstream_ticks_total", "counter", "Upstream monitor ticks completed.",
         double(stats.ticks));
  Single(out, "statewatch_upstream_ticks_aborted_total", "counter", "Ticks aborted by a stop.",
         double(stats.ticks_aborted));
  Single(out, "statewatch_upstream_links_scanned_total", "counter", "Link scans that succeeded.",
         double(stats.links_scanned));
  Single(out, "statewatch_upstream_human_turns_total", "counter", "Human turns found upstream.",
         double(stats.human_turns));
  Single(out, "statewatch_upstream_echoes_total", "counter",
         "Upstream user turns dropped as self-echo.", double(stats.echoes));
  Single(out, "statewatch_upstream_events_recorded_total", "counter",
         "human_direct_message and upstream_missing events recorded.",
         double(stats.events_recorded));
  Single(out, "statewatch_upstream_failed_checks_total", "counter",
         "Failed source checks (missing, unreadable, timed out).", double(stats.failed_checks));
  Single(out, "statewatch_upstream_timeouts_total", "counter", "Provider calls that timed out.",
         double(stats.timeouts));
  Single(out, "statewatch_upstream_links_removed_total", "counter", "Links removed after missing.",
         double(stats.links_removed));
  Single(out, "statewatch_upstream_blocked_total", "counter",
         "Blocked-line reports (a line over the scan cap).", double(stats.blocked));
  Single(out, "statewatch_upstream_blocked_links", "gauge", "Links blocked at the last tick.",
         double(stats.blocked_links));
  Single(out, "statewatch_upstream_errors_total", "counter", "Engine reads or writes that failed.",
         double(stats.errors));
  Single(out, "statewatch_upstream_bytes_scanned_total", "counter", "JSONL bytes classified.",
         double(stats.bytes_scanned));
  Single(out, "statewatch_upstream_last_tick_timestamp_seconds", "gauge",
         "Engine time of the last tick, in seconds since the Unix epoch.",
         double(stats.last_tick_at_ms) / 1000.0);
  return out;
}

}  // namespace statewatch::server

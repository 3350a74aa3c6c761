// Metrics: the daemon's counters and latency histograms, rendered in the Prometheus text
// format (version 0.0.4) for GET /metrics.
//
// Counters are relaxed atomics in fixed arrays indexed by route and status code, so that
// recording costs a few uncontended increments on the request path; only events-by-kind
// takes a mutex (the set of kinds is open).
//
// Thread-safe.
#ifndef STATEWATCH_SERVER_METRICS_H_
#define STATEWATCH_SERVER_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/upstream_monitor.h"
#include "statewatch/types.h"

namespace statewatch::server {

// Gauges read from the engine's tool state at scrape time.
struct ServiceGauges {
  uint64_t unacked_deliveries = 0;  // deliveries not yet acknowledged by a gateway
  uint64_t active_runs = 0;         // runs (sends, spawns) still running
  // Tool calls refused by each loop or cost guard since start (tools/loop_guards.h), by
  // guard name; empty without the session messaging.
  std::vector<std::pair<std::string, uint64_t>> guard_refusals;
};

class Metrics {
 public:
  Metrics();

  // One answered request: its row of the route table (server/route_table.h; Routes().size()
  // for a request that matched none), HTTP status and handling time.
  void ObserveRequest(std::size_t route, int status, int64_t nanos);
  // Events newly recorded (deduplicated ones are not counted).
  void CountRecorded(const std::vector<RecordResult>& results);
  void AddNoticesDrained(uint64_t n) { notices_drained_.fetch_add(n, std::memory_order_relaxed); }
  void AddWakeSent() { wakes_sent_.fetch_add(1, std::memory_order_relaxed); }
  void AddWsMessage() { ws_messages_.fetch_add(1, std::memory_order_relaxed); }
  void AddWsDropped() { ws_dropped_.fetch_add(1, std::memory_order_relaxed); }
  void AddPruned(const PruneStats& stats);
  void WsClientOpened() { ws_clients_.fetch_add(1, std::memory_order_relaxed); }
  void WsClientClosed() { ws_clients_.fetch_sub(1, std::memory_order_relaxed); }
  void ConnectionOpened() { connections_.fetch_add(1, std::memory_order_relaxed); }
  void ConnectionClosed() { connections_.fetch_sub(1, std::memory_order_relaxed); }
  // A write request (any method but GET) answered with an error: counted once, by the reason
  // its error code maps to (RefusalReason). Api::Handle calls it for dispatched requests,
  // the HTTP session for requests refused before dispatch (too large, timed out, overload).
  void CountRefusedWrite(std::string_view error_code, int status);

  // The exposition text: the process_* figures, read from /proc now, and the daemon's own.
  // `stats` (may be null) adds the engine's gauges and histograms; `services` (may be null)
  // the session messaging's.
  std::string Render(const EngineStats* stats, const ServiceGauges* services = nullptr) const;

 private:
  static constexpr int kBuckets = 14;
  static constexpr int kCodes = 13;  // see kStatusCodes in metrics.cc; the last is "other"

  struct RouteCounters {
    std::array<std::atomic<uint64_t>, kCodes> by_code{};
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};  // non-cumulative
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_nanos{0};
  };

  void RenderHttp(std::string& out) const;
  void RenderRefused(std::string& out) const;

  static constexpr int kReasons = 14;  // see kRefusalReasons in metrics.cc

  std::size_t route_count_;                   // rows of the route table + "unmatched"
  std::unique_ptr<RouteCounters[]> routes_;  // atomics: fixed at construction
  mutable std::mutex kinds_mu_;
  std::map<std::string, uint64_t> recorded_by_kind_;
  std::atomic<uint64_t> deduplicated_{0};
  std::atomic<uint64_t> notices_drained_{0};
  std::atomic<uint64_t> wakes_sent_{0};
  std::atomic<uint64_t> ws_messages_{0};
  std::atomic<uint64_t> ws_dropped_{0};
  std::atomic<uint64_t> rows_pruned_{0};
  std::atomic<uint64_t> cursors_expired_{0};
  std::atomic<int64_t> ws_clients_{0};
  std::atomic<int64_t> connections_{0};
  std::array<std::atomic<uint64_t>, kReasons> refused_{};
};

// The reason label of a refused write, from its answer's error code (e.g. "invalid_json" ->
// "bad_request", "insufficient_storage" -> "disk_full", "unavailable" -> "degraded"); a code
// it does not know goes by the status ("other" when that says nothing either).
const char* RefusalReason(std::string_view error_code, int status);

// The process_* family as the Prometheus client libraries name it, from /proc/self (Linux).
struct ProcessStats {
  bool ok = false;         // /proc/self/stat was read
  double cpu_seconds = 0;  // user + system
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;  // since the Unix epoch
  double open_fds = -1;           // -1: not read
  double max_fds = -1;            // the soft limit; -1: not read (or unlimited)
};
ProcessStats ReadProcessStats();

// The upstream monitor's totals (statewatch_upstream_*), appended to the exposition.
std::string RenderMonitorMetrics(const monitor::MonitorStats& stats);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_METRICS_H_

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
#include <mutex>
#include <string>
#include <vector>

#include "monitor/upstream_monitor.h"
#include "statewatch/types.h"

namespace statewatch::server {

// Every HTTP route of the daemon, for per-route metrics.
enum class Route : int {
  kSessionStatus,
  kSessionsList,
  kSessionsHistory,
  kSessionsSend,
  kSessionsSpawn,
  kSessionsYield,
  kSubagents,
  kUnknownTool,
  kEvents,
  kSessionUpsert,
  kSessionDelete,
  kSessionReset,
  kSessionMessages,
  kWatches,
  kNoticesPeek,
  kNoticesDrain,
  kWakes,
  kDeliveries,
  kDeliveryAck,
  kRunReply,
  kRunFinish,
  kUpstreamLinks,
  kUpstreamLink,
  kPrune,
  kVerify,
  kClock,
  kHealthz,
  kMetrics,
  kNotFound,
  kCount
};
const char* RouteName(Route route);

class Metrics {
 public:
  Metrics();

  // One answered request: its route, HTTP status and handling time.
  void ObserveRequest(Route route, int status, int64_t nanos);
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

  // The exposition text. `stats` (may be null) adds the engine's gauges.
  std::string Render(const EngineStats* stats) const;

 private:
  static constexpr int kRoutes = static_cast<int>(Route::kCount);
  static constexpr int kBuckets = 14;
  static constexpr int kCodes = 13;  // see kStatusCodes in metrics.cc; the last is "other"

  struct RouteCounters {
    std::array<std::atomic<uint64_t>, kCodes> by_code{};
    std::array<std::atomic<uint64_t>, kBuckets> buckets{};  // non-cumulative
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> sum_nanos{0};
  };

  void RenderHttp(std::string& out) const;

  std::array<RouteCounters, kRoutes> routes_;
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
};

// The upstream monitor's totals (statewatch_upstream_*), appended to the exposition.
std::string RenderMonitorMetrics(const monitor::MonitorStats& stats);

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_METRICS_H_

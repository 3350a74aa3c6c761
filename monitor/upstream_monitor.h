// UpstreamMonitor: watches the upstream sources of adopted sessions (docs/semantics.md,
// "Upstream monitor (adopted sessions)") and turns what it finds into journal events:
// `human_direct_message` when a person typed into the external thread,
// `upstream_missing` when the source is gone.
//
// A tick:
//   1. lists the upstream links; a link is scanned only when some cursor watches its
//      session (Engine::WatchersOf) and the session has no active run (a RunRecord with
//      target == session and status "running"; its marker waits);
//   2. per link, resolves the source under the upstream roots (one outside them is not
//      read), runs the provider's CheckSource + Scan (at most max_scan_bytes) on a worker,
//      waiting at most provider_timeout of wall time (a timeout is a failed check);
//   3. drops self-echoes: turns whose text, whitespace collapsed and trimmed, equals one of
//      the session's echo_window most recent own user messages (Engine::RecentTranscript);
//   4. publishes, under the link-write lock (upstream_links.h): every link is re-read and a
//      link that changed since it was listed (refreshed, removed) is left alone — the
//      refresh wins; then all the tick's events are recorded in one atomic RecordMany, then
//      the markers are written. A link whose event failed to record keeps its marker; zero
//      human turns only advance the marker. `missing_threshold` consecutive failed checks
//      record one upstream_missing and remove the link; a success resets the count.
// Stop() aborts a running tick: the stop flag is checked after every provider call and
// right before the tick's events are recorded, so an aborted tick publishes nothing.
//
// Outcomes (see upstream_links.h for the dedupe keys):
//   human_direct_message  actor human, summary "human message via <catalogId>", payload
//                         {"turns": N} only when N > 1, occurredAt = the newest human turn's
//                         upstream timestamp when it has one (clamped by the engine)
//   upstream_missing      actor system, summary "upstream missing via <catalogId>", payload
//                         {"channel": "<catalogId>"}
//
// Time: `now_ms` (the engine's clock, injected by the host) drives the cadence and the
// links' last_scanned_at_ms; provider_timeout is real wall time because it bounds real I/O.
//
// Wiring (the daemon): Start(clock.NowMs()) once; from a timer, on a thread that may block,
// `if (m.ShouldRunAt(now)) m.RunTick(now)` (or RunDueTick); re-arm the timer for
// NextTickAt(); Stop() at shutdown, before the engine closes. Stats() feeds /metrics.
//
// Thread-safe. One tick runs at a time: a RunTick that finds another one running returns
// kBusy at once.
#ifndef STATEWATCH_MONITOR_UPSTREAM_MONITOR_H_
#define STATEWATCH_MONITOR_UPSTREAM_MONITOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "monitor/bounded_worker.h"
#include "monitor/upstream_provider.h"
#include "statewatch/engine.h"

namespace statewatch::monitor {

struct UpstreamMonitorOptions {
  // ---- behaviour -------------------------------------------------------------------------

  // The first tick is due this long after Start(now). Default 15 s.
  int64_t first_tick_delay_ms = 15000;
  // Later ticks are due on this grid after the first; a tick that ran late does not cause
  // catch-up ticks (missed slots are skipped). Default 60 s.
  int64_t tick_interval_ms = 60000;
  // How long one link's provider work (CheckSource + Scan) may take, in real wall time. A
  // timeout counts as a failed check and abandons the call's thread. Default 45 s; tests use
  // a few milliseconds.
  std::chrono::milliseconds provider_timeout{45000};
  // Bytes a scan may read per link per tick; a single line longer than this blocks the
  // link's marker and is reported. Default 1 MiB.
  uint64_t max_scan_bytes = 1u << 20;
  // How many of the session's own most recent user messages count for self-echo. Default 10.
  std::size_t echo_window = 10;
  // Consecutive failed checks that record upstream_missing and remove the link. Default 3.
  uint32_t missing_threshold = 3;
  // Providers by upstream kind. Default BuiltinProviders() ("jsonl").
  ProviderRegistry providers = BuiltinProviders();
  // The upstream roots (upstream_links.h, ResolveUnderRoots), checked again before every
  // scan because a path component may have become a symlink since the link was made. A
  // link whose source resolves outside them is not read: it counts as an error every tick
  // (the configuration refuses it; the source is not missing) and its marker waits.
  // Default none: no link is read.
  std::vector<std::string> roots;
};

// A link whose marker could not move because the unit at the marker exceeds the scan cap.
struct BlockedSource {
  SessionName session;
  std::string upstream_ref;
  uint64_t marker = 0;
  std::string message;
};

// What one tick did.
struct TickReport {
  enum class Outcome {
    kCompleted,
    kAborted,  // Stop() interrupted it; nothing was published
    kBusy,     // another tick was running; this one did nothing
    kStopped,  // the monitor is stopped; nothing was done
  };
  Outcome outcome = Outcome::kCompleted;
  int64_t at_ms = 0;
  uint64_t links = 0;               // links listed
  uint64_t scanned = 0;             // links whose source was checked and scanned successfully
  uint64_t skipped_unwatched = 0;   // no cursor watches the session
  uint64_t skipped_active_run = 0;  // the session has a running run; its marker waits
  uint64_t human_turns = 0;         // human turns found, self-echoes excluded
  uint64_t echoes = 0;              // user turns dropped as self-echo
  uint64_t events_recorded = 0;     // new events (human_direct_message + upstream_missing)
  uint64_t deduplicated = 0;        // events that came back deduplicated
  uint64_t markers_advanced = 0;
  uint64_t failed_checks = 0;  // missing source, unreadable source, or timeout
  uint64_t timeouts = 0;       // provider calls that outlived provider_timeout
  uint64_t links_removed = 0;  // after upstream_missing
  uint64_t refreshed = 0;      // links changed during the tick, left to the refresh
  uint64_t errors = 0;         // engine reads/writes that failed (the marker stayed)
  uint64_t bytes_scanned = 0;  // bytes classified
  std::vector<BlockedSource> blocked;
};

// Totals since construction (for /metrics).
struct MonitorStats {
  uint64_t ticks = 0;  // completed
  uint64_t ticks_aborted = 0;
  uint64_t links_scanned = 0;
  uint64_t human_turns = 0;
  uint64_t echoes = 0;
  uint64_t events_recorded = 0;
  uint64_t failed_checks = 0;
  uint64_t timeouts = 0;
  uint64_t links_removed = 0;
  uint64_t blocked = 0;        // blocked reports (a blocked link counts once per tick)
  uint64_t blocked_links = 0;  // links blocked at the last completed tick (a gauge)
  uint64_t errors = 0;
  uint64_t bytes_scanned = 0;
  uint64_t abandoned_calls = 0;  // provider threads abandoned after a timeout or Stop
  int64_t last_tick_at_ms = 0;
};

struct LinkPlan;  // upstream_monitor.cc: what a tick will write for one link

class UpstreamMonitor {
 public:
  // REQUIRES: `engine` outlives the monitor.
  explicit UpstreamMonitor(Engine& engine, UpstreamMonitorOptions options = {});
  ~UpstreamMonitor();  // Stop()
  UpstreamMonitor(const UpstreamMonitor&) = delete;
  UpstreamMonitor& operator=(const UpstreamMonitor&) = delete;

  // Starts the cadence: the first tick is due at now + first_tick_delay_ms. Also clears an
  // earlier Stop().
  void Start(int64_t now_ms);
  // Aborts a running tick, waits until it has returned, and stops the cadence. After Stop()
  // returns the monitor publishes nothing until Start(). REQUIRES: not called from the
  // thread running a tick.
  void Stop();

  // A tick is due: started, not stopped, and now >= NextTickAt().
  bool ShouldRunAt(int64_t now_ms) const;
  // When the next tick is due; nullopt before Start() and after Stop().
  std::optional<int64_t> NextTickAt() const;

  // Runs one tick now, due or not (tests and --manual-clock call it directly), and moves
  // the cadence past `now_ms`. Blocks for the tick's duration.
  TickReport RunTick(int64_t now_ms);
  // RunTick when ShouldRunAt(now_ms); nullopt otherwise.
  std::optional<TickReport> RunDueTick(int64_t now_ms);

  MonitorStats Stats() const;

 private:
  bool ScanAll(int64_t now_ms, TickReport& report, std::vector<LinkPlan>& plans);
  bool ScanOne(const UpstreamLink& link, const std::shared_ptr<const UpstreamProvider>& provider,
               int64_t now_ms, TickReport& report, std::vector<LinkPlan>& plans);
  void PlanFailure(const UpstreamLink& link, const std::string& why, TickReport& report,
                   std::vector<LinkPlan>& plans);
  bool PlanSuccess(const UpstreamLink& link, ScanResult scan, int64_t now_ms, TickReport& report,
                   std::vector<LinkPlan>& plans);
  bool Publish(std::vector<LinkPlan>& plans, TickReport& report);
  void RecordEvents(std::vector<LinkPlan*>& with_event, TickReport& report);
  void WriteLinks(std::vector<LinkPlan*>& live, TickReport& report);
  void MoveCadencePast(int64_t now_ms);
  void Account(const TickReport& report);

  Engine& engine_;
  const UpstreamMonitorOptions options_;
  BoundedWorker worker_;
  std::atomic<bool> stop_{false};
  std::mutex tick_mu_;  // held for the duration of a tick

  mutable std::mutex cadence_mu_;
  std::optional<int64_t> next_tick_at_;  // guarded by cadence_mu_

  mutable std::mutex stats_mu_;
  MonitorStats stats_;  // guarded by stats_mu_
};

}  // namespace statewatch::monitor

#endif  // STATEWATCH_MONITOR_UPSTREAM_MONITOR_H_

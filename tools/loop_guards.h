// LoopGuards: the loop and cost guards in front of sessions_send and sessions_spawn, so that
// two agents answering each other, or an agent spawning in a loop, cannot turn a gateway into
// a message storm (docs/guards.md). Four guards, each configured under `guards.*` of the
// configuration file (config/guards_config.h) and on by default:
//
//   send_rate         a token bucket per (caller, target) of sessions_send:
//                     guards.send.perMinute tokens a minute, at most guards.send.burst saved
//   repeated_message  the same message (whitespace collapsed) from one caller to one target
//                     at most guards.repeat.maxIdentical times within guards.repeat.windowMs
//   spawn_rate        a token bucket per spawning agent of sessions_spawn:
//                     guards.spawn.perMinute, guards.spawn.burst
//   open_runs         at most guards.openRuns.maxPerSession open runs per requesting session
//                     (a spawn still running; a send waiting for a reply or in its reply-back
//                     loop — a fire-and-forget send waits for nothing and is not open)
//
// A call is admitted only when every guard that applies admits it, and only then does it
// take its token and join the repeat window: a refused call changes no guard's state. A
// refusal names the guard, the budget and the setting that controls it. A budget of 0
// (burst, maxIdentical, maxPerSession) turns that guard off; guards.enabled=false all four.
//
// Bounded state: the buckets and repeat windows of at most guards.maxTrackedKeys callers
// (pairs and agents), least recently used dropped first (a dropped key starts again with a
// full bucket); a repeat window keeps at most kMaxRepeatEntries messages. Open runs are
// tracked per requester as long as they are open (TrackRun, fed by every stored run).
//
// Time is the clock given at construction (the engine's; a ManualClock in tests). A clock
// that steps back refills nothing.
//
// Thread-safe: one mutex (a leaf) around the state; the counters are atomics.
#ifndef STATEWATCH_TOOLS_LOOP_GUARDS_H_
#define STATEWATCH_TOOLS_LOOP_GUARDS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "statewatch/clock.h"
#include "statewatch/session_records.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::tools {

// guards.* of the configuration file, with the defaults the daemon starts with.
struct GuardOptions {
  // guards.enabled: false turns every guard off. Default true.
  bool enabled = true;
  // guards.send.perMinute, guards.send.burst: sessions_send per (caller, target). Default 30
  // a minute after a burst of 10: a conversation never notices, a loop of 398 sends stops
  // at the 11th. burst 0: off.
  int64_t send_per_minute = 30;
  int64_t send_burst = 10;
  // guards.repeat.maxIdentical, guards.repeat.windowMs: the same message from one caller to
  // one target at most 3 times in 10 minutes; the 4th is refused. maxIdentical 0: off.
  int64_t repeat_max_identical = 3;
  int64_t repeat_window_ms = 10 * 60 * 1000;
  // guards.spawn.perMinute, guards.spawn.burst: sessions_spawn per spawning agent. Default 12
  // a minute after a burst of 20. burst 0: off.
  int64_t spawn_per_minute = 12;
  int64_t spawn_burst = 20;
  // guards.openRuns.maxPerSession: open runs one session may have started. Default 32.
  // 0: off. Checked at admission: concurrent calls of one session may pass it together.
  int64_t max_open_runs_per_session = 32;
  // guards.maxTrackedKeys: buckets and repeat windows kept (pairs and agents). Default 10000.
  int64_t max_tracked_keys = 10000;

  bool operator==(const GuardOptions&) const = default;
};

// InvalidArgument naming the setting and the value when `options` is out of range
// (the ranges config/guards_config.h documents).
Status ValidateGuardOptions(const GuardOptions& options);

// Persisted in events (payload "guard") and metric labels: DO NOT CHANGE the names.
enum class Guard { kSendRate = 0, kRepeatedMessage = 1, kSpawnRate = 2, kOpenRuns = 3 };
inline constexpr int kGuardCount = 4;
// "send_rate" | "repeated_message" | "spawn_rate" | "open_runs".
const char* GuardName(Guard guard);

struct GuardRefusal {
  Guard guard = Guard::kSendRate;
  // The settings that control it, e.g. "guards.send.perMinute=30, guards.send.burst=10".
  std::string setting;
  // The whole refusal, naming the guard, the budget and the setting.
  std::string message;
  int64_t retry_after_ms = 0;  // when the call would be admitted (0: not by waiting alone)
};

// The most messages a repeat window keeps per (caller, target), whatever the settings.
inline constexpr std::size_t kMaxRepeatEntries = 1024;

class LoopGuards {
 public:
  // REQUIRES: ValidateGuardOptions(options) is OK. `clock` is not owned and must outlive this.
  LoopGuards(const Clock* clock, GuardOptions options);
  ~LoopGuards();
  LoopGuards(const LoopGuards&) = delete;
  LoopGuards& operator=(const LoopGuards&) = delete;

  // Applies new settings to every later call; buckets keep their tokens (capped by the new
  // burst), windows their messages. REQUIRES: valid options.
  void Reconfigure(const GuardOptions& options);
  GuardOptions options() const;

  // A sessions_send of `message` from `caller` to `target`; `opens_run` when the send will
  // wait for a reply (timeoutSeconds > 0), so that open_runs applies. nullopt: admitted (its
  // token taken, its message in the window); else the first refusing guard (nothing taken).
  std::optional<GuardRefusal> AdmitSend(const SessionName& caller, const SessionName& target,
                                        std::string_view message, bool opens_run);
  // A sessions_spawn by `caller` (spawn_rate per caller.agent_id, open_runs per caller).
  std::optional<GuardRefusal> AdmitSpawn(const SessionName& caller);

  // A run as just stored: counted against its requester while it is open, forgotten once
  // it is not (ended, or never open).
  void TrackRun(const RunRecord& run);
  // Open runs of `requester` as tracked.
  int64_t OpenRuns(const SessionName& requester) const;

  // Refusals since construction, by Guard.
  std::array<uint64_t, kGuardCount> Refusals() const;
  // Keys (pairs and agents) with state now, for tests of the bound.
  std::size_t TrackedKeys() const;

 private:
  struct State;
  std::optional<GuardRefusal> Refused(GuardRefusal refusal);

  const Clock* clock_;
  mutable std::mutex mu_;
  std::unique_ptr<State> state_;  // guarded by mu_
  std::array<std::atomic<uint64_t>, kGuardCount> refusals_{};
};

// True when `run` counts against its requester's open_runs.
bool IsOpenRun(const RunRecord& run);

}  // namespace statewatch::tools

#endif  // STATEWATCH_TOOLS_LOOP_GUARDS_H_

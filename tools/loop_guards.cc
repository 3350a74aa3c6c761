#include "tools/loop_guards.h"

#include <algorithm>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

#include "codecs/json_fields.h"

namespace statewatch::tools {

namespace {

// Tokens are counted in 1/60000ths so that a per-minute rate refills a whole number of units
// every millisecond: exact integer arithmetic, no drift between two runs of a test.
constexpr int64_t kUnitsPerToken = 60000;

constexpr NamedValue<Guard> kGuardNames[] = {{Guard::kSendRate, "send_rate"},
                                             {Guard::kRepeatedMessage, "repeated_message"},
                                             {Guard::kSpawnRate, "spawn_rate"},
                                             {Guard::kOpenRuns, "open_runs"}};

struct Bucket {
  int64_t units = -1;  // -1: never used (full)
  int64_t at_ms = 0;   // when `units` was last brought up to date
};

// `b`'s units now: refilled at `per_minute` units a millisecond, capped at `burst` tokens.
// A clock that went back refills nothing.
int64_t UnitsNow(const Bucket& b, int64_t per_minute, int64_t burst, int64_t now) {
  const int64_t cap = burst * kUnitsPerToken;
  if (b.units < 0) return cap;
  int64_t elapsed = std::max<int64_t>(0, now - b.at_ms);
  elapsed = std::min(elapsed, cap / per_minute + 1);  // no overflow: the cap is reached
  return std::min(cap, b.units + elapsed * per_minute);
}

// Milliseconds until `units` reach one token.
int64_t WaitForToken(int64_t units, int64_t per_minute) {
  int64_t missing = kUnitsPerToken - units;
  return missing <= 0 ? 0 : (missing + per_minute - 1) / per_minute;
}

// FNV-1a over the message with runs of ASCII whitespace collapsed to one space and both ends
// trimmed: a loop that only re-wraps its text is still the same message.
uint64_t MessageHash(std::string_view text) {
  uint64_t h = 1469598103934665603ULL;
  bool space = false, started = false;
  for (char c : text) {
    bool is_space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    if (is_space) {
      space = started;
      continue;
    }
    if (space) {
      h = (h ^ static_cast<unsigned char>(' ')) * 1099511628211ULL;
      space = false;
    }
    started = true;
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  }
  return h;
}

std::string NameKey(const SessionName& s) { return s.agent_id + '\0' + s.session_key; }

std::string Seconds(int64_t ms) { return std::to_string((ms + 999) / 1000) + " s"; }

// A map with a size bound: the least recently used key goes first.
template <typename V>
class LruMap {
 public:
  // The value of `key`, created (default) when absent; it becomes the most recent.
  V& Touch(const std::string& key, std::size_t bound) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return it->second->second;
    }
    order_.emplace_front(key, V{});
    index_[key] = order_.begin();
    while (order_.size() > std::max<std::size_t>(bound, 1)) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }
  // The value of `key` or null, without touching it.
  const V* Find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }
  std::size_t size() const { return order_.size(); }

 private:
  std::list<std::pair<std::string, V>> order_;
  std::unordered_map<std::string, typename std::list<std::pair<std::string, V>>::iterator> index_;
};

struct PairState {
  Bucket bucket;
  std::deque<std::pair<uint64_t, int64_t>> recent;  // (message hash, sent at), oldest first
};

}  // namespace

struct LoopGuards::State {
  GuardOptions options;
  LruMap<PairState> pairs;  // caller \0 target -> send bucket and repeat window
  LruMap<Bucket> agents;    // spawning agent -> spawn bucket
  std::map<std::string, std::set<std::string>> open_runs;  // requester -> open run ids
};

Status ValidateGuardOptions(const GuardOptions& o) {
  auto range = [](const char* key, int64_t v, int64_t min, int64_t max) -> Status {
    if (v >= min && v <= max) return Status::OK();
    return Status::InvalidArgument(std::string(key) + " must be an integer from " +
                                   std::to_string(min) + " to " + std::to_string(max) + " (got " +
                                   std::to_string(v) + ")");
  };
  SW_RETURN_IF_ERROR(range("guards.send.perMinute", o.send_per_minute, 1, 600000));
  SW_RETURN_IF_ERROR(range("guards.send.burst", o.send_burst, 0, 100000));
  SW_RETURN_IF_ERROR(range("guards.repeat.maxIdentical", o.repeat_max_identical, 0, 1000));
  SW_RETURN_IF_ERROR(range("guards.repeat.windowMs", o.repeat_window_ms, 1, 7LL * 86400000));
  SW_RETURN_IF_ERROR(range("guards.spawn.perMinute", o.spawn_per_minute, 1, 600000));
  SW_RETURN_IF_ERROR(range("guards.spawn.burst", o.spawn_burst, 0, 100000));
  SW_RETURN_IF_ERROR(
      range("guards.openRuns.maxPerSession", o.max_open_runs_per_session, 0, 100000));
  return range("guards.maxTrackedKeys", o.max_tracked_keys, 1, 10000000);
}

const char* GuardName(Guard guard) { return NameOf(kGuardNames, guard, "unknown"); }

bool IsOpenRun(const RunRecord& run) {
  if (run.kind == "spawn") return run.status == "running";
  if (run.kind == "send" && run.send) {
    return run.send->phase != SendRunState::Phase::kDone && run.send->deadline_ms > 0;
  }
  return false;
}

LoopGuards::LoopGuards(const Clock* clock, GuardOptions options)
    : clock_(clock), state_(std::make_unique<State>()) {
  state_->options = std::move(options);
}

LoopGuards::~LoopGuards() = default;

void LoopGuards::Reconfigure(const GuardOptions& options) {
  std::lock_guard lock(mu_);
  state_->options = options;
}

GuardOptions LoopGuards::options() const {
  std::lock_guard lock(mu_);
  return state_->options;
}

std::optional<GuardRefusal> LoopGuards::Refused(GuardRefusal refusal) {
  refusals_[static_cast<int>(refusal.guard)].fetch_add(1, std::memory_order_relaxed);
  return refusal;
}

namespace {

GuardRefusal OpenRunsRefusal(const char* tool, const SessionName& caller, int64_t open,
                             int64_t cap) {
  GuardRefusal r;
  r.guard = Guard::kOpenRuns;
  r.setting = "guards.openRuns.maxPerSession=" + std::to_string(cap);
  r.message = std::string(tool) + " refused by loop guard open_runs: " + caller.session_key +
              " has " + std::to_string(open) + " open runs, the most one session may have; " +
              "wait for one to end (" + r.setting + ")";
  return r;
}

// The send_rate or spawn_rate refusal once the bucket holds `units`, less than a token.
// `stem` names the settings (guards.<stem>.perMinute and .burst); `who_did` says who went over
// the burst ("a sent b"), `things` of what.
GuardRefusal RateRefusal(Guard guard, const char* tool, const char* stem, int64_t per_minute,
                         int64_t burst, int64_t units, const std::string& who_did,
                         const char* things) {
  GuardRefusal r;
  r.guard = guard;
  r.retry_after_ms = WaitForToken(units, per_minute);
  r.setting = std::string("guards.") + stem + ".perMinute=" + std::to_string(per_minute) +
              ", guards." + stem + ".burst=" + std::to_string(burst);
  r.message = std::string(tool) + " refused by loop guard " + GuardName(guard) + ": " + who_did +
              " more than a burst of " + std::to_string(burst) + " " + things + ", then " +
              std::to_string(per_minute) + " a minute; retry in " + Seconds(r.retry_after_ms) +
              " (" + r.setting + ")";
  return r;
}

}  // namespace

std::optional<GuardRefusal> LoopGuards::AdmitSend(const SessionName& caller,
                                                  const SessionName& target,
                                                  std::string_view message, bool opens_run) {
  const int64_t now = clock_->NowMs();
  std::lock_guard lock(mu_);
  const GuardOptions& o = state_->options;
  if (!o.enabled) return std::nullopt;
  PairState& pair = state_->pairs.Touch(NameKey(caller) + '\0' + NameKey(target),
                                        static_cast<std::size_t>(o.max_tracked_keys));
  // repeated_message: the window's entries older than windowMs are gone.
  const uint64_t hash = MessageHash(message);
  while (!pair.recent.empty() && pair.recent.front().second <= now - o.repeat_window_ms) {
    pair.recent.pop_front();
  }
  if (o.repeat_max_identical > 0) {
    int64_t same = 0;
    int64_t oldest = now;
    for (const auto& [h, at] : pair.recent) {
      if (h != hash) continue;
      if (same++ == 0) oldest = at;
    }
    if (same >= o.repeat_max_identical) {
      GuardRefusal r;
      r.guard = Guard::kRepeatedMessage;
      r.retry_after_ms = std::max<int64_t>(1, oldest + o.repeat_window_ms - now);
      r.setting = "guards.repeat.maxIdentical=" + std::to_string(o.repeat_max_identical) +
                  ", guards.repeat.windowMs=" + std::to_string(o.repeat_window_ms);
      r.message = "sessions_send refused by loop guard repeated_message: " + caller.session_key +
                  " already sent " + target.session_key + " the same message " +
                  std::to_string(same) + " times within " + Seconds(o.repeat_window_ms) +
                  "; send something new, or the same in " + Seconds(r.retry_after_ms) + " (" +
                  r.setting + ")";
      return Refused(std::move(r));
    }
  }
  // send_rate
  int64_t units = UnitsNow(pair.bucket, o.send_per_minute, o.send_burst, now);
  if (o.send_burst > 0 && units < kUnitsPerToken) {
    return Refused(RateRefusal(Guard::kSendRate, "sessions_send", "send", o.send_per_minute,
                               o.send_burst, units,
                               caller.session_key + " sent " + target.session_key, "messages"));
  }
  // open_runs
  if (opens_run && o.max_open_runs_per_session > 0) {
    auto it = state_->open_runs.find(NameKey(caller));
    int64_t open = it == state_->open_runs.end() ? 0 : static_cast<int64_t>(it->second.size());
    if (open >= o.max_open_runs_per_session) {
      return Refused(OpenRunsRefusal("sessions_send", caller, open, o.max_open_runs_per_session));
    }
  }
  // Admitted: take the token, remember the message.
  if (o.send_burst > 0) pair.bucket = Bucket{units - kUnitsPerToken, now};
  if (o.repeat_max_identical > 0) {
    pair.recent.emplace_back(hash, now);
    if (pair.recent.size() > kMaxRepeatEntries) pair.recent.pop_front();
  }
  return std::nullopt;
}

std::optional<GuardRefusal> LoopGuards::AdmitSpawn(const SessionName& caller) {
  const int64_t now = clock_->NowMs();
  std::lock_guard lock(mu_);
  const GuardOptions& o = state_->options;
  if (!o.enabled) return std::nullopt;
  Bucket& bucket =
      state_->agents.Touch(caller.agent_id, static_cast<std::size_t>(o.max_tracked_keys));
  int64_t units = UnitsNow(bucket, o.spawn_per_minute, o.spawn_burst, now);
  if (o.spawn_burst > 0 && units < kUnitsPerToken) {
    return Refused(RateRefusal(Guard::kSpawnRate, "sessions_spawn", "spawn", o.spawn_per_minute,
                               o.spawn_burst, units, "agent " + caller.agent_id + " spawned",
                               "sub-agents"));
  }
  if (o.max_open_runs_per_session > 0) {
    auto it = state_->open_runs.find(NameKey(caller));
    int64_t open = it == state_->open_runs.end() ? 0 : static_cast<int64_t>(it->second.size());
    if (open >= o.max_open_runs_per_session) {
      return Refused(OpenRunsRefusal("sessions_spawn", caller, open, o.max_open_runs_per_session));
    }
  }
  if (o.spawn_burst > 0) bucket = Bucket{units - kUnitsPerToken, now};
  return std::nullopt;
}

void LoopGuards::TrackRun(const RunRecord& run) {
  const std::string key = NameKey(run.requester);
  std::lock_guard lock(mu_);
  auto& open = state_->open_runs;
  if (IsOpenRun(run)) {
    open[key].insert(run.run_id);
    return;
  }
  auto it = open.find(key);
  if (it == open.end()) return;
  it->second.erase(run.run_id);
  if (it->second.empty()) open.erase(it);
}

int64_t LoopGuards::OpenRuns(const SessionName& requester) const {
  std::lock_guard lock(mu_);
  auto it = state_->open_runs.find(NameKey(requester));
  return it == state_->open_runs.end() ? 0 : static_cast<int64_t>(it->second.size());
}

std::array<uint64_t, kGuardCount> LoopGuards::Refusals() const {
  std::array<uint64_t, kGuardCount> out{};
  for (int i = 0; i < kGuardCount; ++i) out[i] = refusals_[i].load(std::memory_order_relaxed);
  return out;
}

std::size_t LoopGuards::TrackedKeys() const {
  std::lock_guard lock(mu_);
  return state_->pairs.size() + state_->agents.size();
}

}  // namespace statewatch::tools

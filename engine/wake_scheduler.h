// WakeScheduler: coalesces wakes per watcher (docs/semantics.md, "Wakes"). The first wake fires at
// once; further ones within the window merge into one at the window's end. Time comes from
// the caller (the engine's clock), so tests move a ManualClock and call RunDue().
//
// Thread-safe. Callbacks run outside the scheduler's lock.
#ifndef STATEWATCH_ENGINE_WAKE_SCHEDULER_H_
#define STATEWATCH_ENGINE_WAKE_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "statewatch/types.h"

namespace statewatch::engine {

class WakeScheduler {
 public:
  using Callback = std::function<void(const Wake&)>;
  explicit WakeScheduler(int64_t window_ms) : window_ms_(window_ms) {}

  uint64_t Subscribe(Callback cb, std::string watcher_filter);
  void Unsubscribe(uint64_t id);

  // A notice opened for `watcher` (a non-sub-agent key) about `target_key` at `now`.
  void Notify(const std::string& watcher, const std::string& target_key, int64_t now);
  // Notify for many (watcher, target key) pairs at once: one lock, one delivery pass.
  void NotifyMany(const std::vector<std::pair<std::string, std::string>>& notices, int64_t now);
  // Fires the merged wakes due by `now`.
  void RunDue(int64_t now);
  // When RunDue next has a merged wake to fire, if any. O(1): hosts ask after every write.
  std::optional<int64_t> NextDue() const;
  uint64_t wakes_sent() const;

 private:
  struct Slot {
    int64_t last_fire = 0;
    bool fired_once = false;
    bool pending = false;
    std::string reason;
  };
  struct Subscriber {
    std::string filter;
    Callback cb;
  };
  void Deliver(const std::vector<Wake>& wakes);
  // Decides one notice under mu_; appends to `due` when it fires at once.
  void NotifyLocked(const std::string& watcher, const std::string& target_key, int64_t now,
                    std::vector<Wake>* due);
  // Marks `s` pending or not, keeping pending_dues_ in step.
  void SetPendingLocked(Slot& s, bool pending);

  const int64_t window_ms_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Slot> slots_;
  // The due time (last_fire + window) of every pending slot: a pending slot's last_fire does
  // not change until it fires, so NextDue is the first element.
  std::multiset<int64_t> pending_dues_;
  std::map<uint64_t, Subscriber> subscribers_;
  uint64_t next_id_ = 1;
  uint64_t sent_ = 0;
};

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_WAKE_SCHEDULER_H_

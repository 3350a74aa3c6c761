#include "engine/wake_scheduler.h"

namespace statewatch::engine {

uint64_t WakeScheduler::Subscribe(Callback cb, std::string watcher_filter) {
  std::lock_guard<std::mutex> l(mu_);
  uint64_t id = next_id_++;
  subscribers_[id] = Subscriber{std::move(watcher_filter), std::move(cb)};
  return id;
}

void WakeScheduler::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> l(mu_);
  subscribers_.erase(id);
}

void WakeScheduler::Notify(const std::string& watcher, const std::string& target_key,
                           int64_t now) {
  NotifyMany({{watcher, target_key}}, now);
}

void WakeScheduler::NotifyMany(const std::vector<std::pair<std::string, std::string>>& notices,
                               int64_t now) {
  if (notices.empty()) return;
  std::vector<Wake> due;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [watcher, target] : notices) NotifyLocked(watcher, target, now, &due);
  }
  Deliver(due);
}

void WakeScheduler::NotifyLocked(const std::string& watcher, const std::string& target_key,
                                 int64_t now, std::vector<Wake>* due) {
  Slot& s = slots_[watcher];
  if (!s.fired_once || now >= s.last_fire + window_ms_) {
    SetPendingLocked(s, false);  // before last_fire moves: it names the due to remove
    s.fired_once = true;
    s.last_fire = now;
    ++sent_;
    due->push_back(Wake{watcher, "session-state:" + target_key, now});
  } else {
    SetPendingLocked(s, true);  // merged into one wake at the window's end
    s.reason = "session-state:" + target_key;
  }
}

void WakeScheduler::SetPendingLocked(Slot& s, bool pending) {
  if (s.pending == pending) return;
  const int64_t due = s.last_fire + window_ms_;
  if (pending) {
    pending_dues_.insert(due);
  } else {
    pending_dues_.erase(pending_dues_.find(due));
  }
  s.pending = pending;
}

void WakeScheduler::RunDue(int64_t now) {
  std::vector<Wake> due;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot& s = it->second;
      if (s.pending && now >= s.last_fire + window_ms_) {
        SetPendingLocked(s, false);
        s.last_fire = now;
        ++sent_;
        due.push_back(Wake{it->first, s.reason, now});
      }
      // Forget idle slots whose window is over: their next wake fires at once anyway.
      if (!s.pending && now >= s.last_fire + window_ms_) {
        it = slots_.erase(it);
      } else {
        ++it;
      }
    }
  }
  Deliver(due);
}

std::optional<int64_t> WakeScheduler::NextDue() const {
  std::lock_guard<std::mutex> l(mu_);
  if (pending_dues_.empty()) return std::nullopt;
  return *pending_dues_.begin();
}

uint64_t WakeScheduler::wakes_sent() const {
  std::lock_guard<std::mutex> l(mu_);
  return sent_;
}

void WakeScheduler::Deliver(const std::vector<Wake>& wakes) {
  if (wakes.empty()) return;
  std::vector<Subscriber> subs;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [id, s] : subscribers_) subs.push_back(s);
  }
  if (subs.empty()) return;
  for (const Wake& w : wakes) {
    for (const Subscriber& s : subs) {
      if (s.filter.empty() || s.filter == w.watcher_key) s.cb(w);
    }
  }
}

}  // namespace statewatch::engine

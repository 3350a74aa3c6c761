#include "server/wake_log.h"

namespace statewatch::server {

WakeLog::WakeLog(Engine* engine) : engine_(engine) {
  subscription_ = engine_->SubscribeWakes([this](const Wake& wake) { OnWake(wake); });
}

WakeLog::~WakeLog() { engine_->UnsubscribeWakes(subscription_); }

void WakeLog::OnWake(const Wake& wake) {
  // Called on the engine's thread that made the wake due: a map update, nothing more.
  std::lock_guard lock(mu_);
  last_[wake.watcher_key] = wake;
}

std::optional<Wake> WakeLog::Last(const std::string& watcher_key) const {
  std::lock_guard lock(mu_);
  auto it = last_.find(watcher_key);
  if (it == last_.end()) return std::nullopt;
  return it->second;
}

}  // namespace statewatch::server

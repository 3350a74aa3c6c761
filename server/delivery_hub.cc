#include "server/delivery_hub.h"

#include <vector>

namespace statewatch::server {

uint64_t DeliveryHub::Subscribe(std::string agent_id, Callback callback) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  subscribers_[id] = {std::move(agent_id), std::make_shared<const Callback>(std::move(callback))};
  return id;
}

void DeliveryHub::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  subscribers_.erase(id);
}

void DeliveryHub::Publish(const Delivery& delivery) const {
  // Copy the matching callbacks out: a callback may (un)subscribe, and a slow one must not
  // hold up Subscribe on other threads.
  std::vector<std::shared_ptr<const Callback>> targets;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, s] : subscribers_) {
      if (s.agent_id.empty() || s.agent_id == delivery.agent_id) targets.push_back(s.callback);
    }
  }
  for (const auto& callback : targets) (*callback)(delivery);
}

}  // namespace statewatch::server

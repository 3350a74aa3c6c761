// DeliveryHub: the live side of the delivery feed (GET /v1/deliveries). SessionMessaging
// publishes every delivery here once it is durable; each connected feed subscribes with its
// agent filter. The durable side is SessionTablesView::PendingDeliveries: a feed subscribes
// first and then replays the pending ones, skipping ids it already sent, so nothing falls
// between the two.
//
// Thread-safe. Callbacks run on the publishing thread with no lock held; one may still run
// once right after Unsubscribe() returns, so a callback must not own its subscriber (the
// feed holds a weak_ptr).
#ifndef STATEWATCH_SERVER_DELIVERY_HUB_H_
#define STATEWATCH_SERVER_DELIVERY_HUB_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "statewatch/session_records.h"
#include "statewatch/types.h"

namespace statewatch::server {

class DeliveryHub {
 public:
  using Callback = std::function<void(const Delivery&)>;

  // `agent_id` "" receives every agent's deliveries. Returns the subscription id (never 0).
  uint64_t Subscribe(std::string agent_id, Callback callback);
  void Unsubscribe(uint64_t id);
  // Hands `delivery` to every matching subscriber.
  void Publish(const Delivery& delivery) const;

 private:
  struct Subscriber {
    std::string agent_id;
    std::shared_ptr<const Callback> callback;
  };
  mutable std::mutex mu_;
  uint64_t next_id_ = 1;                        // guarded by mu_
  std::map<uint64_t, Subscriber> subscribers_;  // guarded by mu_
};

}  // namespace statewatch::server

#endif  // STATEWATCH_SERVER_DELIVERY_HUB_H_

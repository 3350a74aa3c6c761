// The webhook dispatcher: turns the pending notices of watchers with a webhook into
// durable outbox rows (statewatch/webhook_tables.h) and delivers them (webhooks/sender.h),
// with retries, back-off and dead letters. docs/webhooks.md is the user's view.
//
//   webhooks::Dispatcher d(engine, &engine->clock(), options, webhooks::NewHttpSender(policy));
//   SW_RETURN_IF_ERROR(d.Load());   // the outbox as the last run left it; subscribes to wakes
//   d.Start();                      // a background thread; or call RunOnce() (tests)
//
// Where notices come from: a wake (Engine::SubscribeWakes) names a watcher whose notice
// opened, and its pending notices (Engine::PendingNotices) are scanned on the next pass;
// every scan_interval_ms all registered watchers are scanned (sub-agent watchers get no
// wake, and a crash between a notice opening and its outbox row loses nothing: the notice
// is still pending, durable in the engine, and the first scan after the restart finds it).
// An enqueue is idempotent per notice (WebhookTables::Enqueue), so scans may overlap.
//
// Delivery is at least once: a row leaves the outbox only after a 2xx answer (or when it
// becomes a dead letter), so a crash mid-call repeats the call after the restart with the
// same Idempotency-Key and the same body.
//
// Thread-safe.
#ifndef STATEWATCH_WEBHOOKS_DISPATCHER_H_
#define STATEWATCH_WEBHOOKS_DISPATCHER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "statewatch/webhook_tables.h"
#include "statewatch/clock.h"
#include "statewatch/engine.h"
#include "webhooks/backoff.h"
#include "webhooks/sender.h"
#include "webhooks/webhook_options.h"

namespace statewatch::webhooks {

// The JSON body of a notice's call: {"watcher","target","text","sequence"} in that order,
// text byte for byte the notice's, sequence its `since` (L).
std::string NoticePayload(const std::string& watcher, const Notice& notice);

struct DispatcherStats {
  uint64_t delivered = 0;       // attempts answered 2xx
  uint64_t http_errors = 0;     // attempts answered outside 2xx (3xx included)
  uint64_t network_errors = 0;  // attempts that got no answer (refused, reset, timed out)
  uint64_t refused = 0;         // attempts the URL policy refused
  uint64_t dead = 0;            // deliveries that became dead letters
  uint64_t enqueued = 0;        // notices written to the outbox
  uint64_t outbox_full = 0;     // notices left pending because the outbox was full
  uint64_t outbox_depth = 0;    // rows in the outbox now
  uint64_t dead_letters = 0;    // dead letters now
  uint64_t webhooks = 0;        // registered webhooks
};

class Dispatcher {
 public:
  // None is owned; `engine` and `clock` outlive the dispatcher.
  Dispatcher(Engine* engine, const Clock* clock, WebhookOptions options,
             std::unique_ptr<Sender> sender);
  ~Dispatcher();
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Reads the outbox, the webhooks and the dead-letter count, and subscribes to wakes.
  Status Load();
  // Runs passes on a background thread until Stop (no-op when options.enabled is false).
  void Start();
  void Stop();

  // One pass: reloads the tables when Changed() was called, scans the pending notices of
  // the woken watchers (of every webhook when a full scan is due), then attempts every
  // delivery that is due by the clock, waiting for the answers. Returns how many attempts
  // it made.
  Result<int> RunOnce();
  // The tables changed behind the dispatcher's back (a webhook registered, deleted, a dead
  // letter retried or dropped): the next pass reloads them and scans every watcher.
  void Changed();

  DispatcherStats Stats() const;
  const WebhookOptions& options() const { return options_; }

 private:
  struct Entry {
    WebhookDelivery row;
    bool in_flight = false;
  };
  Status Reload();
  Status Scan(const std::vector<std::string>& watchers);
  // Makes one attempt of `row` (a copy of the outbox entry, marked in flight) and records
  // its outcome in the tables and the outbox.
  void Attempt(WebhookDelivery* row, const Webhook& hook);
  void Loop();

  Engine* const engine_;
  const Clock* const clock_;
  const WebhookOptions options_;
  const std::unique_ptr<Sender> sender_;
  WebhookTables tables_;
  Backoff backoff_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Entry> outbox_;           // by idempotency key
  std::map<std::string, Webhook> hooks_;          // by watcher
  std::map<std::string, uint64_t> marks_;         // watcher\0agent\0target -> since enqueued
  std::set<std::string> woken_;                   // watchers to scan on the next pass
  bool reload_ = true;
  int64_t next_full_scan_ms_ = 0;
  uint64_t wake_subscription_ = 0;
  bool subscribed_ = false;
  bool stop_ = false;
  std::thread thread_;

  std::atomic<uint64_t> delivered_{0}, http_errors_{0}, network_errors_{0}, refused_{0},
      dead_{0}, enqueued_{0}, outbox_full_{0}, dead_letters_{0};
};

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_DISPATCHER_H_

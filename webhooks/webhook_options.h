// The `webhooks` section of the configuration file (config/webhooks_config.h) and the
// dispatcher's settings (webhooks/dispatcher.h). docs/webhooks.md describes each key.
//
// Thread-safe: a plain value.
#ifndef STATEWATCH_WEBHOOKS_WEBHOOK_OPTIONS_H_
#define STATEWATCH_WEBHOOKS_WEBHOOK_OPTIONS_H_

#include <cstddef>
#include <cstdint>

namespace statewatch::webhooks {

struct WebhookOptions {
  // false: notices are not delivered (registrations are still kept and listed).
  bool enabled = true;
  // How long a delivery is retried, from when it was enqueued: an attempt that fails when
  // the next one would fall past this is the last, and the delivery becomes a dead letter.
  int64_t max_retry_ms = 24LL * 3600 * 1000;
  // One attempt (connect, TLS, request and answer) at most this long.
  int attempt_timeout_ms = 10000;
  // The back-off before attempt n+1 is min(max_backoff_ms, initial_backoff_ms * 2^(n-1)),
  // of which a random half (seeded by jitter_seed; 0: seeded from the time) is taken off.
  int64_t initial_backoff_ms = 1000;
  int64_t max_backoff_ms = 300000;
  uint64_t jitter_seed = 0;
  // URL policy (webhooks/url_policy.h): http:// to any host, not only loopback; targets in
  // private networks (RFC 1918, link-local, unique-local IPv6, ...).
  bool allow_http = false;
  bool allow_private_networks = false;
  // The outbox holds at most this many deliveries; while full, new notices wait in the
  // engine (they stay pending) and are enqueued by a later scan when room frees.
  std::size_t max_outbox = 10000;
  // How often the pending notices of every registered watcher are scanned (besides the
  // wakes, which sub-agent watchers do not get).
  int64_t scan_interval_ms = 5000;
  // Deliveries attempted at the same time.
  int concurrency = 4;
};

}  // namespace statewatch::webhooks

#endif  // STATEWATCH_WEBHOOKS_WEBHOOK_OPTIONS_H_

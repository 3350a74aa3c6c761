// The `webhooks` section of the configuration file (config/config_file.h):
//
//   "webhooks": {
//     "enabled": true,                  // false: nothing is delivered
//     "maxRetryMs": 86400000,           // retry a delivery this long, then dead-letter it
//     "attemptTimeoutMs": 10000,        // one attempt, connect to answer
//     "initialBackoffMs": 1000,         // back-off before the 2nd attempt, doubling ...
//     "maxBackoffMs": 300000,           // ... up to this (minus up to half: jitter)
//     "jitterSeed": 0,                  // 0: seeded from the time
//     "allowHttp": false,               // http:// to any host, not only loopback
//     "allowPrivateNetworks": false,    // RFC 1918, link-local, unique-local, ... targets
//     "maxOutbox": 10000,               // deliveries queued at most
//     "scanIntervalMs": 5000,           // rescan of every registered watcher's notices
//     "concurrency": 4                  // attempts at the same time
//   }
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_CONFIG_WEBHOOKS_CONFIG_H_
#define STATEWATCH_CONFIG_WEBHOOKS_CONFIG_H_

#include <boost/json.hpp>

#include "statewatch/status.h"
#include "webhooks/webhook_options.h"

namespace statewatch::tools {

// Applies the section's value onto `*out`. InvalidArgument naming the key path (an unknown
// key, a value of the wrong type or out of range); `*out` may then be partly changed.
Status ApplyWebhooksSection(const boost::json::value& v, webhooks::WebhookOptions* out);
// The section as `config check` prints it.
boost::json::object WebhooksSectionToJson(const webhooks::WebhookOptions& o);

}  // namespace statewatch::tools

#endif  // STATEWATCH_CONFIG_WEBHOOKS_CONFIG_H_

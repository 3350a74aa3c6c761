#include "config/webhooks_config.h"

#include <cstdint>
#include <string>

#include "config/config_readers.h"

namespace statewatch::tools {

namespace json = boost::json;

namespace {

constexpr const char* kPath = "webhooks";
constexpr int64_t kDay = 24LL * 3600 * 1000;

Status Int(const json::value& v, const std::string& path, int64_t min, int64_t max, int64_t* out) {
  auto n = config_read::Int(v, path, min, max);
  if (!n.ok()) return n.status();
  *out = *n;
  return Status::OK();
}

Status Bool(const json::value& v, const std::string& path, bool* out) {
  auto b = config_read::Bool(v, path);
  if (!b.ok()) return b.status();
  *out = *b;
  return Status::OK();
}

}  // namespace

Status ApplyWebhooksSection(const json::value& v, webhooks::WebhookOptions* o) {
  if (!v.is_object()) return config_read::Bad(kPath, "an object", v);
  static const char* const kKnown[] = {
      "enabled",      "maxRetryMs",     "attemptTimeoutMs", "initialBackoffMs",
      "maxBackoffMs", "jitterSeed",     "allowHttp",        "allowPrivateNetworks",
      "maxOutbox",    "scanIntervalMs", "concurrency"};
  std::string known;
  for (const char* k : kKnown) known += (known.empty() ? "" : ", ") + std::string(k);
  for (const auto& entry : v.as_object()) {
    const std::string key(entry.key());
    const std::string path = std::string(kPath) + "." + key;
    const json::value& value = entry.value();
    int64_t n = 0;
    Status s;
    if (key == "enabled") {
      s = Bool(value, path, &o->enabled);
    } else if (key == "allowHttp") {
      s = Bool(value, path, &o->allow_http);
    } else if (key == "allowPrivateNetworks") {
      s = Bool(value, path, &o->allow_private_networks);
    } else if (key == "maxRetryMs") {
      s = Int(value, path, 0, 30 * kDay, &o->max_retry_ms);
    } else if (key == "attemptTimeoutMs") {
      if ((s = Int(value, path, 100, 600000, &n)).ok()) o->attempt_timeout_ms = static_cast<int>(n);
    } else if (key == "initialBackoffMs") {
      s = Int(value, path, 1, kDay, &o->initial_backoff_ms);
    } else if (key == "maxBackoffMs") {
      s = Int(value, path, 1, kDay, &o->max_backoff_ms);
    } else if (key == "jitterSeed") {
      if ((s = Int(value, path, 0, INT64_MAX, &n)).ok()) o->jitter_seed = static_cast<uint64_t>(n);
    } else if (key == "maxOutbox") {
      if ((s = Int(value, path, 1, 10000000, &n)).ok()) o->max_outbox = static_cast<std::size_t>(n);
    } else if (key == "scanIntervalMs") {
      s = Int(value, path, 10, kDay, &o->scan_interval_ms);
    } else if (key == "concurrency") {
      if ((s = Int(value, path, 1, 64, &n)).ok()) o->concurrency = static_cast<int>(n);
    } else {
      return Status::InvalidArgument("unknown key " + path + " (known: " + known + ")");
    }
    SW_RETURN_IF_ERROR(s);
  }
  if (o->max_backoff_ms < o->initial_backoff_ms) {
    return Status::InvalidArgument(
        "webhooks.maxBackoffMs must not be below "
        "webhooks.initialBackoffMs (got " +
        std::to_string(o->max_backoff_ms) + " < " + std::to_string(o->initial_backoff_ms) + ")");
  }
  return Status::OK();
}

json::object WebhooksSectionToJson(const webhooks::WebhookOptions& o) {
  return json::object{{"enabled", o.enabled},
                      {"maxRetryMs", o.max_retry_ms},
                      {"attemptTimeoutMs", o.attempt_timeout_ms},
                      {"initialBackoffMs", o.initial_backoff_ms},
                      {"maxBackoffMs", o.max_backoff_ms},
                      {"jitterSeed", o.jitter_seed},
                      {"allowHttp", o.allow_http},
                      {"allowPrivateNetworks", o.allow_private_networks},
                      {"maxOutbox", o.max_outbox},
                      {"scanIntervalMs", o.scan_interval_ms},
                      {"concurrency", o.concurrency}};
}

}  // namespace statewatch::tools

// statewatch::WebhookTables — the durable state of the notice webhooks (docs/webhooks.md):
// the registered webhooks, the outbox of deliveries still to make, and the dead letters.
//
//   statewatch::WebhookTables tables(*engine);
//   auto st = tables.PutWebhook({"agent:main:main", "https://gw.example/hook", "s3cret"});
//   auto queued = tables.Enqueue(delivery);   // durable when it returns OK
//
// The rows live in the engine's `webhooks` column family (storage/key_codec.h) and every
// write goes through the engine's commit groups (engine/group_write.h), as the session
// tables' do: atomic, durable when it returns OK, replayed after a crash, and refused after
// a failed durable write until reopen.
//
// An outbox row and a dead letter are keyed by (watcher, target, since): one notice, one
// row, whatever the number of scans that find it. Beside them a mark per (watcher, target)
// holds the `since` last enqueued, so a notice still pending after its delivery is not
// enqueued again; a notice with another `since` is a new one.
//
// REQUIRES: the engine was made by Engine::Open and outlives the handle.
// Thread-safe.
#ifndef STATEWATCH_WEBHOOK_TABLES_H_
#define STATEWATCH_WEBHOOK_TABLES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

namespace engine {
class SideTableHost;
}  // namespace engine

struct Webhook {
  std::string watcher;  // canonical agent-scoped watcher key
  std::string url;
  std::string secret;
  int64_t created_at_ms = 0;  // set by PutWebhook when 0
};

// One notice for one webhook: in the outbox until delivered, then gone; a dead letter when
// its retries ran out.
struct WebhookDelivery {
  std::string watcher;
  SessionName target;
  uint64_t since = 0;       // the notice's L: the `sequence` of the payload and the key
  std::string body;         // the exact bytes POSTed, fixed when enqueued
  std::string traceparent;  // "" when the notifying event carried none
  int64_t enqueued_at_ms = 0;
  uint32_t attempts = 0;
  int64_t next_attempt_at_ms = 0;
  std::string last_error;
  int64_t dead_at_ms = 0;

  // `<watcher>:<target key>:<since>`, the Idempotency-Key header.
  std::string IdempotencyKey() const;
};

class WebhookTables {
 public:
  // REQUIRES: as above. Aborts with a message for an Engine not made by Engine::Open.
  explicit WebhookTables(Engine& engine);

  // ---- registrations ----
  // Creates or replaces the watcher's webhook. InvalidArgument (nothing written) for a
  // watcher that is not a well-formed agent-scoped key, or a URL or secret that is empty or
  // not valid UTF-8. The URL policy is the caller's (webhooks/url_policy.h). `stored`, if
  // given, receives the webhook as written (canonical watcher, createdAt), inside the write's
  // commit group, as SessionTables::UpsertSession's.
  Status PutWebhook(const Webhook& hook, Webhook* stored = nullptr);
  // Removes the watcher's webhook, its outbox rows and its marks (dead letters stay until
  // retried or dropped); false when it had no webhook.
  Result<bool> DeleteWebhook(const std::string& watcher);
  Result<std::optional<Webhook>> GetWebhook(const std::string& watcher) const;
  Result<std::vector<Webhook>> ListWebhooks() const;

  // ---- the outbox ----
  // Writes `d` to the outbox and sets the (watcher, target) mark to d.since, in one group;
  // false (nothing written) when the mark already equals d.since (that notice was enqueued
  // before) or the watcher has no webhook any more.
  Result<bool> Enqueue(const WebhookDelivery& d);
  // Every outbox row, in key order.
  Result<std::vector<WebhookDelivery>> Outbox() const;
  // Rewrites an outbox row (attempts, next attempt, last error); false when it is gone
  // (delivered, or its webhook deleted) — then nothing is written.
  Result<bool> UpdateOutbox(const WebhookDelivery& d);
  // Removes a delivered row; false when it was gone.
  Result<bool> RemoveFromOutbox(const WebhookDelivery& d);
  // Moves a row from the outbox to the dead letters (dead_at_ms = now); false when it was
  // gone from the outbox.
  Result<bool> MoveToDead(const WebhookDelivery& d);

  // ---- dead letters ----
  Result<std::vector<WebhookDelivery>> DeadLetters() const;
  // Moves the dead letter with this idempotency key back to the outbox, due now, with its
  // attempts reset (its body unchanged); false when there is none.
  Result<bool> RetryDead(const std::string& idempotency_key);
  // Removes it; false when there is none.
  Result<bool> DropDead(const std::string& idempotency_key);

 private:
  engine::SideTableHost* host_;
};

// The codecs (exposed for tests).
std::string EncodeWebhook(const Webhook& hook);
Result<Webhook> DecodeWebhook(std::string_view bytes);
std::string EncodeWebhookDelivery(const WebhookDelivery& d);
Result<WebhookDelivery> DecodeWebhookDelivery(std::string_view bytes);

}  // namespace statewatch

#endif  // STATEWATCH_WEBHOOK_TABLES_H_

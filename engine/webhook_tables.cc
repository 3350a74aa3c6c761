// WebhookTables: registrations, outbox and dead letters in the `webhooks` column family,
// written through the commit-group hook (engine/group_write.h) like the session tables.
#include "statewatch/webhook_tables.h"

#include <functional>
#include <string>

#include "engine/flatbuffer_values.h"
#include "engine/group_write.h"
#include "engine/side_table_reads.h"
#include "engine/watcher_key.h"
#include "schema/webhooks_generated.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch {

namespace fb = schema::webhooks;
using engine::GroupWrite;
using engine::fbv::Decode;
using engine::fbv::Finish;
using engine::fbv::Str;
using storage::Family;

// ---- codecs ---------------------------------------------------------------------------------

std::string EncodeWebhook(const Webhook& h) {
  flatbuffers::FlatBufferBuilder b(128 + h.url.size() + h.secret.size());
  auto watcher = b.CreateString(h.watcher), url = b.CreateString(h.url),
       secret = b.CreateString(h.secret);
  b.Finish(fb::CreateWebhook(b, watcher, url, secret, h.created_at_ms));
  return Finish(b);
}

Result<Webhook> DecodeWebhook(std::string_view bytes) {
  return Decode<fb::Webhook>(bytes, "webhook", [](const auto& f) {
    Webhook h;
    h.watcher = Str(f.watcher());
    h.url = Str(f.url());
    h.secret = Str(f.secret());
    h.created_at_ms = f.created_at();
    return h;
  });
}

std::string EncodeWebhookDelivery(const WebhookDelivery& d) {
  flatbuffers::FlatBufferBuilder b(256 + d.body.size());
  auto watcher = b.CreateString(d.watcher), agent = b.CreateString(d.target.agent_id),
       key = b.CreateString(d.target.session_key), body = b.CreateString(d.body),
       trace = b.CreateString(d.traceparent), error = b.CreateString(d.last_error);
  b.Finish(fb::CreateWebhookDelivery(b, watcher, agent, key, d.since, body, trace, d.enqueued_at_ms,
                                     d.attempts, d.next_attempt_at_ms, error, d.dead_at_ms));
  return Finish(b);
}

Result<WebhookDelivery> DecodeWebhookDelivery(std::string_view bytes) {
  // The root type of the file is Webhook; a delivery is verified as its own table.
  return Decode<fb::WebhookDelivery>(bytes, "webhook delivery", [](const auto& f) {
    WebhookDelivery d;
    d.watcher = Str(f.watcher());
    d.target = SessionName{Str(f.target_agent()), Str(f.target_key())};
    d.since = f.since();
    d.body = Str(f.body());
    d.traceparent = Str(f.traceparent());
    d.enqueued_at_ms = f.enqueued_at();
    d.attempts = f.attempts();
    d.next_attempt_at_ms = f.next_attempt_at();
    d.last_error = Str(f.last_error());
    d.dead_at_ms = f.dead_at();
    return d;
  });
}

std::string WebhookDelivery::IdempotencyKey() const {
  return watcher + ":" + target.session_key + ":" + std::to_string(since);
}

// ---- keys (the grammar is in storage/key_codec.h) -------------------------------------------

namespace {

std::string HookKey(std::string_view watcher) {
  std::string k(1, storage::kWebhookTag);
  k.append(watcher);
  return k;
}

// watcher 0x00 agent 0x00 target 0x00: the pair's part of the mark and row keys.
std::string PairPart(const std::string& watcher, const SessionName& target) {
  std::string k = watcher;
  k.push_back('\0');
  k.append(target.agent_id);
  k.push_back('\0');
  k.append(target.session_key);
  k.push_back('\0');
  return k;
}

std::string MarkKey(const WebhookDelivery& d) {
  return std::string(1, storage::kWebhookMarkTag) + PairPart(d.watcher, d.target);
}

std::string RowKey(char tag, const WebhookDelivery& d) {
  std::string k(1, tag);
  k.append(PairPart(d.watcher, d.target));
  storage::PutFixed64BE(&k, d.since);
  return k;
}

// [tag watcher 0x00, tag watcher 0x01): every row of one watcher under `tag`.
std::pair<std::string, std::string> WatcherRange(char tag, const std::string& watcher) {
  std::string begin(1, tag);
  begin.append(watcher);
  std::string end = begin;
  begin.push_back('\0');
  end.push_back('\1');
  return {begin, end};
}

std::string Be64(uint64_t v) {
  std::string s;
  storage::PutFixed64BE(&s, v);
  return s;
}

Result<std::vector<WebhookDelivery>> ListRows(const storage::Store& store, char tag) {
  return engine::ListDecoded<WebhookDelivery>(store, Family::kWebhooks, tag, DecodeWebhookDelivery);
}

}  // namespace

WebhookTables::WebhookTables(Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "WebhookTables")) {}

// ---- registrations ------------------------------------------------------------------------

Status WebhookTables::PutWebhook(const Webhook& hook, Webhook* stored) {
  auto watcher = engine::CanonicalWatcher(hook.watcher);
  if (!watcher.ok()) return watcher.status();
  if (hook.url.empty() || !IsValidUtf8(hook.url)) {
    return Status::InvalidArgument("url must be a non-empty UTF-8 string");
  }
  if (hook.secret.empty() || !IsValidUtf8(hook.secret)) {
    return Status::InvalidArgument("secret must be a non-empty UTF-8 string");
  }
  return host_->WriteInGroup([&, w = *watcher](GroupWrite& g) {
    Webhook h = hook;
    h.watcher = w;
    if (h.created_at_ms == 0) h.created_at_ms = g.now();
    g.Put(Family::kWebhooks, HookKey(w), EncodeWebhook(h));
    if (stored != nullptr) *stored = std::move(h);
    return Status::OK();
  });
}

Result<bool> WebhookTables::DeleteWebhook(const std::string& watcher) {
  auto parsed = ParseSessionKey(watcher);
  if (!parsed.ok()) return parsed.status();
  bool found = false;
  Status st = host_->WriteInGroup([&, w = parsed->canonical](GroupWrite& g) {
    auto v = g.Get(Family::kWebhooks, HookKey(w));
    if (!v.ok()) return v.status();
    found = v->has_value();
    if (!found) {
      g.ChangedNothing();
      return Status::OK();
    }
    g.Delete(Family::kWebhooks, HookKey(w));
    for (char tag : {storage::kOutboxTag, storage::kWebhookMarkTag}) {
      auto [begin, end] = WatcherRange(tag, w);
      g.DeleteRange(Family::kWebhooks, begin, end);
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return found;
}

Result<std::optional<Webhook>> WebhookTables::GetWebhook(const std::string& watcher) const {
  auto parsed = ParseSessionKey(watcher);
  if (!parsed.ok()) return parsed.status();
  return engine::ReadDecoded<Webhook>(host_->store(), Family::kWebhooks, HookKey(parsed->canonical),
                                      DecodeWebhook);
}

Result<std::vector<Webhook>> WebhookTables::ListWebhooks() const {
  return engine::ListDecoded<Webhook>(host_->store(), Family::kWebhooks, storage::kWebhookTag,
                                      DecodeWebhook);
}

// ---- the outbox -----------------------------------------------------------------------------

Result<bool> WebhookTables::Enqueue(const WebhookDelivery& d) {
  bool queued = false;
  Status st = host_->WriteInGroup([&](GroupWrite& g) {
    auto hook = g.Get(Family::kWebhooks, HookKey(d.watcher));
    if (!hook.ok()) return hook.status();
    if (!hook->has_value()) return Status::OK();
    auto mark = g.Get(Family::kWebhooks, MarkKey(d));
    if (!mark.ok()) return mark.status();
    if (mark->has_value() && **mark == Be64(d.since)) return Status::OK();
    WebhookDelivery row = d;
    if (row.enqueued_at_ms == 0) row.enqueued_at_ms = g.now();
    if (row.next_attempt_at_ms == 0) row.next_attempt_at_ms = g.now();
    g.Put(Family::kWebhooks, RowKey(storage::kOutboxTag, row), EncodeWebhookDelivery(row));
    g.Put(Family::kWebhooks, MarkKey(row), Be64(row.since));
    queued = true;
    return Status::OK();
  });
  if (!st.ok()) return st;
  return queued;
}

Result<std::vector<WebhookDelivery>> WebhookTables::Outbox() const {
  return ListRows(host_->store(), storage::kOutboxTag);
}

namespace {

using RowEdit = std::function<void(GroupWrite& g, const std::string& key)>;

// Applies `edit` to the row of `d` under `tag` (the outbox or the dead letters) in one commit
// group when the row is there, and answers whether it was; nothing is written when it is not
// (a delivery settled, retried or dropped meanwhile).
Result<bool> EditRow(engine::SideTableHost* host, char tag, const WebhookDelivery& d,
                     const RowEdit& edit) {
  bool found = false;
  Status st = host->WriteInGroup([&](GroupWrite& g) {
    const std::string key = RowKey(tag, d);
    auto v = g.Get(Family::kWebhooks, key);
    if (!v.ok()) return v.status();
    found = v->has_value();
    if (found) {
      edit(g, key);
    } else {
      g.ChangedNothing();
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return found;
}

}  // namespace

Result<bool> WebhookTables::UpdateOutbox(const WebhookDelivery& d) {
  return EditRow(host_, storage::kOutboxTag, d, [&](GroupWrite& g, const std::string& key) {
    g.Put(Family::kWebhooks, key, EncodeWebhookDelivery(d));
  });
}

Result<bool> WebhookTables::RemoveFromOutbox(const WebhookDelivery& d) {
  return EditRow(host_, storage::kOutboxTag, d,
                 [](GroupWrite& g, const std::string& key) { g.Delete(Family::kWebhooks, key); });
}

Result<bool> WebhookTables::MoveToDead(const WebhookDelivery& d) {
  return EditRow(host_, storage::kOutboxTag, d, [&](GroupWrite& g, const std::string& key) {
    WebhookDelivery dead = d;
    dead.dead_at_ms = g.now();
    g.Delete(Family::kWebhooks, key);
    g.Put(Family::kWebhooks, RowKey(storage::kDeadLetterTag, dead), EncodeWebhookDelivery(dead));
  });
}

// ---- dead letters ---------------------------------------------------------------------------

Result<std::vector<WebhookDelivery>> WebhookTables::DeadLetters() const {
  return ListRows(host_->store(), storage::kDeadLetterTag);
}

namespace {

using DeadEdit =
    std::function<void(GroupWrite& g, const std::string& key, const WebhookDelivery& dead)>;

// Applies `edit` to the dead letter whose idempotency key is `idempotency_key` as EditRow
// does, handing it the letter; false when there is none.
Result<bool> EditDead(engine::SideTableHost* host, const std::string& idempotency_key,
                      const DeadEdit& edit) {
  auto dead = ListRows(host->store(), storage::kDeadLetterTag);
  if (!dead.ok()) return dead.status();
  for (const WebhookDelivery& d : *dead) {
    if (d.IdempotencyKey() != idempotency_key) continue;
    return EditRow(host, storage::kDeadLetterTag, d,
                   [&](GroupWrite& g, const std::string& key) { edit(g, key, d); });
  }
  return false;
}

}  // namespace

Result<bool> WebhookTables::RetryDead(const std::string& idempotency_key) {
  return EditDead(host_, idempotency_key,
                  [](GroupWrite& g, const std::string& key, const WebhookDelivery& dead) {
                    WebhookDelivery row = dead;
                    row.attempts = 0;
                    row.dead_at_ms = 0;
                    row.next_attempt_at_ms = g.now();
                    row.enqueued_at_ms = g.now();  // the retry budget starts again
                    g.Delete(Family::kWebhooks, key);
                    g.Put(Family::kWebhooks, RowKey(storage::kOutboxTag, row),
                          EncodeWebhookDelivery(row));
                  });
}

Result<bool> WebhookTables::DropDead(const std::string& idempotency_key) {
  return EditDead(host_, idempotency_key,
                  [](GroupWrite& g, const std::string& key, const WebhookDelivery&) {
                    g.Delete(Family::kWebhooks, key);
                  });
}

}  // namespace statewatch

#include "webhooks/dispatcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <utility>

#include "webhooks/signature.h"

namespace statewatch::webhooks {

namespace json = boost::json;

std::string NoticePayload(const std::string& watcher, const Notice& notice) {
  json::object o;
  o["watcher"] = watcher;
  o["target"] = notice.target.session_key;
  o["text"] = notice.text;
  o["sequence"] = notice.since;
  return json::serialize(o);
}

namespace {

std::string MarkOf(const std::string& watcher, const SessionName& target) {
  std::string k = watcher;
  k.push_back('\0');
  k += target.agent_id;
  k.push_back('\0');
  k += target.session_key;
  return k;
}

// The traceparent of the event that opened the notice: the cursor's frozen N is its
// sequence. "" when it carried none or is gone (pruned): the call goes without the header.
std::string NotifyingTraceparent(const Engine& engine, const std::string& watcher,
                                 const Notice& notice) {
  auto cursor = engine.Cursor(watcher, notice.target);
  if (!cursor.ok() || !cursor->has_value() || (*cursor)->notified == 0) return "";
  const Sequence n = (*cursor)->notified;
  auto page = engine.ChangesSince(notice.target, n - 1, 1);
  if (!page.ok() || page->events.empty() || page->events[0].sequence != n) return "";
  return page->events[0].traceparent;
}

}  // namespace

Dispatcher::Dispatcher(Engine* engine, const Clock* clock, WebhookOptions options,
                       std::unique_ptr<Sender> sender)
    : engine_(engine),
      clock_(clock),
      options_(options),
      sender_(std::move(sender)),
      tables_(*engine),
      backoff_(options.initial_backoff_ms, options.max_backoff_ms, options.jitter_seed) {}

Dispatcher::~Dispatcher() { Stop(); }

Status Dispatcher::Load() {
  SW_RETURN_IF_ERROR(Reload());
  std::lock_guard<std::mutex> lock(mu_);
  if (!subscribed_) {
    wake_subscription_ = engine_->SubscribeWakes([this](const Wake& wake) {
      // Quick, and no engine call: the pass reads the notices.
      std::lock_guard<std::mutex> l(mu_);
      if (hooks_.count(wake.watcher_key) == 0) return;
      woken_.insert(wake.watcher_key);
      cv_.notify_all();
    });
    subscribed_ = true;
  }
  return Status::OK();
}

Status Dispatcher::Reload() {
  auto hooks = tables_.ListWebhooks();
  if (!hooks.ok()) return hooks.status();
  auto rows = tables_.Outbox();
  if (!rows.ok()) return rows.status();
  auto dead = tables_.DeadLetters();
  if (!dead.ok()) return dead.status();
  std::lock_guard<std::mutex> lock(mu_);
  hooks_.clear();
  for (Webhook& h : *hooks) hooks_.emplace(h.watcher, std::move(h));
  std::set<std::string> present;
  for (WebhookDelivery& row : *rows) {
    std::string key = row.IdempotencyKey();
    present.insert(key);
    auto it = outbox_.find(key);
    if (it == outbox_.end()) {
      outbox_.emplace(key, Entry{std::move(row), false});
    } else if (!it->second.in_flight) {
      it->second.row = std::move(row);
    }
  }
  for (auto it = outbox_.begin(); it != outbox_.end();) {
    it = (present.count(it->first) == 0 && !it->second.in_flight) ? outbox_.erase(it)
                                                                   : std::next(it);
  }
  marks_.clear();  // a deleted webhook took its marks with it
  dead_letters_.store(dead->size());
  next_full_scan_ms_ = 0;  // scan every watcher on this pass
  return Status::OK();
}

void Dispatcher::Changed() {
  std::lock_guard<std::mutex> lock(mu_);
  reload_ = true;
  cv_.notify_all();
}

Status Dispatcher::Scan(const std::vector<std::string>& watchers) {
  for (const std::string& watcher : watchers) {
    auto notices = engine_->PendingNotices(watcher);
    if (!notices.ok()) return notices.status();
    for (const Notice& n : *notices) {
      const std::string mark = MarkOf(watcher, n.target);
      {
        std::lock_guard<std::mutex> lock(mu_);
        auto m = marks_.find(mark);
        if (m != marks_.end() && m->second == n.since) continue;
        if (outbox_.size() >= options_.max_outbox) {
          // Left pending in the engine: a later scan enqueues it once room frees.
          outbox_full_.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
      }
      WebhookDelivery row;
      row.watcher = watcher;
      row.target = n.target;
      row.since = n.since;
      row.body = NoticePayload(watcher, n);
      row.traceparent = NotifyingTraceparent(*engine_, watcher, n);
      auto queued = tables_.Enqueue(row);
      if (!queued.ok()) return queued.status();
      std::lock_guard<std::mutex> lock(mu_);
      marks_[mark] = n.since;
      if (*queued) {
        enqueued_.fetch_add(1, std::memory_order_relaxed);
        const int64_t now = clock_->NowMs();
        row.enqueued_at_ms = now;  // as Enqueue stored them (the group's clock)
        row.next_attempt_at_ms = now;
        std::string key = row.IdempotencyKey();
        outbox_.emplace(std::move(key), Entry{std::move(row), false});
      }
    }
  }
  return Status::OK();
}

Result<int> Dispatcher::RunOnce() {
  bool reload = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(reload, reload_);
  }
  if (reload) SW_RETURN_IF_ERROR(Reload());
  const int64_t now = clock_->NowMs();
  std::vector<std::string> watchers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (now >= next_full_scan_ms_) {
      for (const auto& [watcher, hook] : hooks_) watchers.push_back(watcher);
      next_full_scan_ms_ = now + options_.scan_interval_ms;
    } else {
      for (const std::string& w : woken_) {
        if (hooks_.count(w) != 0) watchers.push_back(w);
      }
    }
    woken_.clear();
  }
  SW_RETURN_IF_ERROR(Scan(watchers));

  std::vector<std::pair<WebhookDelivery, Webhook>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, entry] : outbox_) {
      if (entry.in_flight || entry.row.next_attempt_at_ms > now) continue;
      auto hook = hooks_.find(entry.row.watcher);
      entry.in_flight = true;
      due.emplace_back(entry.row, hook != hooks_.end() ? hook->second : Webhook{});
    }
  }
  const std::size_t workers =
      std::min<std::size_t>(due.size(), static_cast<std::size_t>(std::max(1, options_.concurrency)));
  if (workers <= 1) {
    for (auto& [row, hook] : due) Attempt(&row, hook);
  } else {
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> threads;
    threads.reserve(workers);
    for (std::size_t i = 0; i < workers; ++i) {
      threads.emplace_back([&] {
        for (std::size_t j = next++; j < due.size(); j = next++) Attempt(&due[j].first, due[j].second);
      });
    }
    for (std::thread& t : threads) t.join();
  }
  return static_cast<int>(due.size());
}

void Dispatcher::Attempt(WebhookDelivery* row, const Webhook& hook) {
  const std::string key = row->IdempotencyKey();
  AttemptResult r;
  if (hook.url.empty()) {
    r.refused = true;
    r.error = "no webhook is registered for watcher " + row->watcher;
  } else {
    webhooks::Attempt a;
    a.url = hook.url;
    a.body = row->body;
    a.timeout_ms = options_.attempt_timeout_ms;
    a.headers.emplace_back("Idempotency-Key", key);
    a.headers.emplace_back(kSignatureHeader,
                           SignatureHeader(hook.secret, clock_->NowMs() / 1000, row->body));
    if (!row->traceparent.empty()) a.headers.emplace_back("traceparent", row->traceparent);
    r = sender_->Send(a);
  }
  const int64_t now = clock_->NowMs();
  bool erase = false;
  Status written;
  if (r.delivered) {
    delivered_.fetch_add(1, std::memory_order_relaxed);
    auto removed = tables_.RemoveFromOutbox(*row);
    written = removed.status();
    erase = removed.ok();
  } else {
    (r.refused ? refused_ : r.status != 0 ? http_errors_ : network_errors_)
        .fetch_add(1, std::memory_order_relaxed);
    row->attempts += 1;
    row->last_error = r.error;
    bool dead = r.refused;
    if (!dead) {
      int64_t next = now + backoff_.Delay(row->attempts);
      if (next > row->enqueued_at_ms + options_.max_retry_ms) {
        dead = true;
      } else {
        row->next_attempt_at_ms = next;
      }
    }
    if (dead) {
      auto moved = tables_.MoveToDead(*row);
      written = moved.status();
      erase = moved.ok();
      if (moved.ok() && *moved) {
        dead_.fetch_add(1, std::memory_order_relaxed);
        dead_letters_.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("event=webhook_dead key=\"{}\" attempts={} error=\"{}\"", key,
                     row->attempts, row->last_error);
      }
    } else {
      auto updated = tables_.UpdateOutbox(*row);
      written = updated.status();
      erase = updated.ok() && !*updated;  // gone: its webhook was deleted meanwhile
    }
  }
  if (!written.ok()) {
    spdlog::warn("event=webhook_outbox_write_failed key=\"{}\" error=\"{}\"", key,
                 written.ToString());
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = outbox_.find(key);
  if (it == outbox_.end()) return;
  if (erase) {
    outbox_.erase(it);
  } else {
    it->second.row = *row;
    it->second.in_flight = false;
  }
}

void Dispatcher::Loop() {
  for (;;) {
    auto ran = RunOnce();
    if (!ran.ok()) {
      spdlog::warn("event=webhook_pass_failed error=\"{}\"", ran.status().ToString());
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_) return;
    int64_t now = clock_->NowMs();
    int64_t until = next_full_scan_ms_;
    for (const auto& [key, entry] : outbox_) {
      if (!entry.in_flight) until = std::min(until, entry.row.next_attempt_at_ms);
    }
    // Bounded: a manual clock moves without notice, and a failed write is retried.
    int64_t wait = std::clamp<int64_t>(until - now, 10, 1000);
    cv_.wait_for(lock, std::chrono::milliseconds(wait),
                 [this] { return stop_ || reload_ || !woken_.empty(); });
    if (stop_) return;
  }
}

void Dispatcher::Start() {
  if (!options_.enabled) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void Dispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  uint64_t subscription = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!subscribed_) return;
    subscribed_ = false;
    subscription = wake_subscription_;
  }
  // Outside mu_: the wake callback takes it.
  engine_->UnsubscribeWakes(subscription);
}

DispatcherStats Dispatcher::Stats() const {
  DispatcherStats s;
  s.delivered = delivered_.load();
  s.http_errors = http_errors_.load();
  s.network_errors = network_errors_.load();
  s.refused = refused_.load();
  s.dead = dead_.load();
  s.enqueued = enqueued_.load();
  s.outbox_full = outbox_full_.load();
  s.dead_letters = dead_letters_.load();
  std::lock_guard<std::mutex> lock(mu_);
  s.outbox_depth = outbox_.size();
  s.webhooks = hooks_.size();
  return s;
}

}  // namespace statewatch::webhooks

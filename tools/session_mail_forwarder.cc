// SessionMailForwarder: the outbox rows of this partition to their destinations' owners
// (tools/session_mail_forwarder.h, docs/cluster-internals.md, "Session tools across partitions").
#include "tools/session_mail_forwarder.h"

#include <algorithm>
#include <chrono>
#include <set>
#include <vector>

#include "base/hex.h"
#include "codecs/json_fields.h"

namespace statewatch::tools {
namespace json = boost::json;

// ---- the wire form ---------------------------------------------------------------------------

json::object MailToJson(const SessionMail& mail) {
  const Delivery& d = mail.delivery;
  json::object delivery{{"agentId", d.agent_id},
                        {"sessionKey", d.session_key},
                        {"type", d.type},
                        {"runId", d.run_id},
                        {"text", d.text},
                        {"sourceSessionKey", d.source_session_key},
                        {"sourceTool", d.source_tool},
                        {"sourceChannel", d.source_channel},
                        {"createdAt", d.created_at_ms},
                        {"traceparent", d.traceparent}};
  json::object o{{"key", mail.key},
                 {"partition", mail.partition},
                 {"watcher", mail.watcher},
                 {"delivery", std::move(delivery)}};
  if (mail.watcher_listing != 0) o["watcherListing"] = mail.watcher_listing;
  if (!mail.kind.empty() || mail.delivery.spawn || !mail.delivery.route.empty()) {
    // What the fields above leave out (a spawn's child, event, copies; a task's route and
    // options): the whole record, as the outbox keeps it.
    o["kind"] = mail.kind;
    o["encoded"] = hex::Encode(EncodeSessionMail(mail));
  }
  return o;
}

namespace {

Status ReadString(const json::object& o, std::string_view field, std::string* out) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || !v->is_string()) {
    return Status::InvalidArgument("session mail: " + std::string(field) +
                                   " must be a string (got " +
                                   (v ? DescribeJson(*v) : std::string("nothing")) + ")");
  }
  *out = std::string(v->as_string());
  return Status::OK();
}

Status ReadInt(const json::object& o, std::string_view field, int64_t* out) {
  const json::value* v = o.if_contains(field);
  auto n = v ? IntegerValue(*v, /*allow_strings=*/false) : std::nullopt;
  if (!n) {
    return Status::InvalidArgument("session mail: " + std::string(field) +
                                   " must be an integer (got " +
                                   (v ? DescribeJson(*v) : std::string("nothing")) + ")");
  }
  *out = *n;
  return Status::OK();
}

}  // namespace

Result<SessionMail> MailFromJson(const json::value& body) {
  if (!body.is_object()) return Status::InvalidArgument("session mail must be a JSON object");
  const json::object& o = body.as_object();
  SessionMail m;
  SW_RETURN_IF_ERROR(ReadString(o, "key", &m.key));
  if (o.contains("encoded")) {
    std::string encoded;
    SW_RETURN_IF_ERROR(ReadString(o, "encoded", &encoded));
    auto bytes = hex::Decode(encoded);
    if (!bytes) return Status::InvalidArgument("session mail " + m.key + ": encoded is not hex");
    auto whole = DecodeSessionMail(*bytes);
    if (!whole.ok()) {
      return Status::InvalidArgument("session mail " + m.key + ": " + whole.status().message());
    }
    if (whole->key != m.key) {
      return Status::InvalidArgument("session mail " + m.key + ": encoded names another key (" +
                                     whole->key + ")");
    }
    SW_RETURN_IF_ERROR(CheckSessionMail(*whole));
    return whole;
  }
  int64_t partition = 0;
  SW_RETURN_IF_ERROR(ReadInt(o, "partition", &partition));
  if (partition < 0 || partition > UINT32_MAX) {
    return Status::InvalidArgument("session mail: partition out of range (got " +
                                   std::to_string(partition) + ")");
  }
  m.partition = static_cast<uint32_t>(partition);
  SW_RETURN_IF_ERROR(ReadString(o, "watcher", &m.watcher));
  if (o.contains("watcherListing")) {  // absent in mail from a build before clear fences
    int64_t listing = 0;
    SW_RETURN_IF_ERROR(ReadInt(o, "watcherListing", &listing));
    if (listing < 0) {
      return Status::InvalidArgument("session mail: watcherListing must not be negative (got " +
                                     std::to_string(listing) + ")");
    }
    m.watcher_listing = static_cast<uint64_t>(listing);
  }
  const json::value* dv = o.if_contains("delivery");
  if (dv == nullptr || !dv->is_object()) {
    return Status::InvalidArgument("session mail: delivery must be an object");
  }
  const json::object& d = dv->as_object();
  Delivery& out = m.delivery;
  SW_RETURN_IF_ERROR(ReadString(d, "agentId", &out.agent_id));
  SW_RETURN_IF_ERROR(ReadString(d, "sessionKey", &out.session_key));
  SW_RETURN_IF_ERROR(ReadString(d, "type", &out.type));
  SW_RETURN_IF_ERROR(ReadString(d, "runId", &out.run_id));
  SW_RETURN_IF_ERROR(ReadString(d, "text", &out.text));
  SW_RETURN_IF_ERROR(ReadString(d, "sourceSessionKey", &out.source_session_key));
  SW_RETURN_IF_ERROR(ReadString(d, "sourceTool", &out.source_tool));
  SW_RETURN_IF_ERROR(ReadString(d, "sourceChannel", &out.source_channel));
  SW_RETURN_IF_ERROR(ReadInt(d, "createdAt", &out.created_at_ms));
  SW_RETURN_IF_ERROR(ReadString(d, "traceparent", &out.traceparent));
  if (m.key.empty() || out.session_key.empty() || out.agent_id.empty()) {
    return Status::InvalidArgument("session mail: key, agentId and sessionKey must not be empty");
  }
  return m;
}

// ---- the forwarder ---------------------------------------------------------------------------

SessionMailForwarder::SessionMailForwarder(Engine* engine, MailSender send,
                                           MailForwarderOptions options)
    : engine_(engine), send_(std::move(send)), options_(options) {}

SessionMailForwarder::~SessionMailForwarder() { Stop(); }

Result<SessionMailForwarder::PumpResult> SessionMailForwarder::Pump(int64_t now_ms) {
  std::lock_guard pump(pump_mu_);
  SessionMailTables tables(*engine_);
  auto outbox = tables.Outbox();
  if (!outbox.ok()) return outbox.status();
  PumpResult result;
  std::set<std::string> present;
  // The runs with a row still unacknowledged in this pass: their later rows wait for it.
  std::set<std::string> held;
  for (const SessionMail& mail : *outbox) {
    present.insert(mail.key);
    std::string run = mail.key.substr(0, mail.key.find(':'));
    if (held.count(run)) continue;  // sent once the row before it is acknowledged
    auto it = retries_.find(mail.key);
    if (it != retries_.end() && it->second.due_ms > now_ms) {
      result.next_due_ms = std::min(result.next_due_ms.value_or(it->second.due_ms),
                                    it->second.due_ms);
      held.insert(run);
      continue;
    }
    Status sent = send_(mail);
    if (sent.ok()) {
      auto removed = tables.Remove(mail.key);
      if (!removed.ok()) return removed.status();
      retries_.erase(mail.key);
      present.erase(mail.key);
      ++result.sent;
      continue;
    }
    Retry& r = retries_[mail.key];
    r.backoff_ms = r.backoff_ms == 0 ? options_.first_retry_ms
                                     : std::min(r.backoff_ms * 2, options_.max_retry_ms);
    r.due_ms = now_ms + r.backoff_ms;
    result.next_due_ms = std::min(result.next_due_ms.value_or(r.due_ms), r.due_ms);
    held.insert(run);
    ++result.failed;
  }
  // Rows gone from the outbox (removed by an earlier owner's pass) take their state along.
  std::erase_if(retries_, [&](const auto& entry) { return !present.count(entry.first); });
  return result;
}

void SessionMailForwarder::Start() {
  std::lock_guard lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  woken_ = true;  // the first pass: every row is due (the rescan after a takeover)
  thread_ = std::thread([this] { Loop(); });
}

void SessionMailForwarder::Wake() {
  {
    std::lock_guard lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void SessionMailForwarder::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void SessionMailForwarder::Loop() {
  using Clock = std::chrono::steady_clock;
  auto now_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               Clock::now().time_since_epoch())
        .count();
  };
  std::optional<int64_t> next_due;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      auto ready = [&] { return stop_ || woken_; };
      if (next_due) {
        cv_.wait_until(lock, Clock::time_point(std::chrono::milliseconds(*next_due)), ready);
      } else {
        cv_.wait(lock, ready);
      }
      if (stop_) return;
      woken_ = false;
    }
    auto pumped = Pump(now_ms());
    // An outbox that cannot be read (a failed engine) is tried again after the longest
    // back-off; the rows stay where they are.
    next_due = pumped.ok() ? pumped->next_due_ms
                           : std::optional<int64_t>(now_ms() + options_.max_retry_ms);
  }
}

}  // namespace statewatch::tools

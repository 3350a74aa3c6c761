// SessionMailTables: the outbox and the applied marks of the session tools' mail between
// partitions (include/statewatch/session_mail.h, docs/cluster.md §15.8). Rows in the
// webhooks column family under the tags 'Q' (outbox) and 'K' (marks), written through the
// engine's commit-group hook (engine/group_write.h).
#include "statewatch/session_mail.h"

#include "engine/event_validation.h"
#include "engine/flatbuffer_values.h"
#include "engine/group_write.h"
#include "engine/table_codecs.h"
#include "schema/session_mail_generated.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch {

namespace fb = schema::session_mail;
using engine::GroupCounter;
using engine::GroupWrite;
using storage::Family;

namespace {

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::string OutboxKey(std::string_view key) {
  std::string k(1, storage::kSessionMailTag);
  k.append(key);
  return k;
}

std::string MarkKey(std::string_view key) {
  std::string k(1, storage::kSessionMailMarkTag);
  k.append(key);
  return k;
}

std::string EncodeMail(const SessionMail& m) {
  std::string delivery = engine::EncodeDelivery(m.delivery);
  flatbuffers::FlatBufferBuilder b(256 + delivery.size());
  auto key = b.CreateString(m.key);
  auto bytes = b.CreateVector(reinterpret_cast<const uint8_t*>(delivery.data()), delivery.size());
  auto watcher = b.CreateString(m.watcher);
  b.Finish(fb::CreateMail(b, key, m.partition, bytes, watcher, m.created_at_ms));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Result<SessionMail> DecodeMail(std::string_view bytes) {
  engine::fbv::AlignedBytes aligned(bytes);
  auto f = engine::fbv::Verified<fb::Mail>(aligned, "session mail");
  if (!f.ok()) return f.status();
  SessionMail m;
  m.key = Str((*f)->key());
  m.partition = (*f)->partition();
  m.watcher = Str((*f)->watcher());
  m.created_at_ms = (*f)->created_at();
  const auto* d = (*f)->delivery();
  auto delivery = engine::DecodeDelivery(
      d ? std::string_view(reinterpret_cast<const char*>(d->data()), d->size())
        : std::string_view());
  if (!delivery.ok()) return delivery.status();
  m.delivery = std::move(*delivery);
  return m;
}

std::string EncodeMark(int64_t applied_at_ms) {
  flatbuffers::FlatBufferBuilder b(32);
  b.Finish(fb::CreateMailMark(b, applied_at_ms));
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Status CheckMail(const SessionMail& m) {
  if (m.key.empty() || !IsValidUtf8(m.key)) {
    return Status::InvalidArgument("session mail key must be a non-empty UTF-8 string");
  }
  if (m.delivery.session_key.empty() || m.delivery.agent_id.empty()) {
    return Status::InvalidArgument("session mail " + m.key + " names no session");
  }
  return Status::OK();
}

}  // namespace

SessionMailTables::SessionMailTables(Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "SessionMailTables")) {}

Status SessionMailTables::Post(const SessionMail& mail, const RunRecord* run) {
  SW_RETURN_IF_ERROR(CheckMail(mail));
  if (run != nullptr && run->run_id.empty()) {
    return Status::InvalidArgument("runId must not be empty");
  }
  return host_->WriteInGroup([&](GroupWrite& g) {
    SessionMail m = mail;
    if (m.created_at_ms == 0) m.created_at_ms = g.now();
    m.delivery.id = 0;
    g.Put(Family::kWebhooks, OutboxKey(m.key), EncodeMail(m));
    if (run != nullptr) {
      g.Put(Family::kRuns, storage::RunKey(run->run_id), engine::EncodeRun(*run));
    }
    return Status::OK();
  });
}

Result<std::vector<SessionMail>> SessionMailTables::Outbox() const {
  std::vector<SessionMail> out;
  std::string begin(1, storage::kSessionMailTag);
  std::string end(1, storage::kSessionMailTag + 1);
  auto it = host_->store().NewIterator(Family::kWebhooks, begin, end);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto m = DecodeMail(it->value());
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

Result<bool> SessionMailTables::Remove(const std::string& key) {
  bool found = false;
  Status st = host_->WriteInGroup([&](GroupWrite& g) {
    auto v = g.Get(Family::kWebhooks, OutboxKey(key));
    if (!v.ok()) return v.status();
    found = v->has_value();
    if (found) g.Delete(Family::kWebhooks, OutboxKey(key));
    return Status::OK();
  });
  if (!st.ok()) return st;
  return found;
}

Result<std::optional<Delivery>> SessionMailTables::Apply(const SessionMail& mail,
                                                         TranscriptMessage message) {
  SW_RETURN_IF_ERROR(CheckMail(mail));
  auto name = ResolveSession(mail.delivery.session_key, mail.delivery.agent_id);
  if (!name.ok()) return name.status();
  SW_RETURN_IF_ERROR(host_->CheckOwned(*name));
  if (!IsValidUtf8(message.role) || !IsValidUtf8(message.content_json)) {
    return Status::InvalidArgument("session mail " + mail.key + ": message is not valid UTF-8");
  }
  std::optional<Delivery> applied;
  Status st = host_->WriteInGroup([&, n = *name](GroupWrite& g) {
    auto mark = g.Get(Family::kWebhooks, MarkKey(mail.key));
    if (!mark.ok()) return mark.status();
    if (mark->has_value()) return Status::OK();
    SessionRef ref = g.Intern(n);
    message.index = g.NextId(GroupCounter::kMessageIndex);
    if (message.timestamp_ms == 0) message.timestamp_ms = g.now();
    g.Put(Family::kTranscripts, storage::TranscriptKey(ref, message.index),
          engine::EncodeTranscriptMessage(message));
    Delivery d = mail.delivery;
    d.id = g.NextId(GroupCounter::kDeliveryId);
    if (d.created_at_ms == 0) d.created_at_ms = g.now();
    g.Put(Family::kDeliveries, storage::DeliveryKey(d.id), engine::EncodeDelivery(d));
    g.Put(Family::kWebhooks, MarkKey(mail.key), EncodeMark(g.now()));
    applied = std::move(d);
    return Status::OK();
  });
  if (!st.ok()) return st;
  return applied;
}

Result<bool> SessionMailTables::Applied(const std::string& key) const {
  auto v = host_->store().Get(Family::kWebhooks, MarkKey(key));
  if (!v.ok()) return v.status();
  return v->has_value();
}

}  // namespace statewatch

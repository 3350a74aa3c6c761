// SessionMailTables: the outbox and the applied marks of the session tools' mail between
// partitions (include/statewatch/session_mail.h, docs/cluster-internals.md,
// "Session tools across partitions"). Rows in the webhooks column family under the tags 'Q'
// (outbox) and 'K' (marks), written through the engine's commit-group hook (engine/group_write.h).
#include "statewatch/session_mail.h"

#include "engine/event_validation.h"
#include "engine/flatbuffer_values.h"
#include "engine/group_write.h"
#include "engine/side_table_reads.h"
#include "engine/side_table_writes.h"
#include "engine/table_codecs.h"
#include "schema/session_mail_generated.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch {

namespace fb = schema::session_mail;
using engine::GroupWrite;
using engine::fbv::Bytes;
using engine::fbv::Str;
using storage::Family;

namespace {

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

flatbuffers::Offset<fb::MailEvent> EncodeEvent(flatbuffers::FlatBufferBuilder& b,
                                               const EventInput& e) {
  std::vector<flatbuffers::Offset<flatbuffers::String>> watchers;
  for (const std::string& w : e.watchers) watchers.push_back(b.CreateString(w));
  auto session_key = b.CreateString(e.session_key);
  auto agent_id = b.CreateString(e.agent_id);
  auto kind = b.CreateString(e.kind);
  auto actor_id = b.CreateString(e.actor_id);
  auto run_id = b.CreateString(e.run_id);
  auto summary = b.CreateString(e.summary);
  auto payload = b.CreateString(e.payload_json);
  auto dedupe = b.CreateString(e.dedupe_key);
  auto trace = b.CreateString(e.traceparent);
  auto ws = b.CreateVector(watchers);
  return fb::CreateMailEvent(b, session_key, agent_id, kind, static_cast<int8_t>(e.actor_type),
                             actor_id, run_id, summary, payload, dedupe, trace, ws,
                             e.occurred_at_ms.value_or(0));
}

Result<EventInput> DecodeEvent(const auto& f) {
  EventInput e;
  e.session_key = Str(f.session_key());
  e.agent_id = Str(f.agent_id());
  e.kind = Str(f.kind());
  if (f.actor_type() < 0 || f.actor_type() > static_cast<int8_t>(ActorType::kSystem)) {
    return Status::Corruption("session mail event: actor type " +
                              std::to_string(f.actor_type()) + " is not one of the listed");
  }
  e.actor_type = static_cast<ActorType>(f.actor_type());
  e.actor_id = Str(f.actor_id());
  e.run_id = Str(f.run_id());
  e.summary = Str(f.summary());
  e.payload_json = Str(f.payload_json());
  e.dedupe_key = Str(f.dedupe_key());
  e.traceparent = Str(f.traceparent());
  if (f.watchers() != nullptr) {
    for (const flatbuffers::String* w : *f.watchers()) e.watchers.push_back(Str(w));
  }
  if (f.occurred_at() != 0) e.occurred_at_ms = f.occurred_at();
  return e;
}

}  // namespace

std::string EncodeSessionMail(const SessionMail& m) {
  std::string delivery = engine::EncodeDelivery(m.delivery);
  flatbuffers::FlatBufferBuilder b(256 + delivery.size());
  auto key = b.CreateString(m.key);
  auto bytes = b.CreateVector(reinterpret_cast<const uint8_t*>(delivery.data()), delivery.size());
  auto watcher = b.CreateString(m.watcher);
  flatbuffers::Offset<flatbuffers::String> kind = 0;
  flatbuffers::Offset<flatbuffers::Vector<uint8_t>> child = 0;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Encoded>>> transcript = 0;
  flatbuffers::Offset<fb::MailEvent> event = 0;
  if (!m.kind.empty()) kind = b.CreateString(m.kind);
  if (m.child) {
    std::string c = engine::EncodeSessionRecord(*m.child);
    child = b.CreateVector(reinterpret_cast<const uint8_t*>(c.data()), c.size());
  }
  if (!m.transcript.empty()) {
    std::vector<flatbuffers::Offset<fb::Encoded>> copies;
    for (const TranscriptMessage& t : m.transcript) {
      std::string e = engine::EncodeTranscriptMessage(t);
      copies.push_back(fb::CreateEncoded(
          b, b.CreateVector(reinterpret_cast<const uint8_t*>(e.data()), e.size())));
    }
    transcript = b.CreateVector(copies);
  }
  if (m.event) event = EncodeEvent(b, *m.event);
  b.Finish(fb::CreateMail(b, key, m.partition, bytes, watcher, m.created_at_ms, kind, child,
                          transcript, event, m.watcher_listing));
  return engine::fbv::Finish(b);
}

Result<SessionMail> DecodeSessionMail(std::string_view bytes) {
  return engine::fbv::Decode<fb::Mail>(
      bytes, "session mail", [](const auto& f) -> Result<SessionMail> {
        SessionMail m;
        m.key = Str(f.key());
        m.partition = f.partition();
        m.watcher = Str(f.watcher());
        m.watcher_listing = f.watcher_listing();
        m.created_at_ms = f.created_at();
        m.kind = Str(f.kind());
        auto delivery = engine::DecodeDelivery(Bytes(f.delivery()));
        if (!delivery.ok()) return delivery.status();
        m.delivery = std::move(*delivery);
        if (f.child() != nullptr) {
          auto child = engine::DecodeSessionRecord(Bytes(f.child()));
          if (!child.ok()) return child.status();
          m.child = std::move(*child);
        }
        if (f.transcript() != nullptr) {
          for (const fb::Encoded* e : *f.transcript()) {
            auto t = engine::DecodeTranscriptMessage(Bytes(e->bytes()));
            if (!t.ok()) return t.status();
            m.transcript.push_back(std::move(*t));
          }
        }
        if (f.event() != nullptr) {
          auto e = DecodeEvent(*f.event());
          if (!e.ok()) return e.status();
          m.event = std::move(*e);
        }
        return m;
      });
}

namespace {

std::string EncodeMark(int64_t applied_at_ms) {
  flatbuffers::FlatBufferBuilder b(32);
  b.Finish(fb::CreateMailMark(b, applied_at_ms));
  return engine::fbv::Finish(b);
}

}  // namespace

Status CheckSessionMail(const SessionMail& m) {
  if (m.key.empty() || !IsValidUtf8(m.key)) {
    return Status::InvalidArgument("session mail key must be a non-empty UTF-8 string");
  }
  if (m.delivery.session_key.empty() || m.delivery.agent_id.empty()) {
    return Status::InvalidArgument("session mail " + m.key + " names no session");
  }
  if (!m.kind.empty() && m.kind != kMailKindSpawn && m.kind != kMailKindEvent) {
    return Status::InvalidArgument("session mail " + m.key + ": unknown kind \"" + m.kind +
                                   "\" (expected \"\", \"spawn\" or \"event\")");
  }
  if (m.kind == kMailKindSpawn && !m.child) {
    return Status::InvalidArgument("session mail " + m.key + ": a spawn carries no child");
  }
  if (!m.kind.empty() && !m.event) {
    return Status::InvalidArgument("session mail " + m.key + ": a " + m.kind +
                                   " mail carries no event");
  }
  if (m.event && m.event->dedupe_key.empty()) {
    return Status::InvalidArgument("session mail " + m.key + ": its event has no dedupe key");
  }
  return Status::OK();
}

SessionMailTables::SessionMailTables(Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "SessionMailTables")) {}

Status SessionMailTables::Post(const SessionMail& mail, const RunRecord* run) {
  SW_RETURN_IF_ERROR(CheckSessionMail(mail));
  if (run != nullptr && run->run_id.empty()) {
    return Status::InvalidArgument("runId must not be empty");
  }
  return host_->WriteInGroup([&](GroupWrite& g) {
    SessionMail m = mail;
    if (m.created_at_ms == 0) m.created_at_ms = g.now();
    m.delivery.id = 0;
    g.Put(Family::kWebhooks, OutboxKey(m.key), EncodeSessionMail(m));
    if (run != nullptr) {
      g.Put(Family::kRuns, storage::RunKey(run->run_id), engine::EncodeRun(*run));
    }
    return Status::OK();
  });
}

Result<std::vector<Delivery>> SessionMailTables::Commit(HomeGroup group) {
  for (const SessionMail& m : group.mails) SW_RETURN_IF_ERROR(CheckSessionMail(m));
  for (const RunRecord& r : group.runs) {
    if (r.run_id.empty()) return Status::InvalidArgument("runId must not be empty");
  }
  std::vector<SessionName> names;
  for (const auto& [d, message] : group.deliveries) {
    auto name = ResolveSession(d.session_key, d.agent_id);
    if (!name.ok()) return name.status();
    SW_RETURN_IF_ERROR(host_->CheckOwned(*name));
    if (!engine::IsValidUtf8Message(message)) {
      return Status::InvalidArgument("delivery to " + d.session_key +
                                     ": its message is not valid UTF-8");
    }
    names.push_back(*name);
  }
  std::vector<Delivery> out;
  Status st = host_->WriteInGroup([&](GroupWrite& g) {
    out.clear();
    for (const RunRecord& r : group.runs) {
      g.Put(Family::kRuns, storage::RunKey(r.run_id), engine::EncodeRun(r));
    }
    for (SessionMail m : group.mails) {
      if (m.created_at_ms == 0) m.created_at_ms = g.now();
      m.delivery.id = 0;
      g.Put(Family::kWebhooks, OutboxKey(m.key), EncodeSessionMail(m));
    }
    for (std::size_t i = 0; i < group.deliveries.size(); ++i) {
      // The transcript first, then the delivery (as SessionMessaging's Enqueue orders them).
      engine::PutTranscriptMessage(g, names[i], group.deliveries[i].second);
      out.push_back(engine::PutDelivery(g, group.deliveries[i].first));
    }
    if (group.built) group.built(out);
    return Status::OK();
  });
  if (!st.ok()) return st;
  return out;
}

Result<std::vector<SessionMail>> SessionMailTables::Outbox() const {
  return engine::ListDecoded<SessionMail>(host_->store(), Family::kWebhooks,
                                          storage::kSessionMailTag, DecodeSessionMail);
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

Result<bool> SessionMailTables::Apply(const SessionMail& mail,
                                     std::vector<TranscriptMessage> messages,
                                     std::optional<Delivery>* delivery) {
  SW_RETURN_IF_ERROR(CheckSessionMail(mail));
  auto name = ResolveSession(mail.delivery.session_key, mail.delivery.agent_id);
  if (!name.ok()) return name.status();
  SW_RETURN_IF_ERROR(host_->CheckOwned(*name));
  for (const TranscriptMessage& message : messages) {
    if (!engine::IsValidUtf8Message(message)) {
      return Status::InvalidArgument("session mail " + mail.key + ": message is not valid UTF-8");
    }
  }
  bool applied = false;
  std::optional<Delivery> enqueued;
  Status st = host_->WriteInGroup([&, n = *name](GroupWrite& g) {
    auto mark = g.Get(Family::kWebhooks, MarkKey(mail.key));
    if (!mark.ok()) return mark.status();
    if (mark->has_value()) return Status::OK();
    for (const TranscriptMessage& message : messages) {
      engine::PutTranscriptMessage(g, n, message);
    }
    if (mail.kind != kMailKindEvent) enqueued = engine::PutDelivery(g, mail.delivery);
    g.Put(Family::kWebhooks, MarkKey(mail.key), EncodeMark(g.now()));
    applied = true;
    return Status::OK();
  });
  if (!st.ok()) return st;
  if (delivery != nullptr) *delivery = std::move(enqueued);
  return applied;
}

Result<bool> SessionMailTables::Applied(const std::string& key) const {
  auto v = host_->store().Get(Family::kWebhooks, MarkKey(key));
  if (!v.ok()) return v.status();
  return v->has_value();
}

}  // namespace statewatch

#include "engine/records.h"

#include <cstdint>
#include <cstring>

#include "engine/flatbuffer_values.h"
#include "schema/statewatch_generated.h"

namespace statewatch::engine {

namespace fb = statewatch::schema;
using fbv::Decode;
using fbv::Finish;
using fbv::OptStr;

namespace {

void BuildEvent(flatbuffers::FlatBufferBuilder& b, const Event& e, const EventFoldFields& fold) {
  auto key = b.CreateString(e.session_key);
  auto agent = b.CreateString(e.agent_id);
  auto sid = OptStr(b, e.session_id);
  auto kind = b.CreateString(e.kind);
  auto actor = OptStr(b, e.actor_id);
  auto run = OptStr(b, e.run_id);
  auto summary = b.CreateString(e.summary);
  auto payload = OptStr(b, e.payload_json);
  auto dedupe = OptStr(b, e.dedupe_key);
  auto traceparent = OptStr(b, e.traceparent);
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> watchers = 0;
  if (!fold.watchers.empty()) {
    // SessionRef is a standard-layout wrapper of one uint64_t.
    static_assert(sizeof(SessionRef) == sizeof(uint64_t));
    watchers = b.CreateVector(reinterpret_cast<const uint64_t*>(fold.watchers.data()),
                              fold.watchers.size());
  }
  fb::EventBuilder eb(b);
  eb.add_sequence(e.sequence);
  eb.add_session_key(key);
  eb.add_agent_id(agent);
  eb.add_session_id(sid);
  eb.add_kind(kind);
  eb.add_actor_type(static_cast<fb::ActorType>(e.actor_type));
  eb.add_actor_id(actor);
  eb.add_run_id(run);
  eb.add_occurred_at(e.occurred_at_ms);
  eb.add_summary(summary);
  eb.add_payload_json(payload);
  eb.add_dedupe_key(dedupe);
  eb.add_fold_flags(static_cast<uint8_t>((fold.notifies ? 1 : 0) | (fold.seeds_cursor ? 2 : 0)));
  eb.add_actor_ref(fold.actor.value);
  eb.add_watcher_refs(watchers);
  eb.add_traceparent(traceparent);
  b.Finish(eb.Finish());
}

}  // namespace

std::string EncodeEvent(const Event& e, const EventFoldFields& fold) {
  flatbuffers::FlatBufferBuilder b(256 + e.summary.size() + e.payload_json.size());
  BuildEvent(b, e, fold);
  return Finish(b);
}

struct EventEncoder::Rep {
  flatbuffers::FlatBufferBuilder builder{1024};
};
EventEncoder::EventEncoder() : rep_(std::make_unique<Rep>()) {}
EventEncoder::~EventEncoder() = default;
std::string_view EventEncoder::Encode(const Event& e, const EventFoldFields& fold) {
  auto& b = rep_->builder;
  b.Clear();
  BuildEvent(b, e, fold);
  return fbv::Written(b);
}

namespace {

void FillFold(const fb::Event* f, StoredEventFold* out) {
  out->sequence = f->sequence();
  out->notifies = (f->fold_flags() & 1) != 0;
  out->seeds_cursor = (f->fold_flags() & 2) != 0;
  out->actor = SessionRef{f->actor_ref()};
  out->watchers.clear();
  if (f->watcher_refs()) {
    const auto& refs = *f->watcher_refs();
    for (flatbuffers::uoffset_t i = 0; i < refs.size(); ++i) {
      out->watchers.push_back(SessionRef{fbv::U64At(refs, i)});
    }
  }
  out->occurred_at = f->occurred_at();
  if (f->dedupe_key()) {
    out->dedupe_key.assign(f->dedupe_key()->data(), f->dedupe_key()->size());
  } else {
    out->dedupe_key.clear();
  }
}

Status CheckActorType(const fb::Event* f) {
  int at = static_cast<int>(f->actor_type());
  if (at < static_cast<int>(ActorType::kHuman) || at > static_cast<int>(ActorType::kSystem)) {
    return Status::Corruption("event " + std::to_string(f->sequence()) +
                              " has an unknown actor type " + std::to_string(at));
  }
  return Status::OK();
}

}  // namespace

Status DecodeEventFold(std::string_view bytes, StoredEventFold* out) {
  return Decode<fb::Event>(bytes, "event", [out](const auto& f) {
    FillFold(&f, out);
    return Status::OK();
  });
}

Status VerifyEventRow(std::string_view bytes, StoredEventFold* fold) {
  return Decode<fb::Event>(bytes, "event", [fold](const auto& f) {
    SW_RETURN_IF_ERROR(CheckActorType(&f));
    if (fold != nullptr) FillFold(&f, fold);
    return Status::OK();
  });
}

namespace {

void AssignStr(const flatbuffers::String* s, std::string* out) {
  if (s) {
    out->assign(s->data(), s->size());
  } else {
    out->clear();
  }
}

// The fields of a verified or trusted event table.
Status FillEvent(const fb::Event* f, Event* e) {
  e->sequence = f->sequence();
  SW_RETURN_IF_ERROR(CheckActorType(f));
  e->actor_type = static_cast<ActorType>(f->actor_type());
  AssignStr(f->session_key(), &e->session_key);
  AssignStr(f->agent_id(), &e->agent_id);
  AssignStr(f->session_id(), &e->session_id);
  AssignStr(f->kind(), &e->kind);
  AssignStr(f->actor_id(), &e->actor_id);
  AssignStr(f->run_id(), &e->run_id);
  e->occurred_at_ms = f->occurred_at();
  AssignStr(f->summary(), &e->summary);
  AssignStr(f->payload_json(), &e->payload_json);
  AssignStr(f->dedupe_key(), &e->dedupe_key);
  AssignStr(f->traceparent(), &e->traceparent);
  return Status::OK();
}

}  // namespace

namespace {

// A string field as a view, or an error when it reaches outside [begin, end).
bool ViewOf(const flatbuffers::String* s, const uint8_t* begin, const uint8_t* end,
            std::string_view* out) {
  if (s == nullptr) {
    *out = {};
    return true;
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(s);
  // The length prefix, then the bytes.
  if (p < begin || p + sizeof(flatbuffers::uoffset_t) > end ||
      s->size() > static_cast<std::size_t>(end - p) - sizeof(flatbuffers::uoffset_t)) {
    return false;
  }
  *out = std::string_view(s->c_str(), s->size());
  return true;
}

}  // namespace

Status DecodeEventView(std::string_view bytes, EventView* out) {
  const uint8_t* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* end = data + bytes.size();
  if (bytes.size() < 8 || flatbuffers::ReadScalar<flatbuffers::uoffset_t>(data) >= bytes.size()) {
    return Status::Corruption("event record is malformed (" + std::to_string(bytes.size()) +
                              " bytes)");
  }
  const fb::Event* f = flatbuffers::GetRoot<fb::Event>(data);
  out->sequence = f->sequence();
  SW_RETURN_IF_ERROR(CheckActorType(f));
  out->actor_type = static_cast<ActorType>(f->actor_type());
  out->occurred_at_ms = f->occurred_at();
  bool inside = ViewOf(f->session_key(), data, end, &out->session_key) &&
                ViewOf(f->agent_id(), data, end, &out->agent_id) &&
                ViewOf(f->session_id(), data, end, &out->session_id) &&
                ViewOf(f->kind(), data, end, &out->kind) &&
                ViewOf(f->actor_id(), data, end, &out->actor_id) &&
                ViewOf(f->run_id(), data, end, &out->run_id) &&
                ViewOf(f->summary(), data, end, &out->summary) &&
                ViewOf(f->payload_json(), data, end, &out->payload_json) &&
                ViewOf(f->dedupe_key(), data, end, &out->dedupe_key) &&
                ViewOf(f->traceparent(), data, end, &out->traceparent);
  if (!inside) {
    return Status::Corruption("event " + std::to_string(out->sequence) +
                              " has a string outside its " + std::to_string(bytes.size()) +
                              "-byte record");
  }
  return Status::OK();
}

Result<Event> DecodeEvent(std::string_view bytes) {
  return Decode<fb::Event>(bytes, "event", [](const auto& f) -> Result<Event> {
    Event e;
    SW_RETURN_IF_ERROR(FillEvent(&f, &e));
    return e;
  });
}

std::string EncodeHead(const projections::HeadState& h) {
  flatbuffers::FlatBufferBuilder b(96);
  b.Finish(fb::CreateHead(b, h.head, h.watermark, h.updated_at, h.material_latest,
                          h.material_latest_actor, h.material_latest_at, h.material_other,
                          h.material_other_at));
  return Finish(b);
}

Result<projections::HeadState> DecodeHead(std::string_view bytes) {
  return Decode<fb::Head>(bytes, "head", [](const auto& f) {
    return projections::HeadState{f.head(),
                                  f.watermark(),
                                  f.updated_at(),
                                  f.material_latest(),
                                  f.material_latest_actor(),
                                  f.material_latest_at(),
                                  f.material_other(),
                                  f.material_other_at()};
  });
}

std::string EncodeCursor(const projections::CursorRec& c) {
  flatbuffers::FlatBufferBuilder b(64);
  b.Finish(fb::CreateCursor(b, c.last_seen, c.notified, c.material, c.updated_at));
  return Finish(b);
}

struct CursorEncoder::Rep {
  flatbuffers::FlatBufferBuilder builder{64};
};
CursorEncoder::CursorEncoder() : rep_(std::make_unique<Rep>()) {}
CursorEncoder::~CursorEncoder() = default;
std::string_view CursorEncoder::Encode(const projections::CursorRec& c) {
  auto& b = rep_->builder;
  b.Clear();
  b.Finish(fb::CreateCursor(b, c.last_seen, c.notified, c.material, c.updated_at));
  return fbv::Written(b);
}

Result<projections::CursorRec> DecodeCursor(std::string_view bytes) {
  return Decode<fb::Cursor>(bytes, "cursor", [](const auto& f) {
    return projections::CursorRec{f.last_seen(), f.notified(), f.material(), f.updated_at()};
  });
}

std::string EncodeSessionName(const SessionName& n) {
  flatbuffers::FlatBufferBuilder b(64 + n.session_key.size());
  auto agent = b.CreateString(n.agent_id);
  auto key = b.CreateString(n.session_key);
  b.Finish(fb::CreateSessionName(b, agent, key));
  return Finish(b);
}

Result<SessionName> DecodeSessionName(std::string_view bytes) {
  return Decode<fb::SessionName>(bytes, "session name", [](const auto& f) {
    return SessionName{fbv::Str(f.agent_id()), fbv::Str(f.session_key())};
  });
}

// ---- log ------------------------------------------------------------------------------------

namespace {

flatbuffers::Offset<flatbuffers::Vector<uint64_t>> Refs(flatbuffers::FlatBufferBuilder& b,
                                                        const std::vector<SessionRef>& refs) {
  static_assert(sizeof(SessionRef) == sizeof(uint64_t));
  return b.CreateVector(reinterpret_cast<const uint64_t*>(refs.data()), refs.size());
}

void Refs(const flatbuffers::Vector<uint64_t>* v, std::vector<SessionRef>* out) {
  out->clear();
  if (!v) return;
  out->reserve(v->size());
  for (flatbuffers::uoffset_t i = 0; i < v->size(); ++i) {
    out->push_back(SessionRef{fbv::U64At(*v, i)});
  }
}

flatbuffers::Offset<void> EncodeBody(flatbuffers::FlatBufferBuilder& b,
                                     const projections::LogOp& r, fb::LogBody* type) {
  using T = projections::LogOp::Type;
  switch (r.type) {
    case T::kRegister:
      *type = fb::LogBody::RegisterRecord;
      return fb::CreateRegisterRecord(b, r.session.value, r.target.value).Union();
    case T::kAck:
      *type = fb::LogBody::AckRecord;
      return fb::CreateAckRecord(b, r.session.value, Refs(b, r.refs)).Union();
    case T::kReset:
      *type = fb::LogBody::ResetRecord;
      return fb::CreateResetRecord(b, r.session.value).Union();
    case T::kDelete:
      *type = fb::LogBody::DeleteRecord;
      return fb::CreateDeleteRecord(b, r.session.value).Union();
    case T::kPrune: {
      *type = fb::LogBody::PruneRecord;
      std::vector<fb::WatermarkRaise> raises;
      raises.reserve(r.raises.size());
      for (const auto& x : r.raises) raises.emplace_back(x.session.value, x.sequence);
      return fb::CreatePruneRecord(b, r.cursor_cutoff, b.CreateVectorOfStructs(raises),
                                   r.row_cap_mark)
          .Union();
    }
    case T::kSweep:
      *type = fb::LogBody::SweepRecord;
      return fb::CreateSweepRecord(b).Union();
    case T::kUnregister:
      *type = fb::LogBody::UnregisterRecord;
      return fb::CreateUnregisterRecord(b, r.session.value, r.target.value).Union();
  }
  *type = fb::LogBody::NONE;
  return 0;
}

Status DecodeOp(const fb::LogRecord* f, projections::LogOp* r) {
  using T = projections::LogOp::Type;
  r->sequence = f->sequence();
  // The verifier accepts a union whose value is absent: a tag without a body would be
  // dereferenced below (found by fuzz/input_fuzz.cc).
  if (f->body_type() != fb::LogBody::NONE && f->body() == nullptr) {
    return Status::Corruption("log record " + std::to_string(r->sequence) + " names body type " +
                              std::to_string(static_cast<int>(f->body_type())) +
                              " but holds no body");
  }
  switch (f->body_type()) {
    case fb::LogBody::RegisterRecord:
      r->type = T::kRegister;
      r->session = SessionRef{f->body_as_RegisterRecord()->watcher()};
      r->target = SessionRef{f->body_as_RegisterRecord()->target()};
      return Status::OK();
    case fb::LogBody::AckRecord:
      r->type = T::kAck;
      r->session = SessionRef{f->body_as_AckRecord()->watcher()};
      Refs(f->body_as_AckRecord()->targets(), &r->refs);
      return Status::OK();
    case fb::LogBody::ResetRecord:
      r->type = T::kReset;
      r->session = SessionRef{f->body_as_ResetRecord()->watcher()};
      return Status::OK();
    case fb::LogBody::DeleteRecord:
      r->type = T::kDelete;
      r->session = SessionRef{f->body_as_DeleteRecord()->session()};
      return Status::OK();
    case fb::LogBody::PruneRecord: {
      auto* p = f->body_as_PruneRecord();
      r->type = T::kPrune;
      r->cursor_cutoff = p->cursor_cutoff();
      r->row_cap_mark = p->row_cap_mark();
      if (p->watermarks()) {
        for (const auto* w : *p->watermarks()) {
          r->raises.push_back({SessionRef{w->session()}, w->sequence()});
        }
      }
      return Status::OK();
    }
    case fb::LogBody::SweepRecord:
      r->type = T::kSweep;
      return Status::OK();
    case fb::LogBody::UnregisterRecord:
      r->type = T::kUnregister;
      r->session = SessionRef{f->body_as_UnregisterRecord()->watcher()};
      r->target = SessionRef{f->body_as_UnregisterRecord()->target()};
      return Status::OK();
    default:
      break;
  }
  return Status::Corruption("log op at sequence " + std::to_string(r->sequence) +
                            " has an unknown body (type " +
                            std::to_string(static_cast<int>(f->body_type())) + ")");
}

}  // namespace

void GroupRec::Clear() {
  first_sequence = 0;
  committed_at = 0;
  events.clear();
  ops.clear();
  last_ref = last_delivery_id = last_message_index = 0;
  rows_removed = 0;
}

struct GroupEncoder::Rep {
  flatbuffers::FlatBufferBuilder builder{256};
  std::vector<flatbuffers::Offset<fb::LogRecord>> ops;
};
GroupEncoder::GroupEncoder() : rep_(std::make_unique<Rep>()) {}
GroupEncoder::~GroupEncoder() = default;

std::string_view GroupEncoder::Encode(const GroupRec& g, bool with_first_sequence) {
  auto& b = rep_->builder;
  b.Clear();
  flatbuffers::Offset<flatbuffers::Vector<uint64_t>> events = 0;
  if (!g.events.empty()) events = Refs(b, g.events);
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::LogRecord>>> ops = 0;
  if (!g.ops.empty()) {
    rep_->ops.clear();
    for (const projections::LogOp& op : g.ops) {
      fb::LogBody type = fb::LogBody::NONE;
      auto body = EncodeBody(b, op, &type);
      rep_->ops.push_back(fb::CreateLogRecord(b, op.sequence, /*committed_at=*/0, type, body));
    }
    ops = b.CreateVector(rep_->ops);
  }
  // first_sequence is left out on a single node: replay knows it (the previous group's last
  // + 1), and every byte of this record is in every commit's WAL write.
  b.Finish(fb::CreateGroupRecord(b, events, g.committed_at, ops,
                                 with_first_sequence ? g.first_sequence : 0, g.last_ref,
                                 g.last_delivery_id, g.last_message_index, g.rows_removed));
  return fbv::Written(b);
}

Status DecodeGroup(std::string_view bytes, GroupRec* out) {
  return Decode<fb::GroupRecord>(bytes, "commit group", [out](const auto& f) {
    out->Clear();
    out->first_sequence = f.first_sequence();
    out->committed_at = f.committed_at();
    Refs(f.events(), &out->events);
    if (f.ops()) {
      out->ops.resize(f.ops()->size());
      for (flatbuffers::uoffset_t i = 0; i < f.ops()->size(); ++i) {
        SW_RETURN_IF_ERROR(DecodeOp(f.ops()->Get(i), &out->ops[i]));
      }
    }
    out->last_ref = f.last_ref();
    out->last_delivery_id = f.last_delivery_id();
    out->last_message_index = f.last_message_index();
    out->rows_removed = f.rows_removed();
    return Status::OK();
  });
}

std::string EncodeMeta(const MetaRec& m) {
  flatbuffers::FlatBufferBuilder b(96);
  b.Finish(fb::CreateMeta(b, m.format_version, m.last_sequence, m.last_ref, m.journal_rows,
                          m.checkpoint_sequence, m.last_prune_at,
                          m.log_records_since_checkpoint, m.last_delivery_id,
                          m.last_message_index, m.row_cap_mark, m.applied_position,
                          m.partition, m.partitions));
  return Finish(b);
}

Result<MetaRec> DecodeMeta(std::string_view bytes) {
  return Decode<fb::Meta>(bytes, "meta", [](const auto& f) {
    return MetaRec{f.format_version(),
                   f.last_sequence(),
                   f.last_ref(),
                   f.journal_rows(),
                   f.checkpoint_sequence(),
                   f.last_prune_at(),
                   f.log_records_since_checkpoint(),
                   f.last_delivery_id(),
                   f.last_message_index(),
                   f.row_cap_mark(),
                   f.applied_position(),
                   f.partition(),
                   f.partitions()};
  });
}

Result<MetaRec> DecodeStoredMeta(const std::optional<std::string>& stored) {
  if (!stored.has_value()) return MetaRec{};
  return DecodeMeta(*stored);
}

}  // namespace statewatch::engine

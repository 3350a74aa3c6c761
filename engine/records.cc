#include "engine/records.h"

#include <cstdint>
#include <cstring>

#include "schema/statewatch_generated.h"

namespace statewatch::engine {

namespace fb = statewatch::schema;

namespace {

// RocksDB hands out values at any address; FlatBuffers reads scalars in place and needs
// them aligned. Values that are not 8-byte aligned are copied into an aligned buffer first.
class AlignedBytes {
 public:
  explicit AlignedBytes(std::string_view bytes) : size_(bytes.size()) {
    // An empty value needs no copy (memcpy into an empty vector's null data is undefined).
    if (bytes.empty() ||
        reinterpret_cast<std::uintptr_t>(bytes.data()) % alignof(uint64_t) == 0) {
      data_ = bytes.data();
      return;
    }
    copy_.resize((bytes.size() + 7) / 8);
    std::memcpy(copy_.data(), bytes.data(), bytes.size());
    data_ = reinterpret_cast<const char*>(copy_.data());
  }
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(data_); }
  std::size_t size() const { return size_; }

 private:
  const char* data_ = nullptr;
  std::size_t size_ = 0;
  std::vector<uint64_t> copy_;
};

// Verifies `bytes` (aligned through `holder`) as a T. The result points into `holder`.
template <typename T>
Result<const T*> Verified(const AlignedBytes& holder, const char* what) {
  flatbuffers::Verifier v(holder.data(), holder.size());
  if (!v.VerifyBuffer<T>(nullptr)) {
    return Status::Corruption(std::string(what) + " record failed verification (" +
                              std::to_string(holder.size()) + " bytes)");
  }
  return flatbuffers::GetRoot<T>(holder.data());
}

std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::string Finish(flatbuffers::FlatBufferBuilder& b) {
  return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

// Optional strings are omitted from the buffer when empty.
flatbuffers::Offset<flatbuffers::String> OptStr(flatbuffers::FlatBufferBuilder& b,
                                                const std::string& s) {
  return s.empty() ? 0 : b.CreateString(s);
}

}  // namespace

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
  return std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Status DecodeEventFold(std::string_view bytes, StoredEventFold* out) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::Event>(aligned, "event");
  if (!r.ok()) return r.status();
  const fb::Event* f = *r;
  out->sequence = f->sequence();
  out->notifies = (f->fold_flags() & 1) != 0;
  out->seeds_cursor = (f->fold_flags() & 2) != 0;
  out->actor = SessionRef{f->actor_ref()};
  out->watchers.clear();
  if (f->watcher_refs()) {
    for (uint64_t w : *f->watcher_refs()) out->watchers.push_back(SessionRef{w});
  }
  out->occurred_at = f->occurred_at();
  if (f->dedupe_key()) {
    out->dedupe_key.assign(f->dedupe_key()->data(), f->dedupe_key()->size());
  } else {
    out->dedupe_key.clear();
  }
  return Status::OK();
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
  int at = static_cast<int>(f->actor_type());
  if (at < static_cast<int>(ActorType::kHuman) || at > static_cast<int>(ActorType::kSystem)) {
    return Status::Corruption("event " + std::to_string(e->sequence) +
                              " has an unknown actor type " + std::to_string(at));
  }
  e->actor_type = static_cast<ActorType>(at);
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
  int at = static_cast<int>(f->actor_type());
  if (at < static_cast<int>(ActorType::kHuman) || at > static_cast<int>(ActorType::kSystem)) {
    return Status::Corruption("event " + std::to_string(out->sequence) +
                              " has an unknown actor type " + std::to_string(at));
  }
  out->actor_type = static_cast<ActorType>(at);
  out->occurred_at_ms = f->occurred_at();
  bool inside = ViewOf(f->session_key(), data, end, &out->session_key) &&
                ViewOf(f->agent_id(), data, end, &out->agent_id) &&
                ViewOf(f->session_id(), data, end, &out->session_id) &&
                ViewOf(f->kind(), data, end, &out->kind) &&
                ViewOf(f->actor_id(), data, end, &out->actor_id) &&
                ViewOf(f->run_id(), data, end, &out->run_id) &&
                ViewOf(f->summary(), data, end, &out->summary) &&
                ViewOf(f->payload_json(), data, end, &out->payload_json) &&
                ViewOf(f->dedupe_key(), data, end, &out->dedupe_key);
  if (!inside) {
    return Status::Corruption("event " + std::to_string(out->sequence) +
                              " has a string outside its " + std::to_string(bytes.size()) +
                              "-byte record");
  }
  return Status::OK();
}

Result<Event> DecodeEvent(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::Event>(aligned, "event");
  if (!r.ok()) return r.status();
  Event e;
  SW_RETURN_IF_ERROR(FillEvent(*r, &e));
  return e;
}

std::string EncodeHead(const projections::HeadState& h) {
  flatbuffers::FlatBufferBuilder b(96);
  b.Finish(fb::CreateHead(b, h.head, h.watermark, h.updated_at, h.material_latest,
                          h.material_latest_actor, h.material_latest_at, h.material_other,
                          h.material_other_at));
  return Finish(b);
}

Result<projections::HeadState> DecodeHead(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::Head>(aligned, "head");
  if (!r.ok()) return r.status();
  const fb::Head* f = *r;
  return projections::HeadState{f->head(),
                                f->watermark(),
                                f->updated_at(),
                                f->material_latest(),
                                f->material_latest_actor(),
                                f->material_latest_at(),
                                f->material_other(),
                                f->material_other_at()};
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
  return std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Result<projections::CursorRec> DecodeCursor(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::Cursor>(aligned, "cursor");
  if (!r.ok()) return r.status();
  const fb::Cursor* f = *r;
  return projections::CursorRec{f->last_seen(), f->notified(), f->material(), f->updated_at()};
}

std::string EncodeSessionName(const SessionName& n) {
  flatbuffers::FlatBufferBuilder b(64 + n.session_key.size());
  auto agent = b.CreateString(n.agent_id);
  auto key = b.CreateString(n.session_key);
  b.Finish(fb::CreateSessionName(b, agent, key));
  return Finish(b);
}

Result<SessionName> DecodeSessionName(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::SessionName>(aligned, "session name");
  if (!r.ok()) return r.status();
  return SessionName{Str((*r)->agent_id()), Str((*r)->session_key())};
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
  for (uint64_t x : *v) out->push_back(SessionRef{x});
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
}

struct GroupEncoder::Rep {
  flatbuffers::FlatBufferBuilder builder{256};
  std::vector<flatbuffers::Offset<fb::LogRecord>> ops;
};
GroupEncoder::GroupEncoder() : rep_(std::make_unique<Rep>()) {}
GroupEncoder::~GroupEncoder() = default;

std::string_view GroupEncoder::Encode(const GroupRec& g) {
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
  // first_sequence is left out: replay knows it (the previous group's last + 1), and every
  // byte of this record is in every commit's WAL write.
  b.Finish(fb::CreateGroupRecord(b, events, g.committed_at, ops, /*first_sequence=*/0,
                                 g.last_ref, g.last_delivery_id, g.last_message_index));
  return std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
}

Status DecodeGroup(std::string_view bytes, GroupRec* out) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::GroupRecord>(aligned, "commit group");
  if (!v.ok()) return v.status();
  const fb::GroupRecord* f = *v;
  out->Clear();
  out->first_sequence = f->first_sequence();
  out->committed_at = f->committed_at();
  Refs(f->events(), &out->events);
  if (f->ops()) {
    out->ops.resize(f->ops()->size());
    for (flatbuffers::uoffset_t i = 0; i < f->ops()->size(); ++i) {
      SW_RETURN_IF_ERROR(DecodeOp(f->ops()->Get(i), &out->ops[i]));
    }
  }
  out->last_ref = f->last_ref();
  out->last_delivery_id = f->last_delivery_id();
  out->last_message_index = f->last_message_index();
  return Status::OK();
}

std::string EncodeMeta(const MetaRec& m) {
  flatbuffers::FlatBufferBuilder b(96);
  b.Finish(fb::CreateMeta(b, m.format_version, m.last_sequence, m.last_ref, m.journal_rows,
                          m.checkpoint_sequence, m.last_prune_at,
                          m.log_records_since_checkpoint, m.last_delivery_id,
                          m.last_message_index, m.row_cap_mark, m.applied_position));
  return Finish(b);
}

Result<MetaRec> DecodeMeta(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto r = Verified<fb::Meta>(aligned, "meta");
  if (!r.ok()) return r.status();
  const fb::Meta* f = *r;
  return MetaRec{f->format_version(),      f->last_sequence(),
                 f->last_ref(),            f->journal_rows(),
                 f->checkpoint_sequence(), f->last_prune_at(),
                 f->log_records_since_checkpoint(), f->last_delivery_id(),
                 f->last_message_index(), f->row_cap_mark(), f->applied_position()};
}

}  // namespace statewatch::engine

namespace statewatch::engine {

namespace {

template <typename T>
void Overlay(const std::optional<T>& from, std::optional<T>* to) {
  if (from) *to = from;
}

std::optional<std::string> OptString(const flatbuffers::String* s) {
  return s ? std::optional<std::string>(s->str()) : std::nullopt;
}

flatbuffers::Offset<flatbuffers::String> MaybeString(flatbuffers::FlatBufferBuilder& b,
                                                     const std::optional<std::string>& v) {
  return v ? b.CreateString(*v) : 0;
}

flatbuffers::Offset<fb::DeliveryRoute> EncodeRoute(flatbuffers::FlatBufferBuilder& b,
                                                   const DeliveryRoute& r) {
  if (r.empty()) return 0;
  return fb::CreateDeliveryRoute(b, OptStr(b, r.channel), OptStr(b, r.to), OptStr(b, r.account_id),
                                 OptStr(b, r.thread_id));
}

DeliveryRoute DecodeRoute(const fb::DeliveryRoute* f) {
  if (f == nullptr) return {};
  return DeliveryRoute{Str(f->channel()), Str(f->to()), Str(f->account_id()), Str(f->thread_id())};
}

flatbuffers::Offset<fb::SpawnOptions> EncodeSpawn(flatbuffers::FlatBufferBuilder& b,
                                                  const std::optional<SpawnOptions>& o) {
  if (!o) return 0;
  return fb::CreateSpawnOptions(b, b.CreateString(o->runtime), OptStr(b, o->model),
                                OptStr(b, o->thinking), o->thread, b.CreateString(o->sandbox),
                                b.CreateString(o->context), OptStr(b, o->label), o->depth);
}

std::optional<SpawnOptions> DecodeSpawn(const fb::SpawnOptions* f) {
  if (f == nullptr) return std::nullopt;
  SpawnOptions o;
  if (f->runtime()) o.runtime = f->runtime()->str();
  o.model = Str(f->model());
  o.thinking = Str(f->thinking());
  o.thread = f->thread();
  if (f->sandbox()) o.sandbox = f->sandbox()->str();
  if (f->context()) o.context = f->context()->str();
  o.label = Str(f->label());
  o.depth = f->depth();
  return o;
}

flatbuffers::Offset<fb::SendState> EncodeSend(flatbuffers::FlatBufferBuilder& b,
                                              const std::optional<SendRunState>& s) {
  if (!s) return 0;
  return fb::CreateSendState(b, static_cast<int8_t>(s->phase), s->turn, s->max_turns,
                             s->next_is_requester, s->timeout_ms, s->deadline_ms, s->watch,
                             s->watched, OptStr(b, s->last_reply), OptStr(b, s->outcome));
}

std::optional<SendRunState> DecodeSend(const fb::SendState* f) {
  if (f == nullptr) return std::nullopt;
  SendRunState s;
  int8_t phase = f->phase();
  s.phase = phase == 1   ? SendRunState::Phase::kPingPong
            : phase == 2 ? SendRunState::Phase::kDone
                         : SendRunState::Phase::kAwaiting;
  s.turn = f->turn();
  s.max_turns = f->max_turns();
  s.next_is_requester = f->next_is_requester();
  s.timeout_ms = f->timeout_ms();
  s.deadline_ms = f->deadline_at();
  s.watch = f->watch();
  s.watched = f->watched();
  s.last_reply = Str(f->last_reply());
  s.outcome = Str(f->outcome());
  return s;
}

// The optional counters of the registry: value + has_* flag (FlatBuffers scalars have no
// "absent").
struct Counters {
  int64_t value[6] = {};
  bool has[6] = {};
  explicit Counters(const SessionRecord& r) {
    const std::optional<int64_t>* all[6] = {&r.context_tokens,    &r.total_tokens,
                                            &r.input_tokens,      &r.output_tokens,
                                            &r.cache_read_tokens, &r.cache_write_tokens};
    for (int i = 0; i < 6; ++i) {
      value[i] = all[i]->value_or(0);
      has[i] = all[i]->has_value();
    }
  }
};

}  // namespace

std::string EncodeSessionRecord(const SessionRecord& r) {
  flatbuffers::FlatBufferBuilder b(256);
  auto agent = b.CreateString(r.name.agent_id);
  auto key = b.CreateString(r.name.session_key);
  auto sid = MaybeString(b, r.session_id), kind = MaybeString(b, r.kind),
       channel = MaybeString(b, r.channel), label = MaybeString(b, r.label),
       model = MaybeString(b, r.model), parent = MaybeString(b, r.parent_session_key),
       extra = MaybeString(b, r.extra_json), display = MaybeString(b, r.display_name),
       override_model = MaybeString(b, r.model_override), thinking = MaybeString(b, r.thinking),
       runtime = MaybeString(b, r.runtime), last_channel = MaybeString(b, r.last_channel),
       last_to = MaybeString(b, r.last_to), last_account = MaybeString(b, r.last_account_id),
       last_thread = MaybeString(b, r.last_thread_id);
  Counters c(r);
  fb::SessionRecordBuilder sb(b);
  sb.add_agent_id(agent);
  sb.add_session_key(key);
  sb.add_session_id(sid);
  sb.add_kind(kind);
  sb.add_channel(channel);
  sb.add_label(label);
  sb.add_model(model);
  sb.add_parent_session_key(parent);
  sb.add_context_tokens(c.value[0]);
  sb.add_has_context_tokens(c.has[0]);
  sb.add_total_tokens(c.value[1]);
  sb.add_has_total_tokens(c.has[1]);
  sb.add_sandboxed(r.sandboxed.value_or(false));
  sb.add_created_at(r.created_at_ms.value_or(0));
  sb.add_updated_at(r.updated_at_ms.value_or(0));
  sb.add_extra_json(extra);
  sb.add_display_name(display);
  sb.add_model_override(override_model);
  sb.add_thinking(thinking);
  sb.add_runtime(runtime);
  sb.add_input_tokens(c.value[2]);
  sb.add_has_input_tokens(c.has[2]);
  sb.add_output_tokens(c.value[3]);
  sb.add_has_output_tokens(c.has[3]);
  sb.add_cache_read_tokens(c.value[4]);
  sb.add_has_cache_read_tokens(c.has[4]);
  sb.add_cache_write_tokens(c.value[5]);
  sb.add_has_cache_write_tokens(c.has[5]);
  sb.add_last_channel(last_channel);
  sb.add_last_to(last_to);
  sb.add_last_account_id(last_account);
  sb.add_last_thread_id(last_thread);
  b.Finish(sb.Finish());
  return Finish(b);
}

Result<SessionRecord> DecodeSessionRecord(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::SessionRecord>(aligned, "session registry");
  if (!v.ok()) return v.status();
  const fb::SessionRecord* f = *v;
  SessionRecord r;
  r.name = SessionName{Str(f->agent_id()), Str(f->session_key())};
  r.session_id = OptString(f->session_id());
  r.kind = OptString(f->kind());
  r.channel = OptString(f->channel());
  r.label = OptString(f->label());
  r.model = OptString(f->model());
  r.parent_session_key = OptString(f->parent_session_key());
  if (f->has_context_tokens()) r.context_tokens = f->context_tokens();
  if (f->has_total_tokens()) r.total_tokens = f->total_tokens();
  r.sandboxed = f->sandboxed();  // a flag: cleared reads as false
  r.created_at_ms = f->created_at();
  r.updated_at_ms = f->updated_at();
  r.extra_json = OptString(f->extra_json());
  r.display_name = OptString(f->display_name());
  r.model_override = OptString(f->model_override());
  r.thinking = OptString(f->thinking());
  r.runtime = OptString(f->runtime());
  if (f->has_input_tokens()) r.input_tokens = f->input_tokens();
  if (f->has_output_tokens()) r.output_tokens = f->output_tokens();
  if (f->has_cache_read_tokens()) r.cache_read_tokens = f->cache_read_tokens();
  if (f->has_cache_write_tokens()) r.cache_write_tokens = f->cache_write_tokens();
  r.last_channel = OptString(f->last_channel());
  r.last_to = OptString(f->last_to());
  r.last_account_id = OptString(f->last_account_id());
  r.last_thread_id = OptString(f->last_thread_id());
  return r;
}

namespace {

// Which member each clearable SessionField names.
struct StringField {
  SessionField field;
  std::optional<std::string> SessionRecord::*member;
};
constexpr StringField kStringFields[] = {
    {SessionField::kSessionId, &SessionRecord::session_id},
    {SessionField::kKind, &SessionRecord::kind},
    {SessionField::kChannel, &SessionRecord::channel},
    {SessionField::kLabel, &SessionRecord::label},
    {SessionField::kModel, &SessionRecord::model},
    {SessionField::kParentSessionKey, &SessionRecord::parent_session_key},
    {SessionField::kDisplayName, &SessionRecord::display_name},
    {SessionField::kModelOverride, &SessionRecord::model_override},
    {SessionField::kThinking, &SessionRecord::thinking},
    {SessionField::kRuntime, &SessionRecord::runtime},
    {SessionField::kLastChannel, &SessionRecord::last_channel},
    {SessionField::kLastTo, &SessionRecord::last_to},
    {SessionField::kLastAccountId, &SessionRecord::last_account_id},
    {SessionField::kLastThreadId, &SessionRecord::last_thread_id},
};
struct CountField {
  SessionField field;
  std::optional<int64_t> SessionRecord::*member;
};
constexpr CountField kCountFields[] = {
    {SessionField::kContextTokens, &SessionRecord::context_tokens},
    {SessionField::kTotalTokens, &SessionRecord::total_tokens},
    {SessionField::kInputTokens, &SessionRecord::input_tokens},
    {SessionField::kOutputTokens, &SessionRecord::output_tokens},
    {SessionField::kCacheReadTokens, &SessionRecord::cache_read_tokens},
    {SessionField::kCacheWriteTokens, &SessionRecord::cache_write_tokens},
};

void ClearField(SessionField field, SessionRecord* r) {
  if (field == SessionField::kSandboxed) r->sandboxed.reset();
  for (const StringField& f : kStringFields) {
    if (f.field == field) (r->*f.member).reset();
  }
  for (const CountField& f : kCountFields) {
    if (f.field == field) (r->*f.member).reset();
  }
}

}  // namespace

void MergeSessionRecord(const SessionRecord& u, SessionRecord* base) {
  for (const StringField& f : kStringFields) Overlay(u.*f.member, &(base->*f.member));
  for (const CountField& f : kCountFields) Overlay(u.*f.member, &(base->*f.member));
  Overlay(u.sandboxed, &base->sandboxed);
  Overlay(u.created_at_ms, &base->created_at_ms);
  Overlay(u.updated_at_ms, &base->updated_at_ms);
  Overlay(u.extra_json, &base->extra_json);
  for (SessionField field : u.clear) ClearField(field, base);
  base->clear.clear();
}

}  // namespace statewatch::engine

namespace statewatch::engine {

std::string EncodeTranscriptMessage(const TranscriptMessage& m) {
  flatbuffers::FlatBufferBuilder b(160 + m.content_json.size());
  auto role = b.CreateString(m.role);
  auto content = b.CreateString(m.content_json);
  auto tool = OptStr(b, m.tool_name);
  flatbuffers::Offset<fb::MessageProvenance> provenance = 0;
  if (m.provenance) {
    const MessageProvenance& p = *m.provenance;
    provenance = fb::CreateMessageProvenance(b, OptStr(b, p.kind), OptStr(b, p.source_session_key),
                                             OptStr(b, p.source_tool), OptStr(b, p.source_channel),
                                             OptStr(b, p.run_id));
  }
  std::optional<fb::TokenUsage> usage;
  if (m.usage) {
    usage = fb::TokenUsage(m.usage->input, m.usage->output, m.usage->cache_read,
                           m.usage->cache_write, m.usage->total);
  }
  b.Finish(fb::CreateTranscriptMessage(b, m.index, role, content, tool, m.timestamp_ms, provenance,
                                       usage ? &*usage : nullptr));
  return Finish(b);
}

Result<TranscriptMessage> DecodeTranscriptMessage(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::TranscriptMessage>(aligned, "transcript message");
  if (!v.ok()) return v.status();
  const auto* f = *v;
  TranscriptMessage m{f->index(),          Str(f->role()), Str(f->content_json()),
                      Str(f->tool_name()), f->timestamp(), std::nullopt,
                      std::nullopt};
  if (const auto* p = f->provenance()) {
    m.provenance =
        MessageProvenance{Str(p->kind()), Str(p->source_session_key()), Str(p->source_tool()),
                          Str(p->source_channel()), Str(p->run_id())};
  }
  if (const auto* u = f->usage()) {
    m.usage = TokenUsage{u->input(), u->output(), u->cache_read(), u->cache_write(), u->total()};
  }
  return m;
}

std::string EncodeRun(const RunRecord& r) {
  flatbuffers::FlatBufferBuilder b(320 + r.task.size() + r.result.size() + r.reply.size());
  auto id = b.CreateString(r.run_id);
  auto kind = b.CreateString(r.kind);
  auto ra = b.CreateString(r.requester.agent_id), rk = b.CreateString(r.requester.session_key);
  auto ta = b.CreateString(r.target.agent_id), tk = b.CreateString(r.target.session_key);
  auto status = b.CreateString(r.status);
  auto label = OptStr(b, r.label), task = OptStr(b, r.task), result = OptStr(b, r.result),
       reply = OptStr(b, r.reply), extra = OptStr(b, r.extra_json);
  auto send = EncodeSend(b, r.send);
  auto spawn = EncodeSpawn(b, r.spawn);
  auto route = EncodeRoute(b, r.requester_route);
  b.Finish(fb::CreateRun(b, id, kind, ra, rk, ta, tk, status, label, task, r.created_at_ms,
                         r.ended_at_ms, result, reply, r.last_steer_at_ms, extra, send, spawn,
                         route));
  return Finish(b);
}

Result<RunRecord> DecodeRun(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::Run>(aligned, "run");
  if (!v.ok()) return v.status();
  const auto* f = *v;
  RunRecord r;
  r.run_id = Str(f->run_id());
  r.kind = Str(f->kind());
  r.requester = SessionName{Str(f->requester_agent()), Str(f->requester_key())};
  r.target = SessionName{Str(f->target_agent()), Str(f->target_key())};
  r.status = Str(f->status());
  r.label = Str(f->label());
  r.task = Str(f->task());
  r.created_at_ms = f->created_at();
  r.ended_at_ms = f->ended_at();
  r.result = Str(f->result());
  r.reply = Str(f->reply());
  r.last_steer_at_ms = f->last_steer_at();
  r.extra_json = Str(f->extra_json());
  r.send = DecodeSend(f->send());
  r.spawn = DecodeSpawn(f->spawn());
  r.requester_route = DecodeRoute(f->requester_route());
  return r;
}

std::string EncodeDelivery(const Delivery& d) {
  flatbuffers::FlatBufferBuilder b(256 + d.text.size());
  auto agent = b.CreateString(d.agent_id), type = b.CreateString(d.type),
       key = b.CreateString(d.session_key), run = OptStr(b, d.run_id),
       text = b.CreateString(d.text), src = OptStr(b, d.source_session_key),
       tool = OptStr(b, d.source_tool), channel = OptStr(b, d.source_channel);
  auto route = EncodeRoute(b, d.route);
  auto spawn = EncodeSpawn(b, d.spawn);
  b.Finish(fb::CreateDelivery(b, d.id, agent, type, key, run, text, src, tool, d.created_at_ms,
                              channel, route, spawn));
  return Finish(b);
}

Result<Delivery> DecodeDelivery(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::Delivery>(aligned, "delivery");
  if (!v.ok()) return v.status();
  const auto* f = *v;
  Delivery d;
  d.id = f->id();
  d.agent_id = Str(f->agent_id());
  d.type = Str(f->type());
  d.session_key = Str(f->session_key());
  d.run_id = Str(f->run_id());
  d.text = Str(f->text());
  d.source_session_key = Str(f->source_session_key());
  d.source_tool = Str(f->source_tool());
  d.created_at_ms = f->created_at();
  d.source_channel = Str(f->source_channel());
  d.route = DecodeRoute(f->route());
  d.spawn = DecodeSpawn(f->spawn());
  return d;
}

std::string EncodeUpstreamLink(const UpstreamLink& l) {
  flatbuffers::FlatBufferBuilder b(256);
  auto agent = b.CreateString(l.session.agent_id), key = b.CreateString(l.session.session_key),
       cat = b.CreateString(l.catalog_id), host = b.CreateString(l.host_id),
       thread = b.CreateString(l.thread_id), kind = b.CreateString(l.upstream_kind),
       ref = b.CreateString(l.upstream_ref);
  b.Finish(fb::CreateUpstreamLink(b, agent, key, cat, host, thread, kind, ref, l.marker,
                                  l.last_scanned_at_ms, l.missing_count));
  return Finish(b);
}

Result<UpstreamLink> DecodeUpstreamLink(std::string_view bytes) {
  AlignedBytes aligned(bytes);
  auto v = Verified<fb::UpstreamLink>(aligned, "upstream link");
  if (!v.ok()) return v.status();
  const auto* f = *v;
  UpstreamLink l;
  l.session = SessionName{Str(f->agent_id()), Str(f->session_key())};
  l.catalog_id = Str(f->catalog_id());
  l.host_id = Str(f->host_id());
  l.thread_id = Str(f->thread_id());
  l.upstream_kind = Str(f->upstream_kind());
  l.upstream_ref = Str(f->upstream_ref());
  l.marker = f->marker();
  l.last_scanned_at_ms = f->last_scanned_at();
  l.missing_count = f->missing_count();
  return l;
}

}  // namespace statewatch::engine

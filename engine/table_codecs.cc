// The side tables' value codecs: the session registry, transcripts, runs, deliveries and
// upstream links (schema/statewatch.fbs). Decoders verify and return Corruption naming what
// failed. Kept apart from records.cc, the journal's and projections' codecs, because the
// engine core never reads these values: only engine/session_tables*.cc do.
#include "engine/table_codecs.h"

#include "engine/flatbuffer_values.h"
#include "schema/statewatch_generated.h"

namespace statewatch::engine {

namespace fb = statewatch::schema;
using fbv::Finish;
using fbv::OptStr;
using fbv::Str;

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

// The send state of run `run_id`; nullopt when the run has none. A phase outside
// SendRunState::Phase is Corruption (naming it), not kAwaiting: guessing would restart a
// finished reply loop.
Status DecodeSend(const fb::SendState* f, const std::string& run_id,
                  std::optional<SendRunState>* out) {
  out->reset();
  if (f == nullptr) return Status::OK();
  SendRunState s;
  int phase = f->phase();
  if (phase < static_cast<int>(SendRunState::Phase::kAwaiting) ||
      phase > static_cast<int>(SendRunState::Phase::kDone)) {
    return Status::Corruption("run " + run_id + " has an unknown send phase " +
                              std::to_string(phase));
  }
  s.phase = static_cast<SendRunState::Phase>(phase);
  s.turn = f->turn();
  s.max_turns = f->max_turns();
  s.next_is_requester = f->next_is_requester();
  s.timeout_ms = f->timeout_ms();
  s.deadline_ms = f->deadline_at();
  s.watch = f->watch();
  s.watched = f->watched();
  s.last_reply = Str(f->last_reply());
  s.outcome = Str(f->outcome());
  *out = std::move(s);
  return Status::OK();
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
  return fbv::Decode<fb::SessionRecord>(bytes, "session registry", [](const auto& f) {
    SessionRecord r;
    r.name = SessionName{Str(f.agent_id()), Str(f.session_key())};
    r.session_id = OptString(f.session_id());
    r.kind = OptString(f.kind());
    r.channel = OptString(f.channel());
    r.label = OptString(f.label());
    r.model = OptString(f.model());
    r.parent_session_key = OptString(f.parent_session_key());
    if (f.has_context_tokens()) r.context_tokens = f.context_tokens();
    if (f.has_total_tokens()) r.total_tokens = f.total_tokens();
    r.sandboxed = f.sandboxed();  // a flag: cleared reads as false
    r.created_at_ms = f.created_at();
    r.updated_at_ms = f.updated_at();
    r.extra_json = OptString(f.extra_json());
    r.display_name = OptString(f.display_name());
    r.model_override = OptString(f.model_override());
    r.thinking = OptString(f.thinking());
    r.runtime = OptString(f.runtime());
    if (f.has_input_tokens()) r.input_tokens = f.input_tokens();
    if (f.has_output_tokens()) r.output_tokens = f.output_tokens();
    if (f.has_cache_read_tokens()) r.cache_read_tokens = f.cache_read_tokens();
    if (f.has_cache_write_tokens()) r.cache_write_tokens = f.cache_write_tokens();
    r.last_channel = OptString(f.last_channel());
    r.last_to = OptString(f.last_to());
    r.last_account_id = OptString(f.last_account_id());
    r.last_thread_id = OptString(f.last_thread_id());
    return r;
  });
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
  return fbv::Decode<fb::TranscriptMessage>(bytes, "transcript message", [](const auto& f) {
    TranscriptMessage m{f.index(),     Str(f.role()), Str(f.content_json()), Str(f.tool_name()),
                        f.timestamp(), std::nullopt,  std::nullopt};
    if (const auto* p = f.provenance()) {
      m.provenance =
          MessageProvenance{Str(p->kind()), Str(p->source_session_key()), Str(p->source_tool()),
                            Str(p->source_channel()), Str(p->run_id())};
    }
    if (const auto* u = f.usage()) {
      m.usage = TokenUsage{u->input(), u->output(), u->cache_read(), u->cache_write(), u->total()};
    }
    return m;
  });
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
  auto trace = OptStr(b, r.traceparent);
  b.Finish(fb::CreateRun(b, id, kind, ra, rk, ta, tk, status, label, task, r.created_at_ms,
                         r.ended_at_ms, result, reply, r.last_steer_at_ms, extra, send, spawn,
                         route, trace));
  return Finish(b);
}

Result<RunRecord> DecodeRun(std::string_view bytes) {
  return fbv::Decode<fb::Run>(bytes, "run", [](const auto& f) -> Result<RunRecord> {
    RunRecord r;
    r.run_id = Str(f.run_id());
    r.kind = Str(f.kind());
    r.requester = SessionName{Str(f.requester_agent()), Str(f.requester_key())};
    r.target = SessionName{Str(f.target_agent()), Str(f.target_key())};
    r.status = Str(f.status());
    r.label = Str(f.label());
    r.task = Str(f.task());
    r.created_at_ms = f.created_at();
    r.ended_at_ms = f.ended_at();
    r.result = Str(f.result());
    r.reply = Str(f.reply());
    r.last_steer_at_ms = f.last_steer_at();
    r.extra_json = Str(f.extra_json());
    SW_RETURN_IF_ERROR(DecodeSend(f.send(), r.run_id, &r.send));
    r.spawn = DecodeSpawn(f.spawn());
    r.requester_route = DecodeRoute(f.requester_route());
    r.traceparent = Str(f.traceparent());
    return r;
  });
}

std::string EncodeDelivery(const Delivery& d) {
  flatbuffers::FlatBufferBuilder b(256 + d.text.size());
  auto agent = b.CreateString(d.agent_id), type = b.CreateString(d.type),
       key = b.CreateString(d.session_key), run = OptStr(b, d.run_id),
       text = b.CreateString(d.text), src = OptStr(b, d.source_session_key),
       tool = OptStr(b, d.source_tool), channel = OptStr(b, d.source_channel);
  auto route = EncodeRoute(b, d.route);
  auto spawn = EncodeSpawn(b, d.spawn);
  auto trace = OptStr(b, d.traceparent);
  b.Finish(fb::CreateDelivery(b, d.id, agent, type, key, run, text, src, tool, d.created_at_ms,
                              channel, route, spawn, trace));
  return Finish(b);
}

Result<Delivery> DecodeDelivery(std::string_view bytes) {
  return fbv::Decode<fb::Delivery>(bytes, "delivery", [](const auto& f) {
    Delivery d;
    d.id = f.id();
    d.agent_id = Str(f.agent_id());
    d.type = Str(f.type());
    d.session_key = Str(f.session_key());
    d.run_id = Str(f.run_id());
    d.text = Str(f.text());
    d.source_session_key = Str(f.source_session_key());
    d.source_tool = Str(f.source_tool());
    d.created_at_ms = f.created_at();
    d.source_channel = Str(f.source_channel());
    d.route = DecodeRoute(f.route());
    d.spawn = DecodeSpawn(f.spawn());
    d.traceparent = Str(f.traceparent());
    return d;
  });
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
  return fbv::Decode<fb::UpstreamLink>(bytes, "upstream link", [](const auto& f) {
    UpstreamLink l;
    l.session = SessionName{Str(f.agent_id()), Str(f.session_key())};
    l.catalog_id = Str(f.catalog_id());
    l.host_id = Str(f.host_id());
    l.thread_id = Str(f.thread_id());
    l.upstream_kind = Str(f.upstream_kind());
    l.upstream_ref = Str(f.upstream_ref());
    l.marker = f.marker();
    l.last_scanned_at_ms = f.last_scanned_at();
    l.missing_count = f.missing_count();
    return l;
  });
}

}  // namespace statewatch::engine

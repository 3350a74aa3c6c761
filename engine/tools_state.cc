// EngineImpl: the state the session tools and the upstream monitor keep — transcripts,
// runs, deliveries and upstream links. Writes are kAux commands, so they share the commit
// queue's atomicity, durability and sticky-error rules with every other write.
#include <algorithm>

#include "engine/engine_impl.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

Status EngineImpl::RunAux(std::function<Status(AuxContext&)> fn) {
  Command cmd{AuxCmd{std::move(fn)}};
  return Execute(cmd);
}

// ---- transcripts ----------------------------------------------------------------------------

Status EngineImpl::AppendTranscript(const SessionName& session,
                                    std::vector<TranscriptMessage> messages) {
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  for (const TranscriptMessage& m : messages) {
    bool provenance_ok =
        !m.provenance ||
        (IsValidUtf8(m.provenance->source_session_key) && IsValidUtf8(m.provenance->source_tool) &&
         IsValidUtf8(m.provenance->source_channel) && IsValidUtf8(m.provenance->run_id));
    if (!IsValidUtf8(m.role) || !IsValidUtf8(m.content_json) || !IsValidUtf8(m.tool_name) ||
        !provenance_ok) {
      return Status::InvalidArgument("transcript message is not valid UTF-8");
    }
  }
  return RunAux([&, n = *name](AuxContext& ctx) {
    SessionRef ref = ctx.intern(n);
    for (TranscriptMessage& m : messages) {
      m.index = ++ctx.meta.last_message_index;
      if (m.timestamp_ms == 0) m.timestamp_ms = ctx.now;
      ctx.batch.Put(Family::kTranscripts, storage::TranscriptKey(ref, m.index),
                    EncodeTranscriptMessage(m));
    }
    return Status::OK();
  });
}

namespace {

// Reads up to `limit` messages of `ref`'s transcript, oldest first: the first ones, or
// (newest) the last ones.
Result<std::vector<TranscriptMessage>> ReadTranscript(const storage::Store& store, SessionRef ref,
                                                      std::size_t limit, bool newest) {
  std::vector<TranscriptMessage> out;
  if (!ref || limit == 0) return out;
  auto it = store.NewIterator(Family::kTranscripts, storage::TranscriptPrefix(ref),
                              storage::TranscriptPrefix(SessionRef{ref.value + 1}));
  for (newest ? it->SeekToLast() : it->SeekToFirst(); it->Valid() && out.size() < limit;
       newest ? it->Prev() : it->Next()) {
    auto m = DecodeTranscriptMessage(it->value());
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  SW_RETURN_IF_ERROR(it->status());
  if (newest) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

Result<std::vector<TranscriptMessage>> EngineImpl::RecentTranscript(const SessionName& session,
                                                                    std::size_t limit) const {
  std::shared_lock lock(state_mu_);
  SessionRef ref = FindRef(CanonicalSession(session));
  lock.unlock();
  return ReadTranscript(*store_, ref, limit, /*newest=*/true);
}

Result<std::vector<TranscriptMessage>> EngineImpl::FirstTranscript(const SessionName& session,
                                                                   std::size_t limit) const {
  std::shared_lock lock(state_mu_);
  SessionRef ref = FindRef(CanonicalSession(session));
  lock.unlock();
  return ReadTranscript(*store_, ref, limit, /*newest=*/false);
}

// ---- runs -----------------------------------------------------------------------------------

Status EngineImpl::PutRun(const RunRecord& run) {
  if (run.run_id.empty()) return Status::InvalidArgument("runId must not be empty");
  return RunAux([&](AuxContext& ctx) {
    ctx.batch.Put(Family::kRuns, storage::RunKey(run.run_id), EncodeRun(run));
    return Status::OK();
  });
}

Result<std::optional<RunRecord>> EngineImpl::GetRun(const std::string& run_id) const {
  auto v = store_->Get(Family::kRuns, storage::RunKey(run_id));
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::optional<RunRecord>();
  auto r = DecodeRun(**v);
  if (!r.ok()) return r.status();
  return std::optional<RunRecord>(std::move(*r));
}

Result<std::vector<RunRecord>> EngineImpl::ListRuns() const {
  std::vector<RunRecord> out;
  auto it = store_->NewIterator(Family::kRuns);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto r = DecodeRun(it->value());
    if (!r.ok()) return r.status();
    out.push_back(std::move(*r));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

// ---- deliveries -----------------------------------------------------------------------------

Result<uint64_t> EngineImpl::EnqueueDelivery(const Delivery& delivery) {
  uint64_t id = 0;
  Status st = RunAux([&](AuxContext& ctx) {
    Delivery d = delivery;
    d.id = id = ++ctx.meta.last_delivery_id;
    if (d.created_at_ms == 0) d.created_at_ms = ctx.now;
    ctx.batch.Put(Family::kDeliveries, storage::DeliveryKey(d.id), EncodeDelivery(d));
    return Status::OK();
  });
  if (!st.ok()) return st;
  return id;
}

Result<bool> EngineImpl::AckDelivery(uint64_t id) {
  bool found = false;
  Status st = RunAux([&](AuxContext& ctx) {
    auto v = store_->Get(Family::kDeliveries, storage::DeliveryKey(id));
    if (!v.ok()) return v.status();
    found = v->has_value();
    if (found) ctx.batch.Delete(Family::kDeliveries, storage::DeliveryKey(id));
    return Status::OK();
  });
  if (!st.ok()) return st;
  return found;
}

Result<std::vector<Delivery>> EngineImpl::PendingDeliveries(const std::string& agent_id) const {
  std::vector<Delivery> out;
  auto it = store_->NewIterator(Family::kDeliveries);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto d = DecodeDelivery(it->value());
    if (!d.ok()) return d.status();
    if (agent_id.empty() || d->agent_id == agent_id) out.push_back(std::move(*d));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

// ---- upstream links -------------------------------------------------------------------------

Status EngineImpl::PutUpstreamLink(const UpstreamLink& link) {
  auto name = ResolveSession(link.session.session_key, link.session.agent_id);
  if (!name.ok()) return name.status();
  return RunAux([&, n = *name](AuxContext& ctx) {
    UpstreamLink l = link;
    l.session = n;
    ctx.batch.Put(Family::kUpstream, storage::UpstreamKey(ctx.intern(n)), EncodeUpstreamLink(l));
    return Status::OK();
  });
}

Status EngineImpl::DeleteUpstreamLink(const SessionName& session) {
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  return RunAux([&, n = *name](AuxContext& ctx) {
    ctx.batch.Delete(Family::kUpstream, storage::UpstreamKey(ctx.intern(n)));
    return Status::OK();
  });
}

Result<std::optional<UpstreamLink>> EngineImpl::GetUpstreamLink(const SessionName& session) const {
  SessionRef ref;
  {
    std::shared_lock lock(state_mu_);
    ref = FindRef(CanonicalSession(session));
  }
  if (!ref) return std::optional<UpstreamLink>();
  auto v = store_->Get(Family::kUpstream, storage::UpstreamKey(ref));
  if (!v.ok()) return v.status();
  if (!v->has_value()) return std::optional<UpstreamLink>();
  auto l = DecodeUpstreamLink(**v);
  if (!l.ok()) return l.status();
  return std::optional<UpstreamLink>(std::move(*l));
}

Result<std::vector<UpstreamLink>> EngineImpl::ListUpstreamLinks() const {
  std::vector<UpstreamLink> out;
  auto it = store_->NewIterator(Family::kUpstream);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto l = DecodeUpstreamLink(it->value());
    if (!l.ok()) return l.status();
    out.push_back(std::move(*l));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

}  // namespace statewatch::engine

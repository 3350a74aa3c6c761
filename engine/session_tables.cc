// SessionTables: the state the session tools and the upstream monitor keep — transcripts,
// runs, deliveries and upstream links. Writes go through the engine's commit-group hook
// (engine/group_write.h), so they share its atomicity, durability and sticky-error rules
// with every other write. The registry is in session_registry.cc.
#include "statewatch/session_tables.h"

#include <algorithm>

#include "engine/event_validation.h"
#include "engine/group_write.h"
#include "engine/side_table_reads.h"
#include "engine/side_table_writes.h"
#include "engine/table_codecs.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch {

using engine::GroupWrite;
using storage::Family;

// ---- the handles ----------------------------------------------------------------------------

SessionTablesView::SessionTablesView(const Engine& engine)
    : host_(&engine::SideTableHostOf(engine, "SessionTables")) {}

SessionTables::SessionTables(Engine& engine)
    : SessionTablesView(engine), host_(&engine::SideTableHostOf(engine, "SessionTables")) {}

// ---- cluster mode ---------------------------------------------------------------------------

Status SessionTablesView::CheckOwned(const SessionName& session) const {
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  return host().CheckOwned(*name);
}

// ---- transcripts ----------------------------------------------------------------------------

Status SessionTables::AppendTranscript(const SessionName& session,
                                       std::vector<TranscriptMessage> messages) {
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  SW_RETURN_IF_ERROR(host().CheckOwned(*name));
  for (const TranscriptMessage& m : messages) {
    if (!engine::IsValidUtf8Message(m)) {
      return Status::InvalidArgument("transcript message is not valid UTF-8");
    }
  }
  return host().WriteInGroup([&, n = *name](GroupWrite& g) {
    for (const TranscriptMessage& m : messages) engine::PutTranscriptMessage(g, n, m);
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
    auto m = engine::DecodeTranscriptMessage(it->value());
    if (!m.ok()) return m.status();
    out.push_back(std::move(*m));
  }
  SW_RETURN_IF_ERROR(it->status());
  if (newest) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace

Result<std::vector<TranscriptMessage>> SessionTablesView::RecentTranscript(
    const SessionName& session, std::size_t limit) const {
  SessionRef ref = host().FindSession(engine::CanonicalSession(session));
  return ReadTranscript(host().store(), ref, limit, /*newest=*/true);
}

Result<std::vector<TranscriptMessage>> SessionTablesView::FirstTranscript(
    const SessionName& session, std::size_t limit) const {
  SessionRef ref = host().FindSession(engine::CanonicalSession(session));
  return ReadTranscript(host().store(), ref, limit, /*newest=*/false);
}

// ---- runs -----------------------------------------------------------------------------------

Status SessionTables::PutRun(const RunRecord& run) {
  if (run.run_id.empty()) return Status::InvalidArgument("runId must not be empty");
  return host().WriteInGroup([&](GroupWrite& g) {
    g.Put(Family::kRuns, storage::RunKey(run.run_id), engine::EncodeRun(run));
    return Status::OK();
  });
}

Result<std::optional<RunRecord>> SessionTablesView::GetRun(const std::string& run_id) const {
  return engine::ReadDecoded<RunRecord>(host().store(), Family::kRuns,
                                        storage::RunKey(run_id), engine::DecodeRun);
}

Result<std::vector<RunRecord>> SessionTablesView::ListRuns() const {
  return engine::ListDecoded<RunRecord>(host().store(), Family::kRuns, storage::kRunTag,
                                        engine::DecodeRun);
}

// ---- deliveries -----------------------------------------------------------------------------

Result<uint64_t> SessionTables::EnqueueDelivery(const Delivery& delivery) {
  uint64_t id = 0;
  Status st = host().WriteInGroup([&](GroupWrite& g) {
    id = engine::PutDelivery(g, delivery).id;
    return Status::OK();
  });
  if (!st.ok()) return st;
  return id;
}

Result<bool> SessionTables::AckDelivery(uint64_t id) {
  bool found = false;
  Status st = host().WriteInGroup([&](GroupWrite& g) {
    auto v = g.Get(Family::kDeliveries, storage::DeliveryKey(id));
    if (!v.ok()) return v.status();
    found = v->has_value();
    if (found) {
      g.Delete(Family::kDeliveries, storage::DeliveryKey(id));
    } else {
      g.ChangedNothing();
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return found;
}

Result<std::vector<Delivery>> SessionTablesView::PendingDeliveries(
    const std::string& agent_id) const {
  return engine::ListDecoded<Delivery>(
      host().store(), Family::kDeliveries, storage::kDeliveryTag, engine::DecodeDelivery,
      [&](const Delivery& d) { return agent_id.empty() || d.agent_id == agent_id; });
}

// ---- upstream links -------------------------------------------------------------------------

Status SessionTables::PutUpstreamLink(const UpstreamLink& link, UpstreamLink* stored) {
  auto name = ResolveSession(link.session.session_key, link.session.agent_id);
  if (!name.ok()) return name.status();
  SW_RETURN_IF_ERROR(host().CheckOwned(*name));
  return host().WriteInGroup([&, n = *name](GroupWrite& g) {
    UpstreamLink l = link;
    l.session = n;
    g.Put(Family::kUpstream, storage::UpstreamKey(g.Intern(n)), engine::EncodeUpstreamLink(l));
    if (stored != nullptr) *stored = std::move(l);
    return Status::OK();
  });
}

Status SessionTables::DeleteUpstreamLink(const SessionName& session) {
  auto name = ResolveSession(session.session_key, session.agent_id);
  if (!name.ok()) return name.status();
  SW_RETURN_IF_ERROR(host().CheckOwned(*name));
  return host().WriteInGroup([&, n = *name](GroupWrite& g) {
    g.Delete(Family::kUpstream, storage::UpstreamKey(g.Intern(n)));
    return Status::OK();
  });
}

Result<std::optional<UpstreamLink>> SessionTablesView::GetUpstreamLink(
    const SessionName& session) const {
  return engine::ReadSessionRow<UpstreamLink>(host(), session, Family::kUpstream,
                                              storage::UpstreamKey, engine::DecodeUpstreamLink);
}

Result<std::vector<UpstreamLink>> SessionTablesView::ListUpstreamLinks() const {
  return engine::ListDecoded<UpstreamLink>(host().store(), Family::kUpstream,
                                           storage::kUpstreamTag, engine::DecodeUpstreamLink);
}

namespace engine {

// Runs and deliveries are kept: they belong to their requester.
void RegisterToolTableDeleteSteps(SideTableHost& host) {
  host.AddDeleteStep([](GroupWrite& g, SessionRef session) {
    g.DeleteRange(Family::kTranscripts, storage::TranscriptPrefix(session),
                  storage::TranscriptPrefix(SessionRef{session.value + 1}));
  });
  host.AddDeleteStep([](GroupWrite& g, SessionRef session) {
    g.Delete(Family::kUpstream, storage::UpstreamKey(session));
  });
}

}  // namespace engine

}  // namespace statewatch

// EngineImpl: the session registry (sessions CF). Writes go through the commit queue like
// every other mutation, so they share its durability and sticky-error rules.
#include "engine/engine_impl.h"
#include "statewatch/session_key.h"
#include "storage/key_codec.h"

namespace statewatch::engine {

using storage::Family;

Status EngineImpl::BuildUpsert(UpsertCmd& cmd) {
  Group& g = group_;
  SessionRecord& update = cmd.record;
  SessionRef ref = Intern(update.name);
  std::string key = storage::RegistryKey(ref);
  SessionRecord merged;
  merged.name = update.name;
  if (auto it = g.new_sessions.find(ref.value); it != g.new_sessions.end()) {
    merged = it->second;
  } else {
    auto stored = store_->Get(Family::kSessions, key);
    if (!stored.ok()) return stored.status();
    if (stored->has_value()) {
      auto rec = DecodeSessionRecord(**stored);
      if (!rec.ok()) return rec.status();
      merged = std::move(*rec);
    } else {
      merged.created_at_ms = g.now;
    }
  }
  MergeSessionRecord(update, &merged);
  if (!update.updated_at_ms) merged.updated_at_ms = g.now;
  // createdAt never follows updatedAt: a gateway importing a session with a past updatedAt
  // tells us it existed by then, so the creation time moves back to it (not the update
  // forward: the gateway's own clock is the one that dated it).
  if (merged.created_at_ms && merged.updated_at_ms &&
      *merged.created_at_ms > *merged.updated_at_ms) {
    merged.created_at_ms = merged.updated_at_ms;
  }
  g.batch.Put(Family::kSessions, key, EncodeSessionRecord(merged));
  g.new_sessions[ref.value] = merged;
  return Status::OK();
}

Status EngineImpl::UpsertSession(const SessionRecord& record) {
  auto resolved = ResolveSession(record.name.session_key, record.name.agent_id);
  if (!resolved.ok()) return resolved.status();
  UpsertCmd upsert{record};
  upsert.record.name = *resolved;
  Command cmd{std::move(upsert)};
  return Execute(cmd);
}

Result<std::optional<SessionRecord>> EngineImpl::GetSession(const SessionName& name) const {
  SessionRef ref;
  {
    std::shared_lock lock(state_mu_);
    ref = FindRef(CanonicalSession(name));
  }
  if (!ref) return std::optional<SessionRecord>();
  auto stored = store_->Get(Family::kSessions, storage::RegistryKey(ref));
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return std::optional<SessionRecord>();
  auto rec = DecodeSessionRecord(**stored);
  if (!rec.ok()) return rec.status();
  return std::optional<SessionRecord>(std::move(*rec));
}

Result<std::vector<SessionRecord>> EngineImpl::ListSessions() const {
  std::vector<SessionRecord> out;
  auto it = store_->NewIterator(Family::kSessions);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto rec = DecodeSessionRecord(it->value());
    if (!rec.ok()) return rec.status();
    out.push_back(std::move(*rec));
  }
  SW_RETURN_IF_ERROR(it->status());
  return out;
}

}  // namespace statewatch::engine

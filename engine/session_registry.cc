// SessionTables: the session registry (the sessions column family), written through the
// engine's commit-group hook (engine/group_write.h).
#include "engine/event_validation.h"
#include "engine/group_write.h"
#include "engine/side_table_reads.h"
#include "engine/table_codecs.h"
#include "statewatch/session_key.h"
#include "statewatch/session_tables.h"
#include "storage/key_codec.h"

namespace statewatch {

using engine::GroupWrite;
using storage::Family;

namespace {

// Merges `update` into the stored entry (or a new one) and writes it; `written` gets it.
Status UpsertInGroup(GroupWrite& g, const SessionRecord& update, SessionRecord* written) {
  std::string key = storage::RegistryKey(g.Intern(update.name));
  auto stored = g.Get(Family::kSessions, key);
  if (!stored.ok()) return stored.status();
  SessionRecord merged;
  merged.name = update.name;
  if (stored->has_value()) {
    auto rec = engine::DecodeSessionRecord(**stored);
    if (!rec.ok()) return rec.status();
    merged = std::move(*rec);
  } else {
    merged.created_at_ms = g.now();
  }
  engine::MergeSessionRecord(update, &merged);
  if (!update.updated_at_ms) merged.updated_at_ms = g.now();
  // createdAt never follows updatedAt: a gateway importing a session with a past updatedAt
  // tells us it existed by then, so the creation time moves back to it (not the update
  // forward: the gateway's own clock is the one that dated it).
  if (merged.created_at_ms && merged.updated_at_ms &&
      *merged.created_at_ms > *merged.updated_at_ms) {
    merged.created_at_ms = merged.updated_at_ms;
  }
  g.Put(Family::kSessions, key, engine::EncodeSessionRecord(merged));
  if (written != nullptr) *written = std::move(merged);
  return Status::OK();
}

}  // namespace

Status SessionTables::UpsertSession(const SessionRecord& record, SessionRecord* stored) {
  auto resolved = ResolveSession(record.name.session_key, record.name.agent_id);
  if (!resolved.ok()) return resolved.status();
  SW_RETURN_IF_ERROR(host().CheckOwned(*resolved));
  SessionRecord update = record;
  update.name = *resolved;
  return host().WriteInGroup(
      [&update, stored](GroupWrite& g) { return UpsertInGroup(g, update, stored); });
}

Result<std::optional<SessionRecord>> SessionTablesView::GetSession(const SessionName& name) const {
  return engine::ReadSessionRow<SessionRecord>(host(), name, Family::kSessions,
                                               storage::RegistryKey, engine::DecodeSessionRecord);
}

Result<std::vector<SessionRecord>> SessionTablesView::ListSessions() const {
  return engine::ListDecoded<SessionRecord>(host().store(), Family::kSessions,
                                            storage::kRegistryTag, engine::DecodeSessionRecord);
}

namespace engine {

void RegisterRegistryDeleteStep(SideTableHost& host) {
  host.AddDeleteStep([](GroupWrite& g, SessionRef session) {
    g.Delete(Family::kSessions, storage::RegistryKey(session));
  });
}

}  // namespace engine

}  // namespace statewatch

// statewatch::SessionTables — the tables the session tools keep beside the journal: the
// session registry, transcripts, runs, deliveries and upstream links.
//
//   statewatch::SessionTables tables(*engine);
//   auto r = tables.UpsertSession(record);    // durable when it returns OK
//   auto entry = statewatch::SessionTablesView(*engine).GetSession(name);
//
// A handle is two pointers: make one wherever it is needed. Its writes go through the
// engine's commit groups, so they share Record's atomicity, durability, group commit and
// failure rules (after a failed durable write every later write fails until reopen), and
// DeleteSession removes the registry entry, transcript and upstream link of the session in
// the same atomic step (runs and deliveries are kept: they belong to their requester).
// REQUIRES: the engine was made by Engine::Open (the tables live in its commit groups and
// its store; an Engine subclass of your own, such as a test double, has neither, and a
// handle over one aborts with a message on its first call) and outlives the handle.
//
// Thread-safe.
#ifndef STATEWATCH_SESSION_TABLES_H_
#define STATEWATCH_SESSION_TABLES_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/session_records.h"
#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch {

namespace engine {
class SideTableHost;  // engine/group_write.h: the engine as the tables see it
}  // namespace engine

// The reads.
class SessionTablesView {
 public:
  // REQUIRES: `engine` was made by Engine::Open and outlives the handle (checked once, here:
  // a handle over any other Engine subclass aborts with a message). The handle keeps the
  // engine's side-table host (the commit-group hook and the store), found once.
  explicit SessionTablesView(const Engine& engine);

  // ---- cluster mode (docs/cluster.md, "A partition's log on JetStream") ----
  // OK when this node's partition holds `session`: always on a single node; with
  // EngineOptions::partitions P > 1, when XXH64(agentId) mod P is this node's partition.
  // Otherwise Misdirected, naming the session's partition and this node's. InvalidArgument
  // for a malformed name. The writes below check it themselves; the session tools call it
  // for the caller and for every session they address, before they change anything.
  Status CheckOwned(const SessionName& session) const;

  // ---- the session registry ----
  // The entry, or nullopt.
  Result<std::optional<SessionRecord>> GetSession(const SessionName& name) const;
  // Every entry (unordered).
  Result<std::vector<SessionRecord>> ListSessions() const;

  // ---- transcripts ----
  // The last `limit` messages, oldest first.
  Result<std::vector<TranscriptMessage>> RecentTranscript(const SessionName& session,
                                                          std::size_t limit) const;
  // The first `limit` messages, oldest first (titles derived from the opening message).
  Result<std::vector<TranscriptMessage>> FirstTranscript(const SessionName& session,
                                                         std::size_t limit) const;

  // ---- runs ----
  Result<std::optional<RunRecord>> GetRun(const std::string& run_id) const;
  Result<std::vector<RunRecord>> ListRuns() const;

  // ---- deliveries ----
  // Unacknowledged deliveries for an agent ("" = all), oldest first.
  Result<std::vector<Delivery>> PendingDeliveries(const std::string& agent_id) const;

  // ---- upstream links (docs/semantics.md, "Upstream monitor (adopted sessions)") ----
  Result<std::optional<UpstreamLink>> GetUpstreamLink(const SessionName& session) const;
  Result<std::vector<UpstreamLink>> ListUpstreamLinks() const;

 protected:
  const engine::SideTableHost& host() const { return *host_; }

 private:
  const engine::SideTableHost* host_;
};

// The reads and the writes. Bad input (a malformed session key, invalid UTF-8, an empty
// run id) fails with InvalidArgument naming it and writes nothing. In cluster mode a write
// naming another partition's session (registry, transcript, upstream link) fails with
// Misdirected (as CheckOwned) and writes nothing; runs and deliveries are keyed by id and
// are kept by the node that wrote them.
class SessionTables : public SessionTablesView {
 public:
  // REQUIRES: as SessionTablesView's.
  explicit SessionTables(Engine& engine);

  // Creates or updates the registry entry of `record.name`; absent fields keep their stored
  // values, the fields in `record.clear` are removed. A new entry gets createdAt/updatedAt =
  // now unless given; createdAt is lowered to updatedAt when it would be later. `stored`, if
  // given, receives the entry as written, inside the write's commit group (before the group
  // is durable: a request's answer rendered there reads it; server/request_ledger.h).
  Status UpsertSession(const SessionRecord& record, SessionRecord* stored = nullptr);

  // Appends messages to the session's transcript; assigns their indexes.
  Status AppendTranscript(const SessionName& session, std::vector<TranscriptMessage> messages);

  // Creates or replaces a run.
  Status PutRun(const RunRecord& run);

  // Queues a delivery; returns its id.
  Result<uint64_t> EnqueueDelivery(const Delivery& delivery);
  // Removes an acknowledged delivery; false when there was none with that id.
  Result<bool> AckDelivery(uint64_t id);

  // Creates or replaces the link; `stored`, if given, receives it as written, inside the
  // write's commit group, as UpsertSession's.
  Status PutUpstreamLink(const UpstreamLink& link, UpstreamLink* stored = nullptr);
  Status DeleteUpstreamLink(const SessionName& session);

 private:
  engine::SideTableHost& host() { return *host_; }

  engine::SideTableHost* host_;
};

}  // namespace statewatch

#endif  // STATEWATCH_SESSION_TABLES_H_

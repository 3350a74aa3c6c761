// The one hook by which tables beside the journal write inside a commit group.
//
// A side table (the session registry, transcripts, runs, deliveries, upstream links:
// engine/session_registry.cc, engine/session_tables.cc) never gets a command of its own in
// the engine core. It hands SideTableHost::WriteInGroup a function; the commit leader runs
// it inside the group it is building, so its writes land in the same atomic batch and log
// record as the journal events of that group — durable when WriteInGroup returns OK, and
// replayed with them. A table also registers a delete-session step, which DeleteSession
// runs inside its own group.
#ifndef STATEWATCH_ENGINE_GROUP_WRITE_H_
#define STATEWATCH_ENGINE_GROUP_WRITE_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/session_ref.h"
#include "statewatch/engine.h"
#include "statewatch/status.h"
#include "statewatch/types.h"
#include "storage/store.h"

namespace statewatch::engine {

// The persisted id counters a side table may draw from. Their slots in the meta record are
// fixed by the on-disk format (MetaRec::last_message_index, last_delivery_id).
enum class GroupCounter { kMessageIndex, kDeliveryId };

// What the group has written so far through GroupWrite, so that a later write of the same
// group reads it (a RocksDB batch is not readable). Owned by the group; cleared with it.
struct GroupOverlay {
  std::map<std::pair<storage::Family, std::string>, std::optional<std::string>> values;
  std::vector<std::pair<storage::Family, std::pair<std::string, std::string>>> deleted_ranges;
  void Clear() {
    values.clear();
    deleted_ranges.clear();
  }
};

// A side table's view of the commit group being built. Lives for one call of a write
// function or delete step. Runs on the commit leader only.
class GroupWrite {
 public:
  // `partition` of `partitions`: the engine's place in a cluster (1 partition: a single
  // node), which delivery ids name (NextId).
  GroupWrite(storage::Batch& batch, const storage::Store& store, GroupOverlay& overlay, int64_t now,
             uint64_t& message_index, uint64_t& delivery_id, uint32_t partition,
             uint32_t partitions, std::function<SessionRef(const SessionName&)> intern)
      : batch_(batch),
        store_(store),
        overlay_(overlay),
        now_(now),
        message_index_(message_index),
        delivery_id_(delivery_id),
        partition_(partition),
        partitions_(partitions < 1 ? 1 : partitions),
        intern_(std::move(intern)) {}

  // The group's time (the engine clock when the group began).
  int64_t now() const { return now_; }
  // The ref of a canonical session name, assigned in this group when it is new.
  SessionRef Intern(const SessionName& canonical) { return intern_(canonical); }
  // The next value of a persisted counter; it moves with the group's log record. Message
  // indexes are dense. Delivery ids are the least n * P + partition above the last one, as
  // sequences are (include/statewatch/options.h): an id names its partition, so a node routes
  // an acknowledgement by the id alone (id mod P), and no two partitions of a cluster hand
  // out the same id. With P = 1 they are dense. (A database from before numbered them densely
  // in every partition: the next id is still above the last one.)
  uint64_t NextId(GroupCounter counter) {
    if (counter == GroupCounter::kMessageIndex) return ++message_index_;
    uint64_t next = delivery_id_ / partitions_ * partitions_ + partition_;
    if (next <= delivery_id_) next += partitions_;
    return delivery_id_ = next;
  }

  // Says that this write found nothing to change (an acknowledgement of an unknown id, the
  // deletion of what is not there). An X-Request-Id answer rendered with the group
  // (server/request_ledger.h, AnswerInGroupOnSuccess) is then not written with it: the
  // handler's answer, a 404, is written after it.
  void ChangedNothing() { changed_ = false; }
  bool changed() const { return changed_; }

  // The value of `key` as the store plus this group's earlier writes leave it.
  Result<std::optional<std::string>> Get(storage::Family family, std::string_view key) const;
  void Put(storage::Family family, std::string_view key, std::string_view value);
  void Delete(storage::Family family, std::string_view key);
  // Deletes [begin, end).
  void DeleteRange(storage::Family family, std::string_view begin, std::string_view end);

 private:
  storage::Batch& batch_;
  const storage::Store& store_;
  GroupOverlay& overlay_;
  int64_t now_;
  uint64_t& message_index_;
  uint64_t& delivery_id_;
  uint32_t partition_;
  uint32_t partitions_;
  bool changed_ = true;
  std::function<SessionRef(const SessionName&)> intern_;
};

// The engine as side tables see it. EngineImpl implements it; a SessionTables handle gets it
// from Engine::side_table_host once, when it is made.
class SideTableHost {
 public:
  using WriteFn = std::function<Status(GroupWrite&)>;
  // A side table's share of DeleteSession: removes what it keeps for `session`.
  using DeleteStep = std::function<void(GroupWrite&, SessionRef session)>;

  // Runs `fn` inside a commit group (it shares the group's batch, log record and fsync);
  // durable when it returns OK. InvalidArgument from `fn` fails this call only — REQUIRES:
  // `fn` returns it before writing anything; any other error fails the whole group (as a
  // failed read inside Record does). Fails like Engine::Record after a failed durable write
  // and on a read-only engine. Thread-safe.
  virtual Status WriteInGroup(WriteFn fn) = 0;
  // Registers a step DeleteSession runs in its group. REQUIRES: during Engine::Open
  // (RegisterSideTables), before the engine is shared.
  virtual void AddDeleteStep(DeleteStep step) = 0;
  // The store, for reads outside a group (a consistent point-in-time read per call).
  virtual const storage::Store& store() const = 0;
  // The ref of a canonical name, or 0 when the engine never saw it. Thread-safe.
  virtual SessionRef FindSession(const SessionName& canonical) const = 0;
  // OK when this node's partition holds `canonical` (always on a single node); otherwise
  // Misdirected, naming the session's partition and this node's (engine/agent_partition.h).
  // Thread-safe.
  virtual Status CheckOwned(const SessionName& canonical) const = 0;

 protected:
  ~SideTableHost() = default;
};

// Registers the built-in side tables' delete steps (engine/session_registry.cc,
// engine/session_tables.cc). Engine::Open calls it.
void RegisterSideTables(SideTableHost& host);
void RegisterRegistryDeleteStep(SideTableHost& host);
void RegisterToolTableDeleteSteps(SideTableHost& host);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_GROUP_WRITE_H_

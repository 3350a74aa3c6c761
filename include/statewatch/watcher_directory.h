// statewatch::WatcherDirectory — where a watcher's cursors live, kept at the watcher's home
// partition (docs/cluster-internals.md, "Watchers across partitions"). A cursor (W, T) lives in
// T's partition; the home partition of W (the partition of W's agent) keeps the set of other
// partitions that may hold cursors of W, so that a peek or drain of W asks only those and the
// home. The set is a superset, never a subset: a watch registers T's partition here BEFORE its
// cursor commits at T's partition, and an entry goes only when that partition confirmed, after
// a removal of W's cursors there, with no registration in between (the record's version).
//
// It also journals the sagas that remove a watcher's cursors everywhere — a reset of W or a
// deletion of its session: the saga names every partition still to confirm (the home
// included) and is cleared when the last one has; a restart or takeover of the home owner
// reads it back and carries on (server/watcher_sagas.h drives it).
//
//   statewatch::WatcherDirectory dir(*engine);
//   auto v = dir.Register("agent:boss:main", 3);   // durable when it returns OK
//   auto listed = dir.Lookup("agent:boss:main");   // {partitions {3}, version}
//
// Rows live in the engine's sessions column family ('Y', 'Z', 'F' + the canonical watcher,
// FlatBuffers records of schema/watchers.fbs) and every write goes through the engine's
// commit groups (engine/group_write.h): atomic, durable when it returns OK, and in cluster
// mode carried by the partition's replicated log like every other write.
//
// REQUIRES: the engine was made by Engine::Open and outlives the handle. Thread-safe.
#ifndef STATEWATCH_WATCHER_DIRECTORY_H_
#define STATEWATCH_WATCHER_DIRECTORY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "statewatch/engine.h"
#include "statewatch/status.h"

namespace statewatch {

namespace engine {
class SideTableHost;
}  // namespace engine

struct WatcherListing {
  std::string watcher;               // canonical agent-scoped key
  std::vector<uint32_t> partitions;  // ascending, no repeats; empty when none is listed
  uint64_t version = 0;              // 0: never registered
};

enum class WatcherSagaKind : uint8_t { kReset = 1, kDelete = 2 };

struct WatcherSaga {
  std::string watcher;
  WatcherSagaKind kind = WatcherSagaKind::kReset;
  std::vector<uint32_t> partitions;  // still to confirm, ascending
  int64_t started_at_ms = 0;
  // The listing's version when the saga began or was last extended (0: journaled by a build
  // before saga numbers). Each partition applies a clear of a given number at most once.
  uint64_t number = 0;
};

class WatcherDirectory {
 public:
  explicit WatcherDirectory(Engine& engine);

  // Lists `partition` for `watcher` (an agent-scoped key; InvalidArgument otherwise) and
  // bumps the version. Durable when OK; the listing after it.
  Result<WatcherListing> Register(const std::string& watcher, uint32_t partition);
  // The listing of `watcher`; an empty one (version 0) when none is kept.
  Result<WatcherListing> Lookup(const std::string& watcher) const;

  // Journals a removal of every cursor of `watcher`: the saga names `home` and every listed
  // partition. A saga already pending for it is extended (a delete absorbs a reset). Either
  // way the listing's version goes up by one and becomes the saga's number, and, in the same
  // write, the home is fenced at that number (MarkCleared): the caller removed the watcher's
  // cursors here just before, so the saga's own clear of the home is a late copy.
  Result<WatcherSaga> BeginSaga(const std::string& watcher, WatcherSagaKind kind, uint32_t home);
  // `partition` removed the watcher's cursors: it leaves the saga (the saga goes with its
  // last partition) and, when the listing's version is still `version_before` (read before
  // the removal was asked), the listing too. Idempotent.
  Result<WatcherSaga> Confirm(const std::string& watcher, uint32_t partition,
                              uint64_t version_before);
  // Every pending saga, by watcher.
  Result<std::vector<WatcherSaga>> Sagas() const;
  // The pending saga of `watcher`, if any.
  Result<std::optional<WatcherSaga>> SagaOf(const std::string& watcher) const;

  // The clear fence, kept at every partition ('F' + the watcher): the highest saga number
  // whose clear of the watcher's cursors this partition applied (0 when none). A clear with a
  // number at or below it comes late — another node's driver, or a retry — and must remove
  // nothing: a watch acknowledged after the saga confirmed here would be undone.
  Result<uint64_t> ClearedThrough(const std::string& watcher) const;
  // Raises the fence to `saga` (never lowers it). Durable when OK.
  Status MarkCleared(const std::string& watcher, uint64_t saga);
  // Whether a removal of `watcher` that began after its listing had `listing_version` has
  // cleared this partition (the fence is above it): a cursor promised before that removal
  // must not be made now. False when `listing_version` is 0 (not recorded) and for a key
  // that is not agent-scoped (it has no fence).
  Result<bool> ClearedSince(const std::string& watcher, uint64_t listing_version) const;

 private:
  engine::SideTableHost* host_;
};

// The codecs (exposed for tests).
std::string EncodeWatcherListing(const WatcherListing& listing);
Result<WatcherListing> DecodeWatcherListing(std::string_view bytes);
std::string EncodeWatcherSaga(const WatcherSaga& saga);
Result<WatcherSaga> DecodeWatcherSaga(std::string_view bytes);
const char* WatcherSagaKindName(WatcherSagaKind kind);
// "a reset of <watcher> is still removing its cursors" (a delete: "a delete of …").
std::string WatcherSagaPendingMessage(const WatcherSaga& saga);

}  // namespace statewatch

#endif  // STATEWATCH_WATCHER_DIRECTORY_H_

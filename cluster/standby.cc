#include "cluster/standby.h"

#include <spdlog/spdlog.h>

#include <utility>

#include "statewatch/engine.h"
#include "storage/db_directory.h"
#include "storage/local_log.h"
#include "storage/store_replace.h"

namespace statewatch::cluster {

Result<std::unique_ptr<Standby>> Standby::Open(const std::string& path,
                                               std::shared_ptr<log::LogBackend> remote,
                                               uint32_t partition, uint32_t partitions,
                                               FoldOptions fold) {
  // A restore cut off part-way (a crash mid-CatchUp) left the replacement marker: the store
  // is emptied so that the fold below starts at position 0 and restores again. It holds
  // nothing the stream and its checkpoints lack: a standby acknowledges nothing.
  auto dir = storage::InspectDirectory(path);
  if (!dir.ok()) return dir.status();
  if (dir->state == storage::DirectoryState::kDatabase) {
    auto existing = storage::Store::Open(path, storage::StoreOptions{});
    if (!existing.ok()) return existing.status();
    auto cleared = storage::ClearInterruptedReplace(**existing);
    if (!cleared.ok()) return cleared.status();
    if (*cleared) spdlog::warn("event=interrupted_restore_cleared path={}", path);
  }
  {
    // The engine creates a missing database (families, format); it writes no commit group
    // when nothing is pruned, so the local log stays the stream's.
    EngineOptions o;
    o.prune_on_open = false;
    o.partition = partition;  // the numbering goes into the meta: an owner or a takeover
    o.partitions = partitions;  // opening it later must number the same
    auto created = Engine::Open(o, path);
    if (!created.ok()) return created.status();
  }
  auto store = storage::Store::Open(path, storage::StoreOptions{});
  if (!store.ok()) return store.status();
  auto applied = LoadAppliedState(**store, partition, partitions);
  if (!applied.ok()) return applied.status();
  auto local = storage::LocalLog::Open(store->get(), applied->local_position);
  if (!local.ok()) return local.status();
  return std::unique_ptr<Standby>(
      new Standby(std::move(*store), std::move(*local), std::move(remote), *applied,
                  std::move(fold)));
}

Standby::Standby(std::unique_ptr<storage::Store> store, std::unique_ptr<log::LogBackend> local,
                 std::shared_ptr<log::LogBackend> remote, AppliedState applied,
                 FoldOptions fold)
    : store_(std::move(store)),
      local_(std::move(local)),
      remote_(std::move(remote)),
      applied_(applied),
      fold_(std::move(fold)) {}

Standby::~Standby() {
  local_.reset();  // before the store it writes to
  store_.reset();
}

Status Standby::CatchUp() { return FoldStream(*remote_, *store_, *local_, &applied_, fold_); }

}  // namespace statewatch::cluster

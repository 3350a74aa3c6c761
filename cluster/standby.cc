#include "cluster/standby.h"

#include <utility>

#include "statewatch/engine.h"
#include "storage/local_log.h"

namespace statewatch::cluster {

Result<std::unique_ptr<Standby>> Standby::Open(const std::string& path,
                                               std::shared_ptr<log::LogBackend> remote,
                                               uint32_t partition, uint32_t partitions,
                                               FoldOptions fold) {
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

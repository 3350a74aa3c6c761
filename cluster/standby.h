// Standby: a node that folds a partition's stream into its own data directory without
// owning the partition (docs/cluster-internals.md, "The standby: fold the stream"). It never
// appends. Its directory then holds the same journal, names, side tables and local log as
// the owner's at the same position, so `statewatch verify` (a read-only open, allowed while
// the standby runs) checks it, and opening it as the owner (ReplicatedLog::OpenAsOwner,
// `serve --cluster --role owner`) is a takeover that has little left to fold.
//
// Thread contract: one thread at a time per Standby.
#ifndef STATEWATCH_CLUSTER_STANDBY_H_
#define STATEWATCH_CLUSTER_STANDBY_H_

#include <memory>
#include <string>

#include "cluster/replicated_log.h"
#include "log/log_backend.h"
#include "statewatch/status.h"
#include "storage/store.h"

namespace statewatch::cluster {

class Standby {
 public:
  // Opens (creating it when missing, as the engine would) the data directory at `path` for
  // following partition `partition` of `partitions` on `remote`. FailedPrecondition when the
  // directory follows another partition; Busy when another process has it open. `fold`
  // says where CatchUp restores from when the stream is purged below what it applied.
  static Result<std::unique_ptr<Standby>> Open(const std::string& path,
                                               std::shared_ptr<log::LogBackend> remote,
                                               uint32_t partition, uint32_t partitions,
                                               FoldOptions fold = {});
  ~Standby();

  // Folds every frame the stream has beyond what is applied; returns when it has no more.
  // A stream purged below what is applied restores the latest checkpoint first (FoldStream).
  // Corruption (a broken hash chain, a frame of another partition, a fenced writer's batch)
  // stops it with everything before kept.
  Status CatchUp();

  const AppliedState& applied() const { return applied_; }

 private:
  Standby(std::unique_ptr<storage::Store> store, std::unique_ptr<log::LogBackend> local,
          std::shared_ptr<log::LogBackend> remote, AppliedState applied, FoldOptions fold);

  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<log::LogBackend> local_;
  std::shared_ptr<log::LogBackend> remote_;
  AppliedState applied_;
  const FoldOptions fold_;
};

}  // namespace statewatch::cluster

#endif  // STATEWATCH_CLUSTER_STANDBY_H_

#include "log/mem_checkpoint_store.h"

#include <string>

namespace statewatch::log {

Status MemCheckpointStore::Write(const Checkpoint& checkpoint) {
  std::lock_guard<std::mutex> lock(mu_);
  if (latest_ && latest_->position > checkpoint.position) {
    return Status::FailedPrecondition(
        "checkpoint at position " + std::to_string(checkpoint.position) +
        " refused: a newer one covers position " + std::to_string(latest_->position));
  }
  latest_ = checkpoint;
  return Status::OK();
}

Result<std::optional<Checkpoint>> MemCheckpointStore::Latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

}  // namespace statewatch::log

// MemCheckpointStore: a CheckpointStore in memory (tests, and the MemLog tier).
//
// Thread-safe.
#ifndef STATEWATCH_LOG_MEM_CHECKPOINT_STORE_H_
#define STATEWATCH_LOG_MEM_CHECKPOINT_STORE_H_

#include <mutex>
#include <optional>

#include "log/checkpoint_store.h"

namespace statewatch::log {

class MemCheckpointStore final : public CheckpointStore {
 public:
  Status Write(const Checkpoint& checkpoint) override;
  Result<std::optional<Checkpoint>> Latest() override;

 private:
  std::mutex mu_;
  std::optional<Checkpoint> latest_;
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_MEM_CHECKPOINT_STORE_H_

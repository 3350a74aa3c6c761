#include "engine/agent_partition.h"

#include <xxhash.h>

#include <string>

namespace statewatch::engine {

uint32_t PartitionOfAgent(std::string_view agent_id, uint32_t partitions) {
  return static_cast<uint32_t>(XXH64(agent_id.data(), agent_id.size(), /*seed=*/0) % partitions);
}

Status CheckSessionPartition(const SessionName& session, uint32_t partition, uint32_t partitions) {
  if (partitions <= 1) return Status::OK();
  const uint32_t owner = PartitionOfAgent(session.agent_id, partitions);
  if (owner == partition) return Status::OK();
  const std::string of = " of " + std::to_string(partitions);
  return Status::Misdirected("session " + session.session_key + " (agent " + session.agent_id +
                             ") belongs to partition " + std::to_string(owner) + of +
                             "; this node owns partition " + std::to_string(partition) +
                             ": send it to partition " + std::to_string(owner) + "'s owner");
}

}  // namespace statewatch::engine

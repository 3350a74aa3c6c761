// Which partition of a cluster a session belongs to (docs/cluster-internals.md,
// "Frames, the hash chain, sequence numbers"): XXH64 (seed 0) of the session's agent id,
// mod the partition count. Every session of one agent lands in one partition, so an agent's
// watchers and targets are usually together.
//
// DO NOT CHANGE the function (hash, seed, input bytes): it decides where every session's
// history lives; changing it strands each session's history on another partition. When
// tenants arrive, the input becomes (tenant, agentId) only with a migration.
//
// Thread-safe: pure functions.
#ifndef STATEWATCH_ENGINE_AGENT_PARTITION_H_
#define STATEWATCH_ENGINE_AGENT_PARTITION_H_

#include <cstdint>
#include <string_view>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::engine {

// XXH64(agent_id, seed 0) % partitions. REQUIRES: partitions >= 1.
uint32_t PartitionOfAgent(std::string_view agent_id, uint32_t partitions);

// OK when `session` belongs to `partition` of `partitions`; otherwise Misdirected, naming
// the session, its agent, its partition and this node's.
Status CheckSessionPartition(const SessionName& session, uint32_t partition, uint32_t partitions);

}  // namespace statewatch::engine

#endif  // STATEWATCH_ENGINE_AGENT_PARTITION_H_

// Partition numbering (cluster mode): the engine-wide sequence of a partition's n-th
// sequence number is
//
//   seq = n * P + p        (P partitions, fixed for the life of a cluster; 0 <= p < P; n >= 1)
//
// One writer per partition draws n from a counter carried in each batch header, so a
// partition's sequences (hence a session's) strictly increase, and two partitions never
// produce the same sequence: the engine-wide uniqueness of semantics.md holds without a
// global counter. Sequences stay below 2^53 (JSON-safe integers); n past that is refused.
//
// DO NOT CHANGE the formula: sequences are persisted and handed to clients.
//
// Thread-safe: plain values and pure functions.
#ifndef STATEWATCH_LOG_PARTITION_H_
#define STATEWATCH_LOG_PARTITION_H_

#include <cstdint>

#include "statewatch/status.h"
#include "statewatch/types.h"

namespace statewatch::log {

// The largest sequence handed out: JSON numbers are exact up to 2^53 - 1.
inline constexpr Sequence kMaxSequence = (uint64_t{1} << 53) - 1;

// A partition's number and the cluster's partition count. Build with Make().
class PartitionId {
 public:
  // InvalidArgument unless partitions >= 1 and index < partitions.
  static Result<PartitionId> Make(uint32_t index, uint32_t partitions);

  uint32_t index() const { return index_; }
  uint32_t partitions() const { return partitions_; }

  // The sequence of the partition's counter value n. InvalidArgument when n is 0 or the
  // sequence would pass kMaxSequence.
  Result<Sequence> SequenceOf(uint64_t n) const;

  // The counter value behind `seq`; InvalidArgument when `seq` belongs to another partition
  // (or is 0).
  Result<uint64_t> CounterOf(Sequence seq) const;

  // The partition that `seq` belongs to, in a cluster of `partitions` (REQUIRES >= 1).
  static uint32_t PartitionOf(Sequence seq, uint32_t partitions) { return seq % partitions; }

  // The first counter value for a partition migrated from a single node whose largest
  // sequence was `max_existing`: ceil(max_existing / P) + 1, so every new sequence is above
  // every migrated one (docs/cluster-internals.md, "Frames, the hash chain, sequence numbers").
  uint64_t FirstCounterAfter(Sequence max_existing) const;

  bool operator==(const PartitionId&) const = default;

 private:
  PartitionId(uint32_t index, uint32_t partitions) : index_(index), partitions_(partitions) {}
  uint32_t index_;
  uint32_t partitions_;
};

}  // namespace statewatch::log

#endif  // STATEWATCH_LOG_PARTITION_H_

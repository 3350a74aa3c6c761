#include "log/partition.h"

#include <string>

namespace statewatch::log {

Result<PartitionId> PartitionId::Make(uint32_t index, uint32_t partitions) {
  if (partitions == 0) {
    return Status::InvalidArgument("partition count must be at least 1 (got 0)");
  }
  if (index >= partitions) {
    return Status::InvalidArgument("partition must be below the partition count " +
                                   std::to_string(partitions) + " (got " + std::to_string(index) +
                                   ")");
  }
  return PartitionId(index, partitions);
}

Result<Sequence> PartitionId::SequenceOf(uint64_t n) const {
  if (n == 0) {
    return Status::InvalidArgument("partition counter values start at 1 (got 0)");
  }
  // n * P + p <= kMaxSequence, checked without overflowing.
  if (n > (kMaxSequence - index_) / partitions_) {
    return Status::InvalidArgument("partition counter " + std::to_string(n) + " of partition " +
                                   std::to_string(index_) + "/" + std::to_string(partitions_) +
                                   " would pass the largest JSON-safe sequence 2^53-1");
  }
  return n * partitions_ + index_;
}

Result<uint64_t> PartitionId::CounterOf(Sequence seq) const {
  if (seq == 0 || seq % partitions_ != index_) {
    return Status::InvalidArgument("sequence " + std::to_string(seq) +
                                   " does not belong to partition " + std::to_string(index_) +
                                   " of " + std::to_string(partitions_));
  }
  return seq / partitions_;
}

uint64_t PartitionId::FirstCounterAfter(Sequence max_existing) const {
  // ceil(S/P) + 1: (S + P - 1) / P never overflows for S <= 2^53.
  return (max_existing + partitions_ - 1) / partitions_ + 1;
}

}  // namespace statewatch::log

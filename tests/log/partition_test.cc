#include "log/partition.h"

#include <gtest/gtest.h>

#include <set>

#include "status_matchers.h"

namespace statewatch::log {
namespace {

TEST(PartitionIdTest, SequencesAreUniqueAcrossPartitionsAndIncreaseWithinOne) {
  constexpr uint32_t kP = 8;
  std::set<Sequence> seen;
  for (uint32_t p = 0; p < kP; ++p) {
    PartitionId id = *PartitionId::Make(p, kP);
    Sequence previous = 0;
    for (uint64_t n = 1; n <= 100; ++n) {
      Sequence seq = *id.SequenceOf(n);
      EXPECT_GT(seq, previous);
      previous = seq;
      EXPECT_TRUE(seen.insert(seq).second) << "sequence " << seq << " produced twice";
      EXPECT_EQ(PartitionId::PartitionOf(seq, kP), p);
      EXPECT_EQ(*id.CounterOf(seq), n);
    }
  }
}

TEST(PartitionIdTest, FormulaIsNTimesPPlusP) {
  PartitionId id = *PartitionId::Make(3, 512);
  EXPECT_EQ(*id.SequenceOf(1), 515u);
  EXPECT_EQ(*id.SequenceOf(10), 5123u);
}

TEST(PartitionIdTest, RefusesBadPartitionsAndCounters) {
  EXPECT_TRUE(PartitionId::Make(0, 0).status().IsInvalidArgument());
  Result<PartitionId> bad = PartitionId::Make(8, 8);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "partition must be below the partition count 8 (got 8)");
  PartitionId id = *PartitionId::Make(2, 8);
  EXPECT_TRUE(id.SequenceOf(0).status().IsInvalidArgument());
  EXPECT_TRUE(id.CounterOf(0).status().IsInvalidArgument());
  Result<uint64_t> other = id.CounterOf(8 * 5 + 3);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "sequence 43 does not belong to partition 2 of 8");
}

TEST(PartitionIdTest, StaysJsonSafe) {
  PartitionId id = *PartitionId::Make(511, 512);
  const uint64_t last_n = (kMaxSequence - 511) / 512;
  ASSERT_OK(id.SequenceOf(last_n));
  EXPECT_LE(*id.SequenceOf(last_n), kMaxSequence);
  EXPECT_TRUE(id.SequenceOf(last_n + 1).status().IsInvalidArgument());
  EXPECT_TRUE(id.SequenceOf(UINT64_MAX).status().IsInvalidArgument());
}

TEST(PartitionIdTest, MigratedPartitionsStartAboveEveryExistingSequence) {
  for (Sequence max_existing :
       {Sequence{0}, Sequence{1}, Sequence{511}, Sequence{512}, Sequence{513}, Sequence{1000000}}) {
    for (uint32_t p : {0u, 1u, 511u}) {
      PartitionId id = *PartitionId::Make(p, 512);
      uint64_t n0 = id.FirstCounterAfter(max_existing);
      EXPECT_GT(*id.SequenceOf(n0), max_existing) << "p=" << p << " S=" << max_existing;
    }
  }
}

}  // namespace
}  // namespace statewatch::log

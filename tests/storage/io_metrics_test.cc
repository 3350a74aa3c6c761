// IoMetrics: write stalls counted per entry into a condition, the stalled time kept while any
// family is stalled; and a store under sync writes times its WAL fsyncs.
#include "storage/io_metrics.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::storage {
namespace {

using rocksdb::WriteStallCondition;

TEST(IoMetricsTest, StallsAreCountedPerConditionEntered) {
  IoMetrics io;
  io.StallChanged("journal", WriteStallCondition::kDelayed);
  io.StallChanged("journal", WriteStallCondition::kDelayed);  // no change: not counted
  io.StallChanged("log", WriteStallCondition::kStopped);
  io.StallChanged("journal", WriteStallCondition::kNormal);
  RocksDbStats during;
  io.FillStalls(&during);
  io.StallChanged("log", WriteStallCondition::kNormal);
  RocksDbStats after;
  io.FillStalls(&after);
  EXPECT_EQ(after.stalls_delayed, 1u);
  EXPECT_EQ(after.stalls_stopped, 1u);
  EXPECT_GE(after.stall_seconds, during.stall_seconds) << "time stalled only grows";
  RocksDbStats later;
  io.FillStalls(&later);
  EXPECT_EQ(later.stall_seconds, after.stall_seconds) << "no stall going on: the time stands";
}

TEST(IoMetricsTest, SyncWritesAreTimedAsWalSyncs) {
  std::string dir = std::filesystem::temp_directory_path() / "statewatch-io-metrics-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  {
    auto store = Store::Open(dir + "/db", StoreOptions{});
    ASSERT_OK(store);
    const uint64_t before = (*store)->WalSyncLatency().count;
    Batch b(**store);
    b.Put(Family::kMeta, "k", "v");
    ASSERT_OK((*store)->Write(b, /*sync=*/false));
    EXPECT_EQ((*store)->WalSyncLatency().count, before) << "a buffered write does not sync";
    ASSERT_OK((*store)->Write(b, /*sync=*/true));
    EXPECT_EQ((*store)->WalSyncLatency().count, before + 1);
    RocksDbStats r = (*store)->RocksDb();
    EXPECT_FALSE(r.write_stopped);
    EXPECT_EQ(r.stalls_stopped, 0u);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace statewatch::storage

// The offline RocksDB helpers the benchmarks rely on: row bytes of a family, a full
// compaction that leaves nothing in L0 or a memtable, and the flush/compaction count read
// from RocksDB's LOG.
#include "bench/rocksdb_inspect.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>

#include "bench/raw_rocksdb_floor.h"
#include "status_matchers.h"
#include "test_directory.h"

namespace statewatch::bench {
namespace {

class RocksdbInspectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = FreshDirectoryForThisTest("rocksdb-inspect-test");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Db() const { return (dir_ / "db").string(); }

  // `rows` puts of 17-byte keys and 100-byte values, written and closed.
  void Write(int rows) {
    auto floor = RawRocksdbFloor::Open(Db(), 100);
    ASSERT_OK(floor);
    for (int i = 0; i < rows; ++i) ASSERT_OK((*floor)->Put(i % 7, /*sync=*/false));
  }

  std::filesystem::path dir_;
};

TEST_F(RocksdbInspectTest, MeasuresAFamilysRowsAndBytes) {
  Write(250);
  auto bytes = MeasureFamily(dir_.string(), "default");  // found one level down
  ASSERT_OK(bytes);
  EXPECT_EQ(bytes->rows, 250u);
  EXPECT_EQ(bytes->key_bytes, 250u * kFloorKeyBytes);
  EXPECT_EQ(bytes->value_bytes, 250u * 100);
}

TEST_F(RocksdbInspectTest, NamesWhatIsMissing) {
  Write(1);
  auto missing = MeasureFamily(Db(), "journal");
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("\"journal\""), std::string::npos);
  std::filesystem::create_directories(dir_ / "empty");
  auto none = FindDatabaseDir((dir_ / "empty").string());
  EXPECT_TRUE(none.status().IsNotFound());
  BackgroundWork work = CountBackgroundWork((dir_ / "empty").string());
  EXPECT_EQ(work.flushes, -1);
  EXPECT_EQ(work.compactions, -1);
}

TEST_F(RocksdbInspectTest, CompactionLeavesEveryRowInOneSortedRunAndChangesNone) {
  Write(5000);
  ASSERT_OK(CompactDatabase(Db()));
  EXPECT_GE(CountBackgroundWork(Db()).compactions, 1);
  rocksdb::DB* raw = nullptr;
  ASSERT_OK(rocksdb::DB::OpenForReadOnly(rocksdb::Options(), Db(), &raw));
  std::unique_ptr<rocksdb::DB> db(raw);
  std::string l0;
  uint64_t memtable = 1;
  ASSERT_TRUE(db->GetProperty("rocksdb.num-files-at-level0", &l0));
  ASSERT_TRUE(db->GetIntProperty("rocksdb.num-entries-active-mem-table", &memtable));
  EXPECT_EQ(l0, "0");
  EXPECT_EQ(memtable, 0u);
  db.reset();
  auto bytes = MeasureFamily(Db(), "default");
  ASSERT_OK(bytes);
  EXPECT_EQ(bytes->rows, 5000u);
}

}  // namespace
}  // namespace statewatch::bench

// Store: column families, atomic batches, bounded iterators, the process lock.
#include "storage/store.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/engine_fixture.h"
#include "status_matchers.h"

namespace statewatch::storage {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::NewTempDir("store"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(StoreTest, BatchesAreAtomicAndFamiliesSeparate) {
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_OK(s);
  Batch b(**s);
  b.Put(Family::kJournal, "k", "journal");
  b.Put(Family::kHeads, "k", "heads");
  ASSERT_OK((*s)->Write(b, /*sync=*/true));
  EXPECT_EQ(*(*s)->Get(Family::kJournal, "k").value(), "journal");
  EXPECT_EQ(*(*s)->Get(Family::kHeads, "k").value(), "heads");
  EXPECT_FALSE((*s)->Get(Family::kCursors, "k")->has_value());
}

TEST_F(StoreTest, IteratorsRespectBounds) {
  auto s = Store::Open(dir_, StoreOptions{});
  Batch b(**s);
  for (const char* k : {"a", "b", "c", "d"}) b.Put(Family::kLog, k, k);
  b.DeleteRange(Family::kLog, "c", "d");
  ASSERT_OK((*s)->Write(b, false));
  auto it = (*s)->NewIterator(Family::kLog, "b", "z");
  std::string seen;
  for (it->SeekToFirst(); it->Valid(); it->Next()) seen += it->key();
  EXPECT_EQ(seen, "bd");
}

TEST_F(StoreTest, ASecondOpenOfTheSameDirectoryIsBusy) {
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_OK(s);
  auto again = Store::Open(dir_, StoreOptions{});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Status::Code::kBusy) << again.status().ToString();
}

TEST_F(StoreTest, InjectedWriteFaultsBecomeErrors) {
  StoreOptions o;
  o.faults = NewFaultInjector();
  auto s = Store::Open(dir_, o);
  ASSERT_OK(s);
  o.faults->FailSyncsAfter(0);
  Batch b(**s);
  b.Put(Family::kMeta, "x", "y");
  Status st = (*s)->Write(b, /*sync=*/true);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace statewatch::storage

namespace statewatch::storage {
namespace {

// Regression: with memtable insert hints on the transcripts family, deleting a session's
// transcript (a DeleteRange with 9-byte bounds) aborted inside RocksDB's skiplist, which
// shares one hint map between point keys and range tombstones.
TEST_F(StoreTest, DeleteRangeAfterPutsInTheSameFamilyDoesNotAbort) {
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_OK(s);
  for (Family f : {Family::kTranscripts, Family::kLog, Family::kBase}) {
    Batch b(**s);
    std::string begin(9, 'T'), end = begin;
    end.back() = 'U';
    b.Put(f, begin + "a", "1");
    b.Put(f, begin + "b", "2");
    b.DeleteRange(f, begin, end);
    b.DeleteRange(f, "A", "Z");
    ASSERT_OK((*s)->Write(b, false)) << FamilyName(f);
    Batch again(**s);
    again.Put(f, begin + "c", "3");
    ASSERT_OK((*s)->Write(again, false)) << FamilyName(f);
  }
}

// A request record's key ('Q' <random id>) is new every time; its family's hashed memtable
// gives each a bucket of its own (a linked list). That must stay a small cost per record: a
// memtable that grew by far more than the records would flush far more often. The records
// take ~60 bytes each here and ~170 with the memtable's own; a bucket that were a skiplist
// (RocksDB's HashSkipList) would take ~280, a skiplist memtable with insert hints ~380.
TEST_F(StoreTest, RequestRecordsGrowTheirMemtableByLittleMoreThanTheirSize) {
  StoreOptions o;
  o.write_buffer_bytes = 64u << 20;  // everything stays in one memtable
  auto s = Store::Open(dir_, o);
  ASSERT_OK(s);
  uint64_t before = (*s)->IntProperty("rocksdb.cur-size-all-mem-tables");
  uint64_t x = 88172645463325252ull;  // xorshift: the same "random" ids on every run
  constexpr int kRecords = 20000;
  for (int i = 0; i < kRecords; i += 100) {
    Batch b(**s);
    for (int j = 0; j < 100; ++j) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      char id[17];
      std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(x));
      b.Put(Family::kRequests, std::string("Q") + id, "answer");
    }
    ASSERT_OK((*s)->Write(b, /*sync=*/false));
  }
  uint64_t grown = (*s)->IntProperty("rocksdb.cur-size-all-mem-tables") - before;
  EXPECT_LT(grown, 4u << 20) << grown / kRecords << " bytes per record";
}

}  // namespace
}  // namespace statewatch::storage

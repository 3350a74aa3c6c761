// Store: column families, atomic batches, bounded iterators, the process lock.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine_fixture.h"
#include "storage/store.h"

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
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  Batch b(**s);
  b.Put(Family::kJournal, "k", "journal");
  b.Put(Family::kHeads, "k", "heads");
  ASSERT_TRUE((*s)->Write(b, /*sync=*/true).ok());
  EXPECT_EQ(*(*s)->Get(Family::kJournal, "k").value(), "journal");
  EXPECT_EQ(*(*s)->Get(Family::kHeads, "k").value(), "heads");
  EXPECT_FALSE((*s)->Get(Family::kCursors, "k")->has_value());
}

TEST_F(StoreTest, IteratorsRespectBounds) {
  auto s = Store::Open(dir_, StoreOptions{});
  Batch b(**s);
  for (const char* k : {"a", "b", "c", "d"}) b.Put(Family::kLog, k, k);
  b.DeleteRange(Family::kLog, "c", "d");
  ASSERT_TRUE((*s)->Write(b, false).ok());
  auto it = (*s)->NewIterator(Family::kLog, "b", "z");
  std::string seen;
  for (it->SeekToFirst(); it->Valid(); it->Next()) seen += it->key();
  EXPECT_EQ(seen, "bd");
}

TEST_F(StoreTest, ASecondOpenOfTheSameDirectoryIsBusy) {
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_TRUE(s.ok());
  auto again = Store::Open(dir_, StoreOptions{});
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), Status::Code::kBusy) << again.status().ToString();
}

TEST_F(StoreTest, InjectedWriteFaultsBecomeErrors) {
  StoreOptions o;
  o.faults = NewFaultInjector();
  auto s = Store::Open(dir_, o);
  ASSERT_TRUE(s.ok());
  o.faults->FailSyncsAfter(0);
  Batch b(**s);
  b.Put(Family::kMeta, "x", "y");
  Status st = (*s)->Write(b, /*sync=*/true);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace statewatch::storage

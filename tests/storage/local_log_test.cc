// LocalLog: the LogBackend contract (tests/log/log_backend_contract.h) on the engine's own
// RocksDB, and what only the local log does: a record and its keyed writes in one batch, and
// a tail that survives a purge of every record.
#include "storage/local_log.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "engine/engine_fixture.h"
#include "log/log_backend_contract.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
#include "storage/store.h"

namespace statewatch::storage {
namespace {

class LocalLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::NewTempDir("local-log");
    Reopen(0);
  }
  void TearDown() override {
    log_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void Reopen(log::LogPosition known_tail) {
    log_.reset();
    store_.reset();
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_OK(s);
    store_ = std::move(*s);
    auto l = LocalLog::Open(store_.get(), known_tail);
    ASSERT_OK(l);
    log_ = std::move(*l);
  }
  std::string dir_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<LocalLog> log_;
};

TEST_F(LocalLogTest, AppendReadTail) { log::testing::ExpectAppendReadTail(*log_); }
TEST_F(LocalLogTest, StaleWriterRefused) { log::testing::ExpectStaleWriterRefused(*log_); }
TEST_F(LocalLogTest, PurgeBelow) { log::testing::ExpectPurgeBelow(*log_); }
TEST_F(LocalLogTest, PipelinedAppends) { log::testing::ExpectPipelinedAppends(*log_); }

TEST_F(LocalLogTest, ARecordAndItsKeyedWritesLandTogether) {
  Batch rows(*store_);
  rows.Put(Family::kJournal, JournalKey(SessionRef{1}, 1), "row");
  log::AppendOptions o;
  o.writes = &rows;
  ASSERT_EQ(*log_->Append("group", o), 1u);
  EXPECT_EQ(*store_->Get(Family::kJournal, JournalKey(SessionRef{1}, 1)).value(), "row");
  auto read = log_->ReadFrom(1, 10);
  ASSERT_OK(read);
  ASSERT_EQ(read->size(), 1u);
  EXPECT_EQ((*read)[0].data, "group");
  EXPECT_TRUE((*read)[0].writes.empty());  // applied in place, not stored twice
  // Anything but a Batch of this store is refused, and nothing is appended.
  struct Foreign final : log::KeyedWrites {
    std::size_t Count() const override { return 1; }
    std::string_view Serialized() const override { return "x"; }
  } foreign;
  o.expected_last = 1;
  o.writes = &foreign;
  EXPECT_EQ(log_->Append("other", o).status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(*log_->Tail(), 1u);
}

TEST_F(LocalLogTest, TheTailSurvivesReopenAndAPurgeOfEverything) {
  for (log::LogPosition p = 0; p < 3; ++p) {
    log::AppendOptions o;
    o.expected_last = p;
    ASSERT_OK(log_->Append("r", o));
  }
  Reopen(0);
  EXPECT_EQ(*log_->Tail(), 3u);
  ASSERT_OK(log_->PurgeBelow(4));
  // No record is left: the owner's checkpoint says where the log ended.
  Reopen(3);
  EXPECT_EQ(*log_->Tail(), 3u);
  EXPECT_TRUE(log_->ReadFrom(4, 10)->empty());
  EXPECT_TRUE(log_->ReadFrom(2, 10).status().IsNotFound());
  log::AppendOptions o;
  o.expected_last = 3;
  EXPECT_EQ(*log_->Append("r4", o), 4u);
}

}  // namespace
}  // namespace statewatch::storage

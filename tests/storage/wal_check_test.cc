// Damage in a write-ahead log is never silent (storage/wal_check.h): a damaged record with
// valid records after it is Corruption naming the file; a torn tail still opens.
#include "storage/wal_check.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "engine/engine_fixture.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::storage {
namespace {

namespace fs = std::filesystem;

constexpr int kRows = 50;

struct RecordSpan {
  std::size_t offset;
  std::size_t size;  // header + payload
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// The physical records of a log whose records all fit in its first block.
std::vector<RecordSpan> Records(const std::string& data) {
  std::vector<RecordSpan> out;
  std::size_t pos = 0;
  while (pos + 7 <= data.size()) {
    std::size_t len = static_cast<uint8_t>(data[pos + 4]) | (static_cast<uint8_t>(data[pos + 5]) << 8);
    out.push_back({pos, 7 + len});
    pos += 7 + len;
  }
  return out;
}

class WalCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::NewTempDir("walcheck");
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_OK(s);
    for (int i = 0; i < kRows; ++i) {  // one WAL record per write, all acknowledged (sync)
      Batch b(**s);
      b.Put(Family::kJournal, Key(i), "value " + std::to_string(i));
      ASSERT_OK((*s)->Write(b, /*sync=*/true));
    }
    s->reset();
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".log" && e.file_size() > 0) wal_ = e.path().string();
    }
    ASSERT_FALSE(wal_.empty());
    data_ = ReadFile(wal_);
    records_ = Records(data_);
    ASSERT_EQ(records_.size(), static_cast<std::size_t>(kRows));
  }
  void TearDown() override { fs::remove_all(dir_); }
  static std::string Key(int i) { return "row" + std::to_string(1000 + i); }

  Result<std::unique_ptr<Store>> Open() { return Store::Open(dir_, StoreOptions{}); }

  std::string dir_, wal_, data_;
  std::vector<RecordSpan> records_;
};

TEST_F(WalCheckTest, Crc32cMatchesTheStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xe3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST_F(WalCheckTest, IntactLogsPass) {
  EXPECT_OK(CheckWriteAheadLogs({wal_}));
  auto s = Open();
  ASSERT_OK(s);
  EXPECT_TRUE((*s)->Get(Family::kJournal, Key(kRows - 1))->has_value());
}

// Regression: a zeroed record in the middle of the WAL made RocksDB skip the rest of its
// block silently, dropping every acknowledged write after it (point-in-time recovery).
TEST_F(WalCheckTest, AZeroedRecordFollowedByValidOnesIsCorruption) {
  const RecordSpan& mid = records_[kRows / 2];
  std::memset(data_.data() + mid.offset, 0, mid.size);
  WriteFile(wal_, data_);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption);
  EXPECT_NE(s.status().message().find(wal_), std::string::npos) << s.status().ToString();
  EXPECT_NE(s.status().message().find("zeroed record"), std::string::npos);
  StoreOptions ro;
  ro.read_only = true;
  EXPECT_EQ(Store::Open(dir_, ro).status().code(), Status::Code::kCorruption);
  EXPECT_EQ(ReadFile(wal_), data_) << "a refused open must not change the log";
}

TEST_F(WalCheckTest, AFlippedBitFollowedByValidRecordsIsCorruption) {
  data_[records_[kRows / 2].offset + 12] ^= 0x10;
  WriteFile(wal_, data_);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption);
  EXPECT_NE(s.status().message().find("checksum mismatch"), std::string::npos)
      << s.status().ToString();
}

// A torn tail is what kill -9 leaves: the unacknowledged last write, cut short. It opens,
// without that write.
TEST_F(WalCheckTest, ATornTailOpensWithoutTheTornWrite) {
  const RecordSpan& last = records_.back();
  data_.resize(last.offset + last.size / 2);
  WriteFile(wal_, data_);
  auto s = Open();
  ASSERT_OK(s);
  EXPECT_TRUE((*s)->Get(Family::kJournal, Key(kRows - 2))->has_value());
  EXPECT_FALSE((*s)->Get(Family::kJournal, Key(kRows - 1))->has_value());
}

TEST_F(WalCheckTest, ADamagedTailWithNothingValidAfterItOpens) {
  const RecordSpan& last = records_.back();
  std::memset(data_.data() + last.offset, 0, last.size);
  WriteFile(wal_, data_);
  auto s = Open();
  ASSERT_OK(s);
  EXPECT_TRUE((*s)->Get(Family::kJournal, Key(kRows - 2))->has_value());
  // And the next open, with a newer log after the damaged one, still passes the check.
  Batch b(**s);
  b.Put(Family::kJournal, "after", "x");
  ASSERT_OK((*s)->Write(b, true));
  s->reset();
  auto again = Open();
  ASSERT_OK(again);
  EXPECT_TRUE((*again)->Get(Family::kJournal, "after")->has_value());
}

// Point-in-time recovery stops at a damaged tail and then drops the next log silently unless
// its first batch continues the sequence numbers: acknowledged writes in both would be lost.
TEST_F(WalCheckTest, ADamagedTailBeforeALaterLogIsCorruption) {
  {
    auto s = Open();  // intact: a second log follows the first
    ASSERT_OK(s);
    for (int i = 0; i < 5; ++i) {
      Batch b(**s);
      b.Put(Family::kJournal, "later" + std::to_string(i), "x");
      ASSERT_OK((*s)->Write(b, /*sync=*/true));
    }
  }
  // Acknowledged records at the end of the first log are destroyed.
  std::size_t from = records_[kRows - 10].offset;
  std::memset(data_.data() + from, 0, data_.size() - from);
  WriteFile(wal_, data_);
  auto s = Open();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption);
  EXPECT_NE(s.status().message().find("acknowledged writes in between are missing"),
            std::string::npos)
      << s.status().ToString();
}

}  // namespace
}  // namespace statewatch::storage

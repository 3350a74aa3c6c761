// A write-ahead log cut off by a crash (kill -9 mid-append) is reported once and retired.
//
// Regression: recovery kept the torn log (avoid_flush_during_recovery), so every later open
// read it again and RocksDB logged "dropping N bytes; Corruption: truncated record body" for
// the same file each time (seen seven opens in a row).
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "engine/engine_fixture.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::storage {
namespace {

namespace fs = std::filesystem;

// Keeps every message the default logger prints while it is installed.
class CapturingSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Messages containing `needle` at `level` or above.
  int Count(const std::string& needle, spdlog::level::level_enum level = spdlog::level::trace) {
    std::lock_guard<std::mutex> lock(mutex_);
    int n = 0;
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      n += levels_[i] >= level && lines_[i].find(needle) != std::string::npos;
    }
    return n;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.emplace_back(msg.payload.data(), msg.payload.size());
    levels_.push_back(msg.level);
  }
  void flush_() override {}

 private:
  std::vector<std::string> lines_;
  std::vector<spdlog::level::level_enum> levels_;
};

class TornWalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::NewTempDir("torn-wal");
    sink_ = std::make_shared<CapturingSink>();
    previous_ = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>("capture", sink_);
    logger->set_level(spdlog::level::debug);
    spdlog::set_default_logger(logger);
  }
  void TearDown() override {
    spdlog::set_default_logger(previous_);
    fs::remove_all(dir_);
  }
  std::vector<fs::path> Logs() const {
    std::vector<fs::path> logs;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().extension() == ".log") logs.push_back(e.path());
    }
    std::sort(logs.begin(), logs.end());
    return logs;
  }
  // Writes `n` records through a store, closes it without a flush (the writes stay in the
  // log), then cuts the last log's final record in half, as a crash mid-append does.
  void WriteAndTear(int n) {
    {
      auto s = Store::Open(dir_, StoreOptions{});
      ASSERT_OK(s);
      for (int i = 0; i < n; ++i) {
        Batch b(**s);
        b.Put(Family::kJournal, "k" + std::to_string(i), std::string(100, 'v'));
        ASSERT_OK((*s)->Write(b, /*sync=*/true));
      }
    }
    auto logs = Logs();
    ASSERT_FALSE(logs.empty());
    fs::path last = logs.back();
    auto size = fs::file_size(last);
    ASSERT_GT(size, 60u);
    fs::resize_file(last, size - 60);  // the last record (~130 bytes) loses its end
    torn_ = last;
  }

  std::string dir_;
  fs::path torn_;
  std::shared_ptr<CapturingSink> sink_;
  std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(TornWalTest, AWritableOpenReportsTheTailOnceAndRetiresTheLog) {
  WriteAndTear(5);
  {
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_OK(s);
    // Everything before the tear is there; the torn write is not.
    for (int i = 0; i < 4; ++i) {
      auto v = (*s)->Get(Family::kJournal, "k" + std::to_string(i));
      ASSERT_OK(v) << i;
      ASSERT_TRUE(v->has_value()) << i;
    }
    auto torn = (*s)->Get(Family::kJournal, "k4");
    ASSERT_OK(torn);
    EXPECT_FALSE(torn->has_value());
    EXPECT_FALSE(fs::exists(torn_)) << torn_ << " is still there";
  }
  EXPECT_EQ(sink_->Count("event=wal_tail_dropped"), 1);
  // RocksDB's own line about the same tail is kept below info: the store said it already.
  EXPECT_EQ(sink_->Count(torn_.filename().string(), spdlog::level::info), 1);
  const int dropping = sink_->Count("dropping");
  for (int open = 0; open < 3; ++open) {
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_OK(s);
    EXPECT_TRUE((*s)->Get(Family::kJournal, "k3")->has_value());
  }
  EXPECT_EQ(sink_->Count("event=wal_tail_dropped"), 1);
  EXPECT_EQ(sink_->Count("dropping"), dropping) << "later opens read no torn log";
}

TEST_F(TornWalTest, AReadOnlyOpenSaysTheNextWritableOpenRetiresIt) {
  WriteAndTear(3);
  StoreOptions ro;
  ro.read_only = true;
  {
    auto s = Store::Open(dir_, ro);
    ASSERT_OK(s);
    EXPECT_TRUE((*s)->Get(Family::kJournal, "k1")->has_value());
  }
  EXPECT_TRUE(fs::exists(torn_));
  EXPECT_EQ(sink_->Count("event=wal_tail_found"), 1);
  EXPECT_EQ(sink_->Count("event=wal_tail_dropped"), 0);
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_OK(s);
  EXPECT_FALSE(fs::exists(torn_));
  EXPECT_EQ(sink_->Count("event=wal_tail_dropped"), 1);
}

}  // namespace
}  // namespace statewatch::storage

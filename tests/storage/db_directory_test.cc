// The store decides when a database may be created (storage/db_directory.h): only in a
// missing or empty directory, only when asked to; anything else is refused untouched.
#include "storage/db_directory.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "engine/engine_fixture.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::storage {
namespace {

namespace fs = std::filesystem;

// Every file's name and size: what "nothing in it was changed" is checked against.
std::map<std::string, uintmax_t> Snapshot(const std::string& dir) {
  std::map<std::string, uintmax_t> out;
  for (const auto& e : fs::directory_iterator(dir)) out[e.path().filename()] = e.file_size();
  return out;
}

class DbDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::NewTempDir("dbdir"); }
  void TearDown() override { fs::remove_all(dir_); }

  // A database with rows in SSTs (several flushes) and in the log.
  void MakeDatabase() {
    StoreOptions o;
    o.max_wal_files_at_open = 0;  // every open flushes: SST files for sure
    for (int round = 0; round < 3; ++round) {
      auto s = Store::Open(dir_, o);
      ASSERT_OK(s);
      Batch b(**s);
      b.Put(Family::kJournal, "row" + std::to_string(round), "value");
      ASSERT_OK((*s)->Write(b, /*sync=*/true));
    }
  }
  std::string dir_;
};

// Regression: every open used create_if_missing, so with CURRENT removed the second open
// created an empty database over the old one and deleted its SST files as obsolete.
TEST_F(DbDirectoryTest, MissingCurrentIsCorruptionAndNothingIsTouched) {
  MakeDatabase();
  fs::remove(fs::path(dir_) / "CURRENT");
  auto before = Snapshot(dir_);
  bool has_sst = false;
  for (const auto& [name, size] : before) has_sst |= name.ends_with(".sst");
  ASSERT_TRUE(has_sst);
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), Status::Code::kCorruption) << s.status().ToString();
    EXPECT_NE(s.status().message().find("no CURRENT file"), std::string::npos)
        << s.status().ToString();
  }
  EXPECT_EQ(Snapshot(dir_), before);
}

TEST_F(DbDirectoryTest, CurrentNamingAMissingManifestIsCorruption) {
  MakeDatabase();
  std::string manifest;
  for (const auto& e : fs::directory_iterator(dir_)) {
    if (e.path().filename().string().starts_with("MANIFEST-")) manifest = e.path().filename();
  }
  ASSERT_FALSE(manifest.empty());
  fs::remove(fs::path(dir_) / manifest);
  auto before = Snapshot(dir_);
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption);
  EXPECT_NE(s.status().message().find(manifest + ", which is missing"), std::string::npos)
      << s.status().ToString();
  EXPECT_EQ(Snapshot(dir_), before);
}

TEST_F(DbDirectoryTest, GarbledCurrentIsCorruption) {
  MakeDatabase();
  std::ofstream(fs::path(dir_) / "CURRENT", std::ios::trunc) << "garbage";
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kCorruption) << s.status().ToString();
}

TEST_F(DbDirectoryTest, ADirectoryOfOtherFilesIsNotUsed) {
  std::ofstream(fs::path(dir_) / "notes.txt") << "mine";
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Status::Code::kFailedPrecondition) << s.status().ToString();
  EXPECT_EQ(Snapshot(dir_).size(), 1u);
}

TEST_F(DbDirectoryTest, OnlyAWriterAsksForCreation) {
  std::string missing = (fs::path(dir_) / "no" / "such").string();
  StoreOptions read_only;
  read_only.read_only = true;
  auto s = Store::Open(missing, read_only);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().ToString(), "Not found: no database at " + missing);
  StoreOptions no_create;
  no_create.create_if_missing = false;
  EXPECT_TRUE(Store::Open(missing, no_create).status().IsNotFound());
  EXPECT_FALSE(fs::exists(missing));
  auto created = Store::Open(missing, StoreOptions{});
  ASSERT_OK(created);
  EXPECT_TRUE(fs::exists(fs::path(missing) / "CURRENT"));
}

TEST_F(DbDirectoryTest, ReadOnlyOpenWritesNothingAndTakesNoLock) {
  MakeDatabase();
  auto writer = Store::Open(dir_, StoreOptions{});  // holds the lock
  ASSERT_OK(writer);
  auto before = Snapshot(dir_);
  StoreOptions o;
  o.read_only = true;
  for (int i = 0; i < 5; ++i) {
    auto r = Store::Open(dir_, o);
    ASSERT_OK(r);
    EXPECT_EQ(*(*r)->Get(Family::kJournal, "row2").value(), "value");
    Batch b(**r);
    b.Put(Family::kJournal, "x", "y");
    EXPECT_FALSE((*r)->Write(b, true).ok());
  }
  EXPECT_EQ(Snapshot(dir_), before);
}

// Regression: every open flushed the recovered log into one tiny SST per family, so each
// one-shot command left new files behind (88 one-shot records: 274 SST files).
TEST_F(DbDirectoryTest, RepeatedOpensLeaveABoundedNumberOfFiles) {
  for (int i = 0; i < 200; ++i) {
    auto s = Store::Open(dir_, StoreOptions{});
    ASSERT_OK(s);
    Batch b(**s);
    for (Family f : {Family::kJournal, Family::kBySeq, Family::kLog, Family::kHeads, Family::kMeta}) {
      b.Put(f, "key" + std::to_string(i), std::string(200, 'v'));
    }
    ASSERT_OK((*s)->Write(b, /*sync=*/false));
  }
  int sst = 0, wal = 0;
  for (const auto& [name, size] : Snapshot(dir_)) {
    sst += name.ends_with(".sst");
    wal += name.ends_with(".log");
  }
  EXPECT_LE(wal, 10);
  EXPECT_LE(sst, 40) << "SST files after 200 opens";
  auto s = Store::Open(dir_, StoreOptions{});
  ASSERT_OK(s);
  EXPECT_EQ(*(*s)->Get(Family::kJournal, "key0").value(), std::string(200, 'v'));
  EXPECT_EQ(*(*s)->Get(Family::kJournal, "key199").value(), std::string(200, 'v'));
}

TEST_F(DbDirectoryTest, NoInfoLogFileIsWritten) {
  MakeDatabase();
  for (const auto& [name, size] : Snapshot(dir_)) EXPECT_FALSE(name.starts_with("LOG")) << name;
}

}  // namespace
}  // namespace statewatch::storage

// Corruption is never silent: damaged stored records and NUL bytes in keys.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <filesystem>
#include <fstream>

#include "engine/engine_fixture.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

namespace fs = std::filesystem;

// The database through RocksDB's own API, every column family open, for a test that looks
// at or damages what the engine stored. The engine must be closed first.
class RawDb {
 public:
  RawDb(const std::string& dir, bool read_only) {
    rocksdb::Options o;
    EXPECT_OK(rocksdb::DB::ListColumnFamilies(o, dir, &names_));
    std::vector<rocksdb::ColumnFamilyDescriptor> descs;
    for (const auto& n : names_) descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
    rocksdb::DB* db = nullptr;
    rocksdb::Status s = read_only
                            ? rocksdb::DB::OpenForReadOnly(o, dir, descs, &handles_, &db)
                            : rocksdb::DB::Open(o, dir, descs, &handles_, &db);
    EXPECT_OK(s);
    db_.reset(db);
  }
  ~RawDb() {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
  }
  rocksdb::DB* db() const { return db_.get(); }
  // The handle of column family `name`, or null.
  rocksdb::ColumnFamilyHandle* Family(const std::string& name) const {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return handles_[i];
    }
    return nullptr;
  }

 private:
  std::vector<std::string> names_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  std::unique_ptr<rocksdb::DB> db_;
};

class CorruptionTest : public EngineTest {
 protected:
  // The SST files of one column family, from RocksDB's own metadata.
  std::vector<std::string> SstFilesOf(const std::string& family) {
    engine_.reset();
    RawDb raw(dir_, /*read_only=*/true);
    std::vector<rocksdb::LiveFileMetaData> files;
    raw.db()->GetLiveFilesMetaData(&files);
    std::vector<std::string> out;
    for (const auto& f : files) {
      if (f.column_family_name == family) out.push_back(dir_ + f.name);
    }
    return out;
  }
};

// Regression: a bit flip in a by_seq SST let the engine open with rows missing from its row
// index, and verify reported a row-count difference instead of corruption (it did not check
// its iterator's status). Format 2 builds the row index from the journal family itself.
TEST_F(CorruptionTest, ABitFlipInAnSstIsCorruptionNamingTheFile) {
  options_.write_buffer_bytes = 64 << 10;  // small memtables: rows reach SST files
  options_.max_rows = 1000000;
  Reopen();
  for (int i = 0; i < 3000; ++i) {
    EventInput in = Input("agent:main:s" + std::to_string(i % 50), "created", ActorType::kSystem);
    in.dedupe_key = "d" + std::to_string(i);
    Rec(in);
  }
  auto files = SstFilesOf("journal");
  ASSERT_FALSE(files.empty());
  const std::string& sst = files.front();
  {
    std::fstream f(sst, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(100);
    char c = 0;
    f.read(&c, 1);
    c ^= 0x08;
    f.seekp(100);
    f.write(&c, 1);
  }
  auto opened = Engine::Open(options_, dir_);
  Status st = opened.status();
  if (opened.ok()) {
    auto report = (*opened)->Verify();
    st = report.status();
  }
  ASSERT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.message().find(fs::path(sst).filename().string()), std::string::npos)
      << st.ToString();
  // And read-only (the `verify` verb): the same.
  EngineOptions ro = options_;
  ro.read_only = true;
  auto reader = Engine::Open(ro, dir_);
  Status rst = reader.ok() ? (*reader)->Verify().status() : reader.status();
  EXPECT_EQ(rst.code(), Status::Code::kCorruption) << rst.ToString();
}

// The fold at open reads each replayed event's journal row; one deleted behind the engine's
// back is Corruption naming the log position and the event, at open and read-only alike.
TEST_F(CorruptionTest, ALogRecordWhoseJournalRowIsGoneIsCorruptionAtOpen) {
  for (int i = 0; i < 5; ++i) Rec(Input("agent:main:a", "created", ActorType::kSystem));
  engine_.reset();
  {
    RawDb raw(dir_, /*read_only=*/false);
    rocksdb::ColumnFamilyHandle* journal = raw.Family("journal");
    ASSERT_NE(journal, nullptr);
    // One session: its rows are in sequence order; the third is sequence 3.
    std::unique_ptr<rocksdb::Iterator> it(raw.db()->NewIterator(rocksdb::ReadOptions(), journal));
    it->SeekToFirst();
    for (int i = 0; i < 2 && it->Valid(); ++i) it->Next();
    ASSERT_TRUE(it->Valid());
    ASSERT_OK(raw.db()->Delete(rocksdb::WriteOptions(), journal, it->key()));
  }
  for (bool read_only : {false, true}) {
    EngineOptions o = options_;
    o.read_only = read_only;
    auto opened = Engine::Open(o, dir_);
    ASSERT_EQ(opened.status().code(), Status::Code::kCorruption)
        << "read_only=" << read_only << ": " << opened.status().ToString();
    EXPECT_NE(opened.status().message().find("names event 3 of session #"), std::string::npos)
        << opened.status().ToString();
    EXPECT_NE(opened.status().message().find("its journal row is missing or damaged"),
              std::string::npos)
        << opened.status().ToString();
  }
}

// Regression: \u0000 inside a key was accepted (only invalid UTF-8 was refused).
TEST_F(CorruptionTest, NulInKeysIsRefusedLikeInvalidUtf8) {
  const std::string nul("a\0b", 3);
  EventInput in = Input("agent:main:" + nul, "created", ActorType::kSystem);
  auto r = engine_->Record(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "sessionKey must not contain a NUL character (\\u0000)");
  in = Input("global" + nul, "created", ActorType::kSystem);
  EXPECT_TRUE(engine_->Record(in).status().IsInvalidArgument());
  in = Input("global", "created", ActorType::kSystem);
  in.agent_id = "ma" + nul;
  EXPECT_TRUE(engine_->Record(in).status().IsInvalidArgument());
  in = Input("global", "created", ActorType::kSystem);
  in.dedupe_key = "dk" + nul;
  r = engine_->Record(in);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "dedupeKey must not contain a NUL character (\\u0000)");
  in = Input("agent:main:x", "human_direct_message");
  in.watchers = {"agent:main:" + nul};
  EXPECT_TRUE(engine_->Record(in).status().IsInvalidArgument());
  EXPECT_TRUE(engine_->Drain("agent:main:" + nul).status().IsInvalidArgument());
  EXPECT_FALSE(*engine_->Watch("agent:main:" + nul, Name("agent:main:x")));
  EXPECT_EQ(engine_->Stats()->last_sequence, 0u) << "nothing was written";
}

}  // namespace
}  // namespace statewatch::testing

// The on-disk format (engine/records.h, kFormatVersion): a format-1 database — projections
// written in every commit, a log record per sequence, by_seq, dedupe and base families — is
// migrated at open; a format newer than this build is refused, changing nothing; a read-only
// open of a format-1 database says how to migrate it; a build from before format 2 cannot
// open a format-2 database for writing.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>

#include "engine/engine_fixture.h"
#include "engine/records.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

constexpr char kParent[] = "agent:main:main";
constexpr char kChild[] = "agent:main:subagent:c";

class FormatTest : public EngineTest {
 protected:
  std::size_t EventsOf(const std::string& key) {
    auto p = engine_->ChangesSince(Name(key), 0, 200);
    EXPECT_OK(p);
    return p.ok() ? p->events.size() : 0;
  }
  // Rewrites the meta record's format (and, for format 1, adds what format 1 kept).
  void SetFormat(uint32_t format) {
    engine_.reset();
    auto store = storage::Store::Open(dir_, storage::StoreOptions{});
    ASSERT_OK(store);
    auto bytes = (*store)->Get(storage::Family::kMeta, storage::MetaKey());
    ASSERT_OK(bytes);
    ASSERT_TRUE(bytes->has_value());
    auto meta = engine::DecodeMeta(**bytes);
    ASSERT_OK(meta);
    meta->format_version = format;
    meta->applied_position = 0;
    storage::Batch b(**store);
    b.Put(storage::Family::kMeta, storage::MetaKey(), engine::EncodeMeta(*meta));
    if (format == 1) {
      b.Put(storage::Family::kLog, storage::LogKey(meta->last_sequence), "a format-1 log record");
      b.Put(storage::Family::kBySeq, storage::BySeqKey(1), "by_seq");
      b.Put(storage::Family::kDedupe, storage::DedupeKey("d"), "dedupe");
    }
    ASSERT_OK((*store)->Write(b, /*sync=*/true));
  }
};

TEST_F(FormatTest, AFormat1DatabaseIsMigratedAtOpenKeepingEverything) {
  Spawn(kParent, kChild);
  Sequence last = Human(kChild);
  // Format 1 kept every projection current: a full checkpoint stands in for that.
  ASSERT_OK(engine_->Rebuild());
  ASSERT_NO_FATAL_FAILURE(SetFormat(1));
  Reopen();
  EXPECT_EQ(*engine_->StateVersion(Name(kChild)), last);
  ASSERT_EQ(Pending(kParent).size(), 1u);
  EXPECT_EQ(EventsOf(kChild), 2u);
  auto v = engine_->Verify();
  ASSERT_OK(v);
  EXPECT_TRUE(v->ok) << (v->differences.empty() ? "" : v->differences.front());
  EXPECT_GT(Human(kChild), last);  // writes go on, in format 2
  Reopen();
  EXPECT_EQ(Pending(kParent).size(), 1u);
  EXPECT_TRUE(engine_->Verify()->ok);
}

TEST_F(FormatTest, ANewerFormatIsRefusedAndLeftAlone) {
  Human(kParent);
  ASSERT_OK(engine_->Rebuild());
  ASSERT_NO_FATAL_FAILURE(SetFormat(engine::kFormatVersion + 1));
  auto opened = Engine::Open(options_, dir_);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_NE(opened.status().message().find("format " + std::to_string(engine::kFormatVersion + 1)),
            std::string::npos)
      << opened.status().ToString();
  // Still refused the second time: nothing was rewritten.
  EXPECT_FALSE(Engine::Open(options_, dir_).ok());
}

TEST_F(FormatTest, AReadOnlyOpenOfFormat1SaysHowToMigrate) {
  Human(kParent);
  ASSERT_OK(engine_->Rebuild());
  ASSERT_NO_FATAL_FAILURE(SetFormat(1));
  EngineOptions ro = options_;
  ro.read_only = true;
  auto opened = Engine::Open(ro, dir_);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("open it once for writing"), std::string::npos)
      << opened.status().ToString();
}

// A build from before format 2 checked no format version: writing, it would have taken the
// last checkpoint for the current state and handed out sequences again.
TEST_F(FormatTest, ABuildFromBeforeFormat2CannotOpenItForWriting) {
  Human(kParent);
  engine_.reset();
  rocksdb::Options o;
  std::vector<std::string> names;
  ASSERT_OK(rocksdb::DB::ListColumnFamilies(o, dir_, &names));
  ASSERT_NE(std::find(names.begin(), names.end(), "format_2"), names.end());
  // What such a build opens: every family it knows, i.e. all but the fence.
  std::vector<rocksdb::ColumnFamilyDescriptor> descs;
  for (const auto& n : names) {
    if (n != "format_2") descs.emplace_back(n, rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, dir_, descs, &handles, &db);
  if (s.ok()) {  // reached only if the fence failed: clean up before failing
    for (auto* h : handles) db->DestroyColumnFamilyHandle(h);
    delete db;
  }
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("format_2"), std::string::npos) << s.ToString();
  // This build still opens it, read-only too.
  EngineOptions ro = options_;
  ro.read_only = true;
  EXPECT_OK(Engine::Open(ro, dir_));
  Reopen();
  EXPECT_EQ(engine_->ChangesSince(Name(kParent), 0, 10)->events.size(), 1u);
}

}  // namespace
}  // namespace statewatch::testing

// The body of a replicated commit group (cluster/commit_codec.h): every keyed write comes
// back in order, by family, and a damaged body is refused.
#include "cluster/commit_codec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::cluster {
namespace {

using storage::Batch;
using storage::Family;

std::vector<std::string> Listed(const Batch& b) {
  std::vector<std::string> out;
  Status st = b.ForEachWrite([&](const Batch::Write& w) {
    out.push_back(std::to_string(static_cast<int>(w.op)) + "/" +
                  std::to_string(static_cast<int>(w.family)) + "/" + std::string(w.key) + "/" +
                  std::string(w.value));
  });
  EXPECT_OK(st);
  return out;
}

class CommitCodecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = statewatch::testing::NewTempDir("codec");
    auto s = storage::Store::Open(dir_, storage::StoreOptions{});
    ASSERT_OK(s);
    store_ = std::move(*s);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
  std::unique_ptr<storage::Store> store_;
};

TEST_F(CommitCodecTest, EveryWriteComesBackInOrderByFamily) {
  Batch in(*store_);
  in.Put(Family::kJournal, "j1", "row");
  in.Delete(Family::kCursors, "c1");
  in.DeleteRange(Family::kTranscripts, "t1", "t9");
  in.Put(Family::kUpstream, "u1", std::string("\0bin", 4));
  auto body = EncodeClusterCommit("the record", &in);
  ASSERT_OK(body);
  Batch out(*store_);
  auto record = DecodeClusterCommit(*body, &out);
  ASSERT_OK(record);
  EXPECT_EQ(*record, "the record");
  EXPECT_EQ(Listed(out), Listed(in));
  EXPECT_EQ(out.Count(), 4u);
}

TEST_F(CommitCodecTest, ARecordWithoutWritesRoundTrips) {
  auto body = EncodeClusterCommit("only a record", nullptr);
  ASSERT_OK(body);
  Batch out(*store_);
  auto record = DecodeClusterCommit(*body, &out);
  ASSERT_OK(record);
  EXPECT_EQ(*record, "only a record");
  EXPECT_EQ(out.Count(), 0u);
}

TEST_F(CommitCodecTest, ADamagedBodyIsCorruption) {
  Batch out(*store_);
  auto record = DecodeClusterCommit("not a flatbuffer", &out);
  ASSERT_FALSE(record.ok());
  EXPECT_NE(record.status().ToString().find("16 bytes"), std::string::npos)
      << record.status().ToString();
  EXPECT_EQ(out.Count(), 0u);
}

}  // namespace
}  // namespace statewatch::cluster

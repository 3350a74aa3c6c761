// The body of a replicated commit group (cluster/commit_codec.h): every keyed write comes
// back in order, by family, and a damaged body is refused.
#include "cluster/commit_codec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "engine/row_index.h"
#include "schema/cluster_commit_generated.h"
#include "schema/statewatch_generated.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
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

// by_seq changed shape in format 4 (a run per group, not an entry per row), and its wire id
// with it: a frame from a format-3 build is read as one-row runs, and this build's runs carry
// an id a format-3 build refuses as unknown.
TEST_F(CommitCodecTest, AFormat3BySeqEntryComesBackAsAOneRowRun) {
  flatbuffers::FlatBufferBuilder row;
  row.Finish(schema::CreateRowIndex(row, /*session=*/7, /*occurred_at=*/1234,
                                    row.CreateString("dedupe-key")));
  flatbuffers::FlatBufferBuilder b;
  auto bytes = [&](std::string_view s) {
    return b.CreateVector(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  const std::string key = storage::BySeqKey(42);
  auto write = fb::CreateKeyedWrite(
      b, fb::WriteOp::Put, kBySeqFormat3WireId, bytes(key),
      b.CreateVector(row.GetBufferPointer(), row.GetSize()));
  b.Finish(fb::CreateClusterCommit(b, bytes("rec"), b.CreateVector(&write, 1)));
  Batch out(*store_);
  auto record = DecodeClusterCommit(
      std::string_view(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize()), &out);
  ASSERT_OK(record);
  int writes = 0;
  ASSERT_OK(out.ForEachWrite([&](const Batch::Write& w) {
    ++writes;
    EXPECT_EQ(w.family, Family::kBySeq);
    EXPECT_EQ(w.key, key);
    std::vector<engine::IndexedRow> run;
    ASSERT_OK(engine::DecodeRowRun(42, w.value, &run));
    ASSERT_EQ(run.size(), 1u);
    EXPECT_EQ(run[0].sequence, 42u);
    EXPECT_EQ(run[0].session.value, 7u);
    EXPECT_EQ(run[0].occurred_at, 1234);
    EXPECT_TRUE(run[0].keyed);
  }));
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(FamilyWireId(Family::kBySeq), kBySeqRunsWireId);
  EXPECT_NE(kBySeqRunsWireId, kBySeqFormat3WireId);
}

}  // namespace
}  // namespace statewatch::cluster

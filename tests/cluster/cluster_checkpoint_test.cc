// Cluster checkpoints (docs/cluster-internals.md, "Checkpoints and purge"): an owner writes
// them off the commit path and purges the stream below them; a new owner or a standby that
// fell behind restores from them.

#include "cluster/replicated_log_fixture.h"

namespace statewatch::cluster {
namespace {

using namespace replicated_log_testing;  // NOLINT(build/namespaces): the fixtures

TEST_F(ClusterCheckpointTest, AnOwnerWritesCheckpointsAndPurgesTheStreamBelowThem) {
  auto state = std::make_shared<PartitionState>(0);
  auto a = OwnerWithCheckpoints(NewDir(), 12, state);
  ASSERT_NE(a, nullptr);
  log::Checkpoint cp = Latest();
  ASSERT_GT(cp.position, 10u);
  EXPECT_EQ(FirstRetained(), cp.position + 1);
  EXPECT_EQ(remote_->ReadFrom(1, 1).status().code(), Status::Code::kNotFound);
  EXPECT_EQ(state->view().checkpoint_position, cp.position);
  auto applied = InspectSnapshot(cp.data);
  ASSERT_OK(applied);
  EXPECT_EQ(applied->position, cp.position);
  // The rest of the stream chains onto the checkpoint's chain state.
  auto chain = log::VerifyLogChain(*remote_, cp.position + 1, log::ChainVerifier(applied->chain));
  ASSERT_OK(chain);
}

TEST_F(ClusterCheckpointTest, AnEmptyNodeTakesOverFromTheCheckpointAndTheRestOfTheStream) {
  std::string served;
  {
    auto a = OwnerWithCheckpoints(NewDir(), 12);
    ASSERT_NE(a, nullptr);
    served = Digest(*a);
  }
  const log::LogPosition purged_below = FirstRetained();
  ASSERT_GT(purged_below, 1u);
  auto state = std::make_shared<PartitionState>(0);
  auto b = TryOpenOwner(NewDir(), "node-b", checkpoints_, 10, state);
  ASSERT_OK(b);
  EXPECT_EQ(Digest(**b), served);
  EXPECT_GE(state->view().checkpoint_position, purged_below - 1);
  auto report = (*b)->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok);
  // Writes continue the chain, dedupe keys from before the checkpoint included.
  auto again = (*b)->Record(Input(kSessions[0], kSessions[0] + "/1"));
  ASSERT_OK(again);
  EXPECT_TRUE(again->deduplicated);
  for (int round = 12; round < 15; ++round) Work(**b, round);
  log::Checkpoint cp = Latest();
  auto applied = InspectSnapshot(cp.data);
  ASSERT_OK(applied);
  auto chain = log::VerifyLogChain(*remote_, cp.position + 1, log::ChainVerifier(applied->chain));
  ASSERT_OK(chain);
  EXPECT_EQ(chain->fence_epoch, 2u);
}

TEST_F(ClusterCheckpointTest, AStandbyThatFellBehindThePurgeRestoresAndFollowsOn) {
  std::string a_dir = NewDir();
  auto a = OwnerWithCheckpoints(a_dir, 1);
  ASSERT_NE(a, nullptr);
  std::string standby_dir = NewDir();
  auto state = std::make_shared<PartitionState>(0);
  auto follow = [&] { return FollowInto(standby_dir, state); };
  ASSERT_OK(follow());
  const log::LogPosition behind = AppliedIn(standby_dir).position;
  for (int round = 1; round < 12; ++round) Work(*a, round);
  ASSERT_GT(FirstRetained(), behind + 1);  // the standby's next position is gone
  Status st = follow();
  ASSERT_OK(st);
  EXPECT_EQ(AppliedIn(standby_dir).position, *remote_->Tail());
  EXPECT_EQ(state->view().checkpoint_position, Latest().position);
  ExpectSameAsOwner(standby_dir, *a);
  Work(*a, 12);  // and follows on frame by frame
  ASSERT_OK(follow());
  EXPECT_EQ(AppliedIn(standby_dir).position, *remote_->Tail());
  std::string served = Digest(*a);
  a.reset();
  auto b = OpenOwner(standby_dir, "node-b");  // the takeover has little left to fold
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Digest(*b), served);
}

TEST_F(ClusterCheckpointTest, ANewOwnerCountsItsFirstCheckpointFromTheStreamsLatest) {
  std::string dir = NewDir();
  log::LogPosition written = 0;
  {
    auto a = OwnerWithCheckpoints(dir, 30);  // every 10 positions, well past 100
    ASSERT_NE(a, nullptr);
    written = Latest().position;
    ASSERT_GT(written, 100u);
  }
  // The returning node restores nothing (its directory is current), so only the store says
  // where the last checkpoint is: with one due every 100 positions, its first commits write
  // none (counted from position 0, one would be due at once).
  auto b = TryOpenOwner(dir, "node-b", checkpoints_, 100);
  ASSERT_OK(b);
  ASSERT_OK((*b)->Record(Input(kSessions[0])));
  ASSERT_OK((*b)->Record(Input(kSessions[1])));
  EXPECT_EQ(Latest().position, written);
}

// A CheckpointStore whose Write holds until the test releases it (bounded: 30 s).
class HeldCheckpointStore final : public log::CheckpointStore {
 public:
  Status Write(const log::Checkpoint& checkpoint) override {
    std::unique_lock lock(mu_);
    ++writes_entered_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(30), [&] { return released_; })) {
      return Status::IOError("the test never released the write");
    }
    lock.unlock();
    return stored_.Write(checkpoint);
  }
  Result<std::optional<log::Checkpoint>> Latest() override { return stored_.Latest(); }
  bool WaitEntered() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return writes_entered_ > 0; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int writes_entered_ = 0;
  bool released_ = false;
  log::MemCheckpointStore stored_;
};

TEST_F(ClusterCheckpointTest, ACheckpointIsPublishedOffTheCommitPathThenTheStreamIsPurged) {
  checkpoint_in_background_ = true;
  auto held = std::make_shared<HeldCheckpointStore>();
  auto state = std::make_shared<PartitionState>(0);
  auto a = TryOpenOwner(NewDir(), "node-a", held, 10, state);
  ASSERT_OK(a);
  for (int round = 0; round < 4; ++round) Work(**a, round);  // past 10 positions
  ASSERT_TRUE(held->WaitEntered()) << "no checkpoint was started";
  // The publish is held: writes still commit, and nothing is purged before it is stored.
  for (int round = 4; round < 8; ++round) Work(**a, round);
  EXPECT_OK((*a)->Record(Input(kSessions[0])));
  EXPECT_EQ(FirstRetained(), 1u);
  EXPECT_EQ(state->view().checkpoint_position, 0u);
  held->Release();
  a->reset();  // closing waits for the publish in flight: stored, then the stream purged
  auto latest = held->Latest();
  ASSERT_OK(latest);
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ(FirstRetained(), (*latest)->position + 1);
  EXPECT_EQ(state->view().checkpoint_position, (*latest)->position);
}

// A crash part-way through a restore leaves the replacement marker beside part of the old
// state (storage/store_replace.h). Cut off twice here, as a crash would leave it: once just
// after the first keys were deleted, once with every key gone. A read-only or single-node
// open refuses the directory and changes nothing; the standby's next open and a takeover
// empty it and restore again, to the owner's state.
TEST_F(ClusterCheckpointTest, ARestoreCutOffPartWayIsEmptiedAndRestoredAgain) {
  auto a = OwnerWithCheckpoints(NewDir(), 1);
  ASSERT_NE(a, nullptr);
  std::string standby_dir = NewDir();
  auto follow = [&] { return FollowInto(standby_dir); };
  ASSERT_OK(follow());
  for (int round = 1; round < 12; ++round) Work(*a, round);
  ASSERT_GT(FirstRetained(), AppliedIn(standby_dir).position + 1);  // the next fold restores
  auto cut_off = [&](bool every_key) {
    auto store = storage::Store::Open(standby_dir, storage::StoreOptions{});
    ASSERT_OK(store);
    ASSERT_OK(storage::BeginReplace(**store));
    if (every_key) {
      ASSERT_OK(storage::DeleteEveryKeyButTheMarker(**store));
      return;
    }
    storage::Batch first(**store);  // the first keys of the clear: the node's positions
    first.Delete(storage::Family::kMeta, AppliedStateKey());
    first.Delete(storage::Family::kMeta, storage::MetaKey());
    ASSERT_OK((*store)->Write(first, /*sync=*/true));
  };
  cut_off(/*every_key=*/false);
  EngineOptions reader;
  reader.clock = clock_;
  reader.read_only = true;
  const std::string refusal =
      "Failed precondition: a cluster checkpoint restore into this database was cut off "
      "part-way, so it holds neither the old state nor the checkpoint's; only the "
      "partition's stream can rebuild it: statewatch cluster follow, or serve --cluster, on "
      "this directory finishes it";
  auto view = Engine::Open(reader, standby_dir);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().ToString(), refusal);
  EngineOptions single;
  single.clock = clock_;
  auto alone = Engine::Open(single, standby_dir);
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().ToString(), refusal);
  {
    auto store = storage::Store::Open(standby_dir, storage::StoreOptions{});
    ASSERT_OK(store);
    auto marked = storage::ReplaceInterrupted(**store);
    ASSERT_OK(marked);
    EXPECT_TRUE(*marked);  // the refusals changed nothing
  }
  Status st = follow();
  ASSERT_OK(st);
  EXPECT_EQ(AppliedIn(standby_dir).position, *remote_->Tail());
  ExpectSameAsOwner(standby_dir, *a);
  // Cut off again, every key gone; this time the owner's open — a takeover — finds it.
  for (int round = 12; round < 24; ++round) Work(*a, round);
  cut_off(/*every_key=*/true);
  std::string served = Digest(*a);
  a.reset();
  auto b = TryOpenOwner(standby_dir, "node-b", checkpoints_, 10);
  ASSERT_OK(b);
  EXPECT_EQ(Digest(**b), served);
  auto report = (*b)->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok);
}

TEST_F(ClusterCheckpointTest, ACheckpointThatDoesNotChainOntoTheStreamIsRefused) {
  // Another stream's checkpoint: same partition, same work, another owner's fence.
  auto other_checkpoints = std::make_shared<log::MemCheckpointStore>();
  {
    auto other_remote = std::make_shared<log::MemLog>(log::MemLogOptions{});
    std::swap(other_remote, remote_);
    auto c = TryOpenOwner(NewDir(), "node-c", other_checkpoints, 10);
    ASSERT_OK(c);
    for (int round = 0; round < 3; ++round) Work(**c, round);
    std::swap(other_remote, remote_);
  }
  auto foreign = other_checkpoints->Latest();
  ASSERT_OK(foreign);
  ASSERT_TRUE(foreign->has_value());
  const log::LogPosition at = (*foreign)->position;
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  for (int round = 0; round < 6; ++round) Work(*a, round);
  ASSERT_GT(*remote_->Tail(), at + 1);
  ASSERT_OK(remote_->PurgeBelow(at));

  std::string standby_dir = NewDir();
  FoldOptions fold;
  fold.checkpoints = other_checkpoints;
  auto standby = Standby::Open(standby_dir, remote_, 0, 1, fold);
  ASSERT_OK(standby);
  Status st = (*standby)->CatchUp();
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.ToString();
  EXPECT_NE(st.ToString().find("position " + std::to_string(at + 1)), std::string::npos)
      << st.ToString();
  EXPECT_EQ((*standby)->applied().position, 0u);  // nothing restored
  standby->reset();
  EXPECT_EQ(AppliedIn(standby_dir).position, 0u);
}

TEST_F(ClusterCheckpointTest, APurgedStreamWithoutAUsableCheckpointIsRefusedWithPositions) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  for (int round = 0; round < 3; ++round) Work(*a, round);
  ASSERT_OK(remote_->PurgeBelow(8));
  auto not_far_enough = std::make_shared<log::MemCheckpointStore>();
  ASSERT_OK(not_far_enough->Write({5, "not even read"}));
  struct Case {
    std::string what;
    std::shared_ptr<log::CheckpointStore> checkpoints;
    std::string says;
  };
  std::vector<Case> cases = {
      {"no store", nullptr, "no checkpoint store"},
      {"no checkpoint", std::make_shared<log::MemCheckpointStore>(), "there is no checkpoint"},
      {"not far enough", not_far_enough, "position 5"},
  };
  for (const Case& c : cases) {
    std::string dir = NewDir();
    FoldOptions fold;
    fold.checkpoints = c.checkpoints;
    auto standby = Standby::Open(dir, remote_, 0, 1, fold);
    ASSERT_OK(standby);
    Status st = (*standby)->CatchUp();
    EXPECT_EQ(st.code(), Status::Code::kFailedPrecondition) << c.what << ": " << st.ToString();
    EXPECT_NE(st.ToString().find("position 1"), std::string::npos) << st.ToString();
    EXPECT_NE(st.ToString().find(c.says), std::string::npos) << st.ToString();
    EXPECT_EQ((*standby)->applied().position, 0u);
  }
  // A takeover on an empty directory is refused the same way.
  auto b = TryOpenOwner(NewDir(), "node-b", not_far_enough, 10);
  EXPECT_EQ(b.status().code(), Status::Code::kFailedPrecondition) << b.status().ToString();
}

TEST_F(ClusterCheckpointTest, AFencedOutOwnerWritesNoCheckpoint) {
  // Owners on bare stores: each frame carries an empty engine commit group (no sequence,
  // so the fold's counter check has nothing to compare), told apart by its commit time.
  auto open = [&](const std::string& dir, const std::string& node,
                  std::unique_ptr<storage::Store>* store) -> std::unique_ptr<ReplicatedLog> {
    auto s = storage::Store::Open(dir, storage::StoreOptions{});
    EXPECT_OK(s);
    *store = std::move(*s);
    auto local = storage::LocalLog::Open(store->get(), 0);
    EXPECT_OK(local);
    ReplicatedLogOptions ro;
    ro.node = node;
    ro.retry = log::RetryPolicy{20, nullptr};
    ro.checkpoints = checkpoints_;
    ro.checkpoint_every = 1;
    ro.checkpoint_in_background = false;
    auto owner = ReplicatedLog::OpenAsOwner(store->get(), std::move(*local), remote_, ro);
    EXPECT_OK(owner);
    return owner.ok() ? std::move(*owner) : nullptr;
  };
  auto append = [](ReplicatedLog& log, const std::string& name) {
    engine::GroupRec group;
    group.committed_at = kStart + static_cast<int64_t>(name.size());
    engine::GroupEncoder encoder;
    log::AppendOptions o;
    auto tail = log.Tail();
    o.expected_last = tail.ok() ? *tail : 0;
    return log.Append(encoder.Encode(group), o);
  };
  std::unique_ptr<storage::Store> store_a, store_b;
  auto a = open(NewDir(), "node-a", &store_a);
  ASSERT_NE(a, nullptr);
  ASSERT_OK(append(*a, "one"));
  ASSERT_OK(append(*a, "two"));
  auto b = open(NewDir(), "node-b", &store_b);  // fences a out
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(append(*a, "three").ok());
  ASSERT_TRUE(a->closed());
  ASSERT_OK(a->PurgeBelow(1));
  auto latest = checkpoints_->Latest();
  ASSERT_OK(latest);
  EXPECT_FALSE(latest->has_value());  // the fenced-out owner wrote none
  EXPECT_OK(remote_->ReadFrom(1, 1));  // and purged nothing
  // The owner that is not fenced out does.
  ASSERT_OK(append(*b, "four"));
  ASSERT_OK(b->PurgeBelow(1));
  latest = checkpoints_->Latest();
  ASSERT_OK(latest);
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->position, b->remote_position());
  EXPECT_EQ(FirstRetained(), b->remote_position() + 1);
  b.reset();
  a.reset();
}

// A figure, not an assertion: the checkpoint's and the restore's times are in the
// event=cluster_checkpoint and event=cluster_checkpoint_restored log lines.
TEST_F(ClusterCheckpointTest, AThousandsOfRowsCheckpointIsWrittenAndRestoredWhole) {
  constexpr int kEvents = 5000;
  std::string served;
  {
    auto a = TryOpenOwner(NewDir(), "node-a", checkpoints_, kEvents);
    ASSERT_OK(a);
    for (int i = 0; i < kEvents + 10; ++i) {
      ASSERT_OK((*a)->Record(Input(kSessions[i % 3], "k" + std::to_string(i))));
    }
    served = Digest(**a);
  }
  log::Checkpoint cp = Latest();
  ASSERT_GE(cp.position, static_cast<log::LogPosition>(kEvents));
  auto b = TryOpenOwner(NewDir(), "node-b", checkpoints_, kEvents);
  ASSERT_OK(b);
  EXPECT_EQ(Digest(**b), served);
}

}  // namespace
}  // namespace statewatch::cluster

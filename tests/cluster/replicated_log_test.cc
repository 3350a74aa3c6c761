// The engine on a replicated partition log (cluster/replicated_log.h), with MemLog as the
// stream: the fast tier of docs/cluster.md §4-§6. tests/log/jetstream runs the same log
// contract against real nats-servers.
#include "cluster/replicated_log.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cluster/checkpoint_codec.h"
#include "cluster/standby.h"
#include "engine/engine_fixture.h"
#include "engine/records.h"
#include "log/chain_verifier.h"
#include "log/mem_checkpoint_store.h"
#include "log/mem_log.h"
#include "statewatch/engine.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "storage/key_codec.h"
#include "storage/local_log.h"
#include "storage/store.h"
#include "storage/store_replace.h"

namespace statewatch::cluster {
namespace {

using statewatch::testing::NewTempDir;

constexpr int64_t kStart = 1764460800000;
const std::vector<std::string> kSessions = {"agent:main:a", "agent:main:b", "agent:main:c"};

SessionName Name(const std::string& key) { return SessionName{"main", key}; }

class ReplicatedLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    clock_ = std::make_shared<ManualClock>(kStart);
    log::MemLogOptions mo;
    mo.clock = clock_;
    remote_ = std::make_shared<log::MemLog>(mo);
  }
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }

  // Opens (or reopens) the node in `dir` as the partition's owner.
  std::unique_ptr<Engine> OpenOwner(const std::string& dir, const std::string& node) {
    auto e = TryOpenOwner(dir, node, nullptr, 0);
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  // With `checkpoints`: a cluster checkpoint every `every` stream positions, the engine's own
  // checkpoint as often as it may run.
  Result<std::unique_ptr<Engine>> TryOpenOwner(
      const std::string& dir, const std::string& node,
      std::shared_ptr<log::CheckpointStore> checkpoints, uint64_t every,
      std::shared_ptr<PartitionState> state = nullptr) {
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    ReplicatedLogOptions ro;
    ro.node = node;
    ro.retry = log::RetryPolicy{20, nullptr};
    ro.state = std::move(state);
    if (checkpoints) {
      ro.checkpoints = std::move(checkpoints);
      ro.checkpoint_every = every;
      ro.checkpoint_in_background = checkpoint_in_background_;
      o.checkpoint_min_records = 1;
    }
    o.wrap_log = OwnerLog(remote_, ro);
    return Engine::Open(o, dir);
  }
  std::string NewDir() { return dirs_.emplace_back(NewTempDir("cluster")); }

  static EventInput Input(const std::string& key, const std::string& dedupe = "") {
    EventInput in;
    in.session_key = key;
    in.kind = "human_direct_message";
    in.actor_type = ActorType::kHuman;
    in.summary = "hello " + key;
    in.dedupe_key = dedupe;
    return in;
  }

  // Journal, notices, registry and transcripts as text: equal digests, equal state.
  // A read-only engine on `dir` holds what `owner` serves, and verifies clean.
  void ExpectSameAsOwner(const std::string& dir, Engine& owner) {
    EngineOptions ro;
    ro.clock = clock_;
    ro.read_only = true;
    auto view = Engine::Open(ro, dir);
    ASSERT_OK(view);
    EXPECT_EQ(Digest(**view), Digest(owner));
    auto report = (*view)->Verify();
    ASSERT_OK(report);
    EXPECT_TRUE(report->ok);
  }

  static std::string Digest(Engine& e) {
    std::string out;
    for (const auto& key : kSessions) {
      auto page = e.ChangesSince(Name(key), 0, 1000);
      EXPECT_OK(page);
      if (!page.ok()) continue;
      out += key + " v" + std::to_string(page->state_version) + ":";
      for (const Event& ev : page->events) out += " " + std::to_string(ev.sequence) + ev.summary;
      auto notices = e.PendingNotices(key);
      if (notices.ok()) {
        for (const Notice& n : *notices) out += " |" + n.text;
      }
      auto transcript = SessionTablesView(e).RecentTranscript(Name(key), 100);
      if (transcript.ok()) {
        for (const auto& m : *transcript) out += " t" + std::to_string(m.index) + m.content_json;
      }
      out += "\n";
    }
    auto entry = SessionTablesView(e).GetSession(Name(kSessions[2]));  // the registry, a side table
    if (entry.ok() && entry->has_value()) out += "label " + (*entry)->label.value_or("-");
    return out;
  }

  // Events in every session, a watch, a registry entry and a transcript: each kind of write
  // a commit group carries.
  static void Work(Engine& e, int round) {
    for (const auto& key : kSessions) {
      auto r = e.Record(Input(key, round % 2 ? key + "/" + std::to_string(round) : ""));
      ASSERT_OK(r);
    }
    ASSERT_OK(e.Watch(kSessions[0], Name(kSessions[1])));
    SessionRecord rec;
    rec.name = Name(kSessions[2]);
    rec.label = "round " + std::to_string(round);
    ASSERT_OK(SessionTables(e).UpsertSession(rec));
    TranscriptMessage m;
    m.role = "user";
    m.content_json = "\"message " + std::to_string(round) + "\"";
    ASSERT_OK(SessionTables(e).AppendTranscript(Name(kSessions[2]), {m}));
  }

  std::shared_ptr<ManualClock> clock_;
  // Inline by default, so that a test sees each checkpoint as soon as its writes return.
  bool checkpoint_in_background_ = false;
  std::shared_ptr<log::MemLog> remote_;
  std::vector<std::string> dirs_;
};

TEST_F(ReplicatedLogTest, EveryCommitGroupIsOneFrameOfAVerifiedChain) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  for (int round = 0; round < 5; ++round) Work(*a, round);
  auto tail = remote_->Tail();
  ASSERT_OK(tail);
  EXPECT_GT(*tail, 5u);
  auto chain = log::VerifyLogChain(*remote_, 1, log::ChainVerifier(log::GenesisChainState(0, 1, 1)));
  ASSERT_OK(chain);
  EXPECT_EQ(chain->fence_epoch, 1u);  // the owner fenced once, at open
  EXPECT_EQ(chain->batch_no, *tail);
}

TEST_F(ReplicatedLogTest, AFoldOfTheStreamAloneRebuildsTheNode) {
  std::string before;
  {
    auto a = OpenOwner(NewDir(), "node-a");
    ASSERT_NE(a, nullptr);
    for (int round = 0; round < 6; ++round) Work(*a, round);
    before = Digest(*a);
  }
  // A node with an empty database takes the partition over: everything comes from the stream.
  auto b = OpenOwner(NewDir(), "node-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Digest(*b), before);
  auto report = b->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok);
  // A dedupe key the old owner recorded is still known: the retry gets the first answer.
  auto again = b->Record(Input(kSessions[0], kSessions[0] + "/1"));
  ASSERT_OK(again);
  EXPECT_TRUE(again->deduplicated);
}

TEST_F(ReplicatedLogTest, ATakeoverFencesTheOldOwnerOut) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  Work(*a, 0);
  auto b = OpenOwner(NewDir(), "node-b");  // while a is still running: a zombie from now on
  ASSERT_NE(b, nullptr);
  auto tail_at_fence = remote_->Tail();
  ASSERT_OK(tail_at_fence);
  auto zombie = a->Record(Input(kSessions[0]));
  ASSERT_FALSE(zombie.ok());
  EXPECT_NE(zombie.status().ToString().find("partition moved"), std::string::npos)
      << zombie.status().ToString();
  EXPECT_EQ(*remote_->Tail(), *tail_at_fence);  // nothing of the zombie landed
  EXPECT_FALSE(a->Record(Input(kSessions[1])).ok());  // and it acknowledges nothing more
  auto fresh = b->Record(Input(kSessions[0]));
  ASSERT_OK(fresh);
  auto chain = log::VerifyLogChain(*remote_, 1, log::ChainVerifier(log::GenesisChainState(0, 1, 1)));
  ASSERT_OK(chain);
  EXPECT_EQ(chain->fence_epoch, 2u);
}

TEST_F(ReplicatedLogTest, AReturningNodeFoldsWhatTheNewOwnerWrote) {
  std::string dir_a = NewDir();
  {
    auto a = OpenOwner(dir_a, "node-a");
    ASSERT_NE(a, nullptr);
    Work(*a, 0);
  }
  std::string after_b;
  {
    auto b = OpenOwner(NewDir(), "node-b");
    ASSERT_NE(b, nullptr);
    for (int round = 1; round < 4; ++round) Work(*b, round);
    after_b = Digest(*b);
  }
  auto a = OpenOwner(dir_a, "node-a");  // catches up from its applied position, fences again
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(Digest(*a), after_b);
}

TEST_F(ReplicatedLogTest, LostRequestsAndAcknowledgementsNeitherLoseNorDuplicate) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  log::MemLogFaults faults;
  faults.seed = 7;
  faults.lose_request = 0.2;
  faults.lose_ack = 0.2;
  remote_->SetFaults(faults);
  std::vector<Sequence> acknowledged;
  for (int i = 0; i < 200; ++i) {
    auto r = a->Record(Input(kSessions[i % 3]));
    ASSERT_OK(r);  // 20 attempts settle each unknown outcome
    acknowledged.push_back(r->event.sequence);
  }
  remote_->SetFaults({});
  EXPECT_GT(remote_->counters().lost_acks, 0u);
  std::string digest = Digest(*a);
  a.reset();
  auto b = OpenOwner(NewDir(), "node-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Digest(*b), digest);
  std::size_t events = 0;
  for (const auto& key : kSessions) events += b->ChangesSince(Name(key), 0, 1000)->events.size();
  EXPECT_EQ(events, acknowledged.size());
}

TEST_F(ReplicatedLogTest, AStandbyFollowsAndThenTakesOverWithTheSameState) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  Work(*a, 0);
  std::string standby_dir = NewDir();
  auto follow = [&]() -> uint64_t {
    auto standby = Standby::Open(standby_dir, remote_, 0, 1);
    EXPECT_OK(standby);
    if (!standby.ok()) return 0;
    Status st = (*standby)->CatchUp();
    EXPECT_OK(st);
    return (*standby)->applied().position;
  };
  EXPECT_EQ(follow(), *remote_->Tail());
  // What the standby holds is what the owner served, read without owning anything.
  ExpectSameAsOwner(standby_dir, *a);
  for (int round = 1; round < 3; ++round) Work(*a, round);
  EXPECT_EQ(follow(), *remote_->Tail());  // resumes where it stopped
  std::string served = Digest(*a);
  auto b = OpenOwner(standby_dir, "node-b");  // the takeover
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Digest(*b), served);
  EXPECT_FALSE(a->Record(Input(kSessions[0])).ok());
}

// ---- cluster checkpoints (docs/cluster.md §7) ----------------------------------------------

class ClusterCheckpointTest : public ReplicatedLogTest {
 protected:
  // The stream's first retained position: the lowest `from` ReadFrom accepts.
  log::LogPosition FirstRetained() {
    auto tail = remote_->Tail();
    EXPECT_OK(tail);
    for (log::LogPosition p = 1; p <= *tail; ++p) {
      if (remote_->ReadFrom(p, 1).ok()) return p;
    }
    return *tail + 1;
  }
  // An owner on `dir` that checkpoints every 10 positions, after `rounds` rounds of Work.
  std::unique_ptr<Engine> OwnerWithCheckpoints(const std::string& dir, int rounds,
                                               std::shared_ptr<PartitionState> state = nullptr) {
    auto e = TryOpenOwner(dir, "node-a", checkpoints_, 10, std::move(state));
    EXPECT_OK(e);
    if (!e.ok()) return nullptr;
    for (int round = 0; round < rounds; ++round) Work(**e, round);
    return std::move(*e);
  }
  log::Checkpoint Latest() {
    auto latest = checkpoints_->Latest();
    EXPECT_OK(latest);
    EXPECT_TRUE(latest.ok() && latest->has_value()) << "no checkpoint yet";
    return latest.ok() && latest->has_value() ? **latest : log::Checkpoint{};
  }
  // A standby on `dir` that folds the stream to its tail (restoring from the checkpoints
  // when it fell behind the purge), then closes.
  Status FollowInto(const std::string& dir, std::shared_ptr<PartitionState> state = nullptr) {
    FoldOptions fold;
    fold.checkpoints = checkpoints_;
    fold.state = std::move(state);
    auto standby = Standby::Open(dir, remote_, 0, 1, fold);
    if (!standby.ok()) return standby.status();
    return (*standby)->CatchUp();
  }
  // The applied state of a standby directory, opened and closed.
  AppliedState AppliedIn(const std::string& dir) {
    auto standby = Standby::Open(dir, remote_, 0, 1);
    EXPECT_OK(standby);
    return standby.ok() ? (*standby)->applied() : AppliedState{};
  }

  std::shared_ptr<log::MemCheckpointStore> checkpoints_ =
      std::make_shared<log::MemCheckpointStore>();
};

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

// The standby daemon's building blocks on MemLog: PartitionState's role changes, the
// ReplicatedLog that keeps it current (owned, appended, moved once fenced out), and the
// Follower loop (folds on its own thread, pauses for readers, stops on a broken chain).
#include "cluster/follower.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>

#include "cluster/partition_state.h"
#include "cluster/replicated_log.h"
#include "engine/engine_fixture.h"
#include "log/mem_log.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::cluster {
namespace {

using statewatch::testing::NewTempDir;
using statewatch::testing::WaitFor;

class FollowerTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  std::unique_ptr<Engine> OpenOwner(const std::string& node,
                                    std::shared_ptr<PartitionState> state) {
    EngineOptions o;
    o.clock = std::make_shared<ManualClock>(1764460800000);
    o.durability = Durability::kBuffered;
    ReplicatedLogOptions ro;
    ro.node = node;
    ro.retry = log::RetryPolicy{20, nullptr};
    ro.state = std::move(state);
    o.wrap_log = OwnerLog(remote_, ro);
    auto e = Engine::Open(o, NewDir());
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  std::string NewDir() { return dirs_.emplace_back(NewTempDir("follower")); }
  static EventInput Input(const std::string& summary) {
    return statewatch::testing::HumanEvent("agent:main:a", summary);
  }
  FollowerOptions Options(std::shared_ptr<PartitionState> state) {
    FollowerOptions fo;
    fo.path = NewDir();
    fo.remote = remote_;
    fo.state = std::move(state);
    fo.interval = std::chrono::milliseconds(1);
    return fo;
  }

  std::shared_ptr<log::MemLog> remote_ = std::make_shared<log::MemLog>();
  std::vector<std::string> dirs_;
};

TEST(PartitionStateTest, OnlyAStandbyStartsATakeoverAndMovedIsFinal) {
  PartitionState s(3);
  EXPECT_EQ(s.view().role, PartitionRole::kStandby);
  EXPECT_TRUE(s.BeginTakeover());
  EXPECT_FALSE(s.BeginTakeover());  // a second one while the first runs
  s.AbortTakeover();
  EXPECT_EQ(s.view().role, PartitionRole::kStandby);
  ASSERT_TRUE(s.BeginTakeover());
  s.Owned(4, 17);
  EXPECT_FALSE(s.BeginTakeover());
  PartitionView v = s.view();
  EXPECT_EQ(v.partition, 3u);
  EXPECT_EQ(v.epoch, 4u);
  EXPECT_EQ(v.taken_over_at, 17u);
  s.Moved("fenced");
  s.AbortTakeover();  // no effect: not switching
  EXPECT_EQ(s.view().role, PartitionRole::kMoved);
  EXPECT_EQ(s.view().moved_reason, "fenced");
  EXPECT_FALSE(s.BeginTakeover());
}

TEST_F(FollowerTest, TheOwnersStateIsOwnedThenAppendedThenMovedWhenFencedOut) {
  auto a_state = std::make_shared<PartitionState>(0, PartitionRole::kOwner);
  auto a = OpenOwner("node-a", a_state);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a_state->view().epoch, 1u);
  EXPECT_EQ(a_state->view().taken_over_at, 1u);  // the fence is the stream's first frame
  ASSERT_OK(a->Record(Input("one")));
  EXPECT_EQ(a_state->view().position, *remote_->Tail());

  auto b = OpenOwner("node-b", std::make_shared<PartitionState>(0));  // takes over
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(a_state->view().role, PartitionRole::kOwner);  // a learns at its next append
  EXPECT_FALSE(a->Record(Input("zombie")).ok());
  PartitionView moved = a_state->view();
  EXPECT_EQ(moved.role, PartitionRole::kMoved);
  EXPECT_NE(moved.moved_reason.find("partition moved: partition 0 has a newer owner than epoch 1"),
            std::string::npos)
      << moved.moved_reason;
}

TEST_F(FollowerTest, FollowsPausesForReadersAndStopsCleanly) {
  auto owner = OpenOwner("node-a", nullptr);
  ASSERT_NE(owner, nullptr);
  ASSERT_OK(owner->Record(Input("before")));
  auto state = std::make_shared<PartitionState>(0);
  FollowerOptions fo = Options(state);
  auto follower = Follower::Start(fo);
  ASSERT_OK(follower);
  EXPECT_EQ(state->view().position, *remote_->Tail());  // Start folds to the tail first
  EXPECT_EQ(state->view().epoch, 1u);

  ASSERT_OK(owner->Record(Input("after")));
  ASSERT_TRUE(WaitFor([&] { return state->view().position == *remote_->Tail(); }));
  uint64_t seen = 0;
  ASSERT_OK((*follower)->Paused([&](const AppliedState& a) {
    seen = a.position;
    return Status::OK();
  }));
  EXPECT_EQ(seen, *remote_->Tail());
  EXPECT_OK((*follower)->last_error());

  (*follower)->Stop();
  Status after_stop = (*follower)->Paused([](const AppliedState&) { return Status::OK(); });
  EXPECT_EQ(after_stop.code(), Status::Code::kFailedPrecondition) << after_stop.ToString();
  (*follower)->Stop();  // idempotent
  // The directory is closed: an engine can open it (as a takeover would).
  EngineOptions ro;
  ro.read_only = true;
  auto copy = Engine::Open(ro, fo.path);
  ASSERT_OK(copy);
  auto page = (*copy)->ChangesSince(SessionName{"main", "agent:main:a"}, 0, 10);
  ASSERT_OK(page);
  EXPECT_EQ(page->events.size(), 2u);
}

TEST_F(FollowerTest, ABrokenChainStopsTheLoopWithWhatWasAppliedKept) {
  auto owner = OpenOwner("node-a", nullptr);
  ASSERT_NE(owner, nullptr);
  ASSERT_OK(owner->Record(Input("good")));
  auto state = std::make_shared<PartitionState>(0);
  auto follower = Follower::Start(Options(state));
  ASSERT_OK(follower);
  const uint64_t good = state->view().position;
  log::AppendOptions append;
  append.expected_last = *remote_->Tail();
  ASSERT_OK(remote_->Append("not a frame", append));  // a writer outside the chain
  ASSERT_TRUE(WaitFor([&] { return !(*follower)->last_error().ok(); }));
  EXPECT_EQ((*follower)->last_error().code(), Status::Code::kCorruption)
      << (*follower)->last_error().ToString();
  EXPECT_EQ(state->view().position, good);
  EXPECT_OK((*follower)->Paused([](const AppliedState&) { return Status::OK(); }));
}

}  // namespace
}  // namespace statewatch::cluster

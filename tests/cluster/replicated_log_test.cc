// The engine on a replicated partition log (cluster/replicated_log.h), with MemLog as the
// stream: the fast tier of docs/cluster-internals.md, "The owner: append, then apply"
// through "Fencing and `statewatch takeover --partition p`". tests/log/jetstream runs the
// same log contract against real nats-servers.

#include "cluster/replicated_log_fixture.h"

namespace statewatch::cluster {
namespace {

using namespace replicated_log_testing;  // NOLINT(build/namespaces): the fixtures

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

}  // namespace
}  // namespace statewatch::cluster

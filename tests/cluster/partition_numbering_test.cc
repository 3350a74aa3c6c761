// Cluster numbering across owners, standbys and takeovers (MemLog streams): partition p of P
// numbers n * P + p wherever it is served, and the fold refuses a frame whose counters
// disagree with its commit group.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/commit_codec.h"
#include "cluster/replicated_log.h"
#include "cluster/standby.h"
#include "engine/engine_fixture.h"
#include "engine/records.h"
#include "log/chain_writer.h"
#include "log/mem_log.h"
#include "statewatch/engine.h"
#include "status_matchers.h"

namespace statewatch::cluster {
namespace {

using statewatch::testing::HumanEvent;
using statewatch::testing::NewTempDir;

constexpr int64_t kStart = 1764460800000;
// PartitionOfAgent(agent, 2): main -> 0, research -> 1 (tests/engine pins the hash).
const std::string kOnZero = "agent:main:a";
const std::string kOnOne = "agent:research:a";

class PartitionNumberingTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const auto& d : dirs_) std::filesystem::remove_all(d);
  }
  std::shared_ptr<log::MemLog> NewStream() {
    log::MemLogOptions mo;
    mo.clock = clock_;
    return std::make_shared<log::MemLog>(mo);
  }
  std::string NewDir() { return dirs_.emplace_back(NewTempDir("numbering")); }
  EngineOptions Options(uint32_t partition) {
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    o.partition = partition;
    o.partitions = 2;
    return o;
  }
  std::unique_ptr<Engine> OpenOwner(const std::string& dir, std::shared_ptr<log::MemLog> stream,
                                    uint32_t partition) {
    EngineOptions o = Options(partition);
    ReplicatedLogOptions ro;
    ro.partition = partition;
    ro.partitions = 2;
    ro.retry = log::RetryPolicy{20, nullptr};
    o.wrap_log = OwnerLog(std::move(stream), ro);
    auto e = Engine::Open(o, dir);
    EXPECT_OK(e);
    return e.ok() ? std::move(*e) : nullptr;
  }
  static Sequence Rec(Engine& e, const std::string& key) {
    auto r = e.Record(HumanEvent(key));
    EXPECT_OK(r);
    return r.ok() ? r->event.sequence : 0;
  }

  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>(kStart);
  std::vector<std::string> dirs_;
};

TEST_F(PartitionNumberingTest, TwoPartitionsOwnersHandOutDisjointSequences) {
  auto zero = OpenOwner(NewDir(), NewStream(), 0);
  auto one = OpenOwner(NewDir(), NewStream(), 1);
  ASSERT_NE(zero, nullptr);
  ASSERT_NE(one, nullptr);
  std::set<Sequence> seen;
  for (int i = 0; i < 5; ++i) {
    Sequence a = Rec(*zero, kOnZero);
    Sequence b = Rec(*one, kOnOne);
    EXPECT_EQ(a, 2u * (i + 1));
    EXPECT_EQ(b, 2u * (i + 1) + 1);
    EXPECT_TRUE(seen.insert(a).second);
    EXPECT_TRUE(seen.insert(b).second);
  }
  // Each refuses the other's sessions.
  EXPECT_EQ(zero->Record(HumanEvent(kOnOne)).status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(one->Record(HumanEvent(kOnZero)).status().code(), Status::Code::kMisdirected);
}

TEST_F(PartitionNumberingTest, AStandbyAndATakeoverOfPartitionOneContinueTheNumbering) {
  auto stream = NewStream();
  auto owner = OpenOwner(NewDir(), stream, 1);
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(Rec(*owner, kOnOne), 3u);
  EXPECT_EQ(Rec(*owner, kOnOne), 5u);
  ASSERT_OK(owner->Watch("agent:main:boss", SessionName{"research", kOnOne}));  // 7
  std::string standby_dir = NewDir();
  {
    auto standby = Standby::Open(standby_dir, stream, 1, 2);
    ASSERT_OK(standby);
    ASSERT_OK((*standby)->CatchUp());
  }
  {
    EngineOptions ro = Options(1);
    ro.read_only = true;
    auto view = Engine::Open(ro, standby_dir);
    ASSERT_OK(view);
    auto head = (*view)->StateVersion(SessionName{"research", kOnOne});
    ASSERT_OK(head);
    EXPECT_EQ(*head, 5u);
    auto report = (*view)->Verify();
    ASSERT_OK(report);
    EXPECT_TRUE(report->ok);
    // The standby's database knows its numbering: a read-only open told another one (as
    // `statewatch verify --data DIR` is, told none) reads under the stored one.
    ro.partition = 0;
    ro.partitions = 1;
    auto other = Engine::Open(ro, standby_dir);
    ASSERT_OK(other);
    auto same = (*other)->StateVersion(SessionName{"research", kOnOne});
    ASSERT_OK(same);
    EXPECT_EQ(*same, 5u);
  }
  auto takeover = OpenOwner(standby_dir, stream, 1);
  ASSERT_NE(takeover, nullptr);
  EXPECT_EQ(Rec(*takeover, kOnOne), 9u);
  EXPECT_FALSE(owner->Record(HumanEvent(kOnOne)).ok());  // fenced out
  takeover.reset();
  auto back = OpenOwner(standby_dir, stream, 1);  // reopen: replay under the same rule
  ASSERT_NE(back, nullptr);
  EXPECT_EQ(Rec(*back, kOnOne), 11u);
}

// One misnumbered frame and the error the fold refuses it with.
struct MisnumberedCase {
  const char* name;
  Sequence first;      // the first sequence the commit group names
  std::size_t events;  // events in the commit group
  uint32_t n_count;    // counter values the frame claims
  const char* error;
};

// A stream written by a sealer whose header disagrees with its commit group.
class MisnumberedFrameTest : public PartitionNumberingTest,
                             public ::testing::WithParamInterface<MisnumberedCase> {
 protected:
  // Appends a fence and then one commit group of `events` events that names `first` as its
  // first sequence, in a frame claiming `n_count` counter values.
  void Write(Sequence first, std::size_t events, uint32_t n_count) {
    auto writer = log::ChainWriter::Make(log::GenesisChainState(1, 2, /*first_n=*/1), 1);
    ASSERT_OK(writer);
    auto fence = writer->SealFence("node-x");
    ASSERT_OK(fence);
    log::AppendOptions append;
    ASSERT_OK(stream_->Append(fence->bytes, append));
    writer->Advance(*fence);
    engine::GroupRec rec;
    rec.committed_at = kStart;
    rec.first_sequence = first;
    rec.events.assign(events, SessionRef{1});
    engine::GroupEncoder encoder;
    auto body = EncodeClusterCommit(encoder.Encode(rec, /*with_first_sequence=*/true), nullptr);
    ASSERT_OK(body);
    auto sealed = writer->SealCommitGroup(*body, n_count);
    ASSERT_OK(sealed);
    append.expected_last = 1;
    ASSERT_OK(stream_->Append(sealed->bytes, append));
  }
  Status Fold() {
    auto standby = Standby::Open(NewDir(), stream_, 1, 2);
    if (!standby.ok()) return standby.status();
    return (*standby)->CatchUp();
  }
  std::shared_ptr<log::MemLog> stream_ = NewStream();
};

TEST_P(MisnumberedFrameTest, IsRefused) {
  const MisnumberedCase& c = GetParam();
  Write(c.first, c.events, c.n_count);
  EXPECT_EQ(Fold().ToString(), c.error);
}

INSTANTIATE_TEST_SUITE_P(
    Frames, MisnumberedFrameTest,
    ::testing::Values(
        MisnumberedCase{"MoreCountersThanItsGroupsSequences", /*first=*/3, /*events=*/1,
                        /*n_count=*/2,
                        "Corruption: stream position 2: the frame says 2 sequences but its "
                        "commit group has 1"},
        MisnumberedCase{"CounterIsNotItsGroupsFirstSequence", /*first=*/5, /*events=*/1,
                        /*n_count=*/1,
                        "Corruption: stream position 2: the frame says counter 1 (sequence 3) "
                        "but its commit group starts at sequence 5"}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace statewatch::cluster

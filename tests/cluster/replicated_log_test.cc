// The engine on a replicated partition log (cluster/replicated_log.h), with MemLog as the
// stream: the fast tier of docs/cluster.md §4-§6. tests/log/jetstream runs the same log
// contract against real nats-servers.
#include "cluster/replicated_log.h"
#include "cluster/standby.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine_fixture.h"
#include "log/chain_verifier.h"
#include "log/mem_log.h"
#include "statewatch/engine.h"
#include "statewatch/session_tables.h"

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
    EngineOptions o;
    o.clock = clock_;
    o.durability = Durability::kBuffered;
    ReplicatedLogOptions ro;
    ro.node = node;
    ro.retry = log::RetryPolicy{20, nullptr};
    o.wrap_log = OwnerLog(remote_, ro);
    auto e = Engine::Open(o, dir);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? std::move(*e) : nullptr;
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
  static std::string Digest(Engine& e) {
    std::string out;
    for (const auto& key : kSessions) {
      auto page = e.ChangesSince(Name(key), 0, 1000);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
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
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    ASSERT_TRUE(e.Watch(kSessions[0], Name(kSessions[1])).ok());
    SessionRecord rec;
    rec.name = Name(kSessions[2]);
    rec.label = "round " + std::to_string(round);
    ASSERT_TRUE(SessionTables(e).UpsertSession(rec).ok());
    TranscriptMessage m;
    m.role = "user";
    m.content_json = "\"message " + std::to_string(round) + "\"";
    ASSERT_TRUE(SessionTables(e).AppendTranscript(Name(kSessions[2]), {m}).ok());
  }

  std::shared_ptr<ManualClock> clock_;
  std::shared_ptr<log::MemLog> remote_;
  std::vector<std::string> dirs_;
};

TEST_F(ReplicatedLogTest, EveryCommitGroupIsOneFrameOfAVerifiedChain) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  for (int round = 0; round < 5; ++round) Work(*a, round);
  auto tail = remote_->Tail();
  ASSERT_TRUE(tail.ok());
  EXPECT_GT(*tail, 5u);
  auto chain = log::VerifyLogChain(*remote_, 1, log::ChainVerifier(log::GenesisChainState(0, 1, 1)));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
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
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->ok);
  // A dedupe key the old owner recorded is still known: the retry gets the first answer.
  auto again = b->Record(Input(kSessions[0], kSessions[0] + "/1"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->deduplicated);
}

TEST_F(ReplicatedLogTest, ATakeoverFencesTheOldOwnerOut) {
  auto a = OpenOwner(NewDir(), "node-a");
  ASSERT_NE(a, nullptr);
  Work(*a, 0);
  auto b = OpenOwner(NewDir(), "node-b");  // while a is still running: a zombie from now on
  ASSERT_NE(b, nullptr);
  auto tail_at_fence = remote_->Tail();
  ASSERT_TRUE(tail_at_fence.ok());
  auto zombie = a->Record(Input(kSessions[0]));
  ASSERT_FALSE(zombie.ok());
  EXPECT_NE(zombie.status().ToString().find("partition moved"), std::string::npos)
      << zombie.status().ToString();
  EXPECT_EQ(*remote_->Tail(), *tail_at_fence);  // nothing of the zombie landed
  EXPECT_FALSE(a->Record(Input(kSessions[1])).ok());  // and it acknowledges nothing more
  auto fresh = b->Record(Input(kSessions[0]));
  ASSERT_TRUE(fresh.ok()) << fresh.status().ToString();
  auto chain = log::VerifyLogChain(*remote_, 1, log::ChainVerifier(log::GenesisChainState(0, 1, 1)));
  ASSERT_TRUE(chain.ok()) << chain.status().ToString();
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
    ASSERT_TRUE(r.ok()) << r.status().ToString();  // 20 attempts settle each unknown outcome
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
    EXPECT_TRUE(standby.ok()) << standby.status().ToString();
    if (!standby.ok()) return 0;
    Status st = (*standby)->CatchUp();
    EXPECT_TRUE(st.ok()) << st.ToString();
    return (*standby)->applied().position;
  };
  EXPECT_EQ(follow(), *remote_->Tail());
  // What the standby holds is what the owner served, read without owning anything.
  EngineOptions ro;
  ro.clock = clock_;
  ro.read_only = true;
  {
    auto view = Engine::Open(ro, standby_dir);
    ASSERT_TRUE(view.ok()) << view.status().ToString();
    EXPECT_EQ(Digest(**view), Digest(*a));
    auto report = (*view)->Verify();
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_TRUE(report->ok);
  }
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

// Cluster numbering inside the engine: partition p of P hands out n * P + p (log/partition.h),
// persists its numbering, and refuses writes to another partition's sessions.
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "engine/agent_partition.h"
#include "engine_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

using engine::PartitionOfAgent;

// XXH64 (seed 0) of the agent id, mod P: persisted contract, DO NOT CHANGE these values.
TEST(AgentPartitionTest, TheHashIsPinned) {
  EXPECT_EQ(PartitionOfAgent("main", 2), 0u);
  EXPECT_EQ(PartitionOfAgent("research", 2), 1u);
  EXPECT_EQ(PartitionOfAgent("ops", 3), 1u);
  EXPECT_EQ(PartitionOfAgent("a1", 3), 2u);
  EXPECT_EQ(PartitionOfAgent("research", 7), 2u);
  EXPECT_EQ(PartitionOfAgent("a6", 7), 1u);
  EXPECT_EQ(PartitionOfAgent("", 7), 6u);  // XXH64("") = 0xef46db3751d8e999
  EXPECT_EQ(PartitionOfAgent("anything", 1), 0u);
}

// Partition 2 of 3: agents a1, a2 and a3 hash there; main (0) and ops (1) do not.
class PartitionNumberingTest : public EngineTest {
 protected:
  void SetUp() override {
    options_.partition = 2;
    options_.partitions = 3;
    EngineTest::SetUp();
  }
  Sequence Event(const std::string& agent) { return Human("agent:" + agent + ":main"); }
  Sequence Head(const std::string& agent) {
    auto v = engine_->StateVersion(Name("agent:" + agent + ":main"));
    EXPECT_OK(v);
    return v.ok() ? *v : 0;
  }
  uint64_t SinceCheckpoint() {
    auto s = engine_->Stats();
    EXPECT_OK(s);
    return s.ok() ? s->log_records_since_checkpoint : 0;
  }
};

TEST_F(PartitionNumberingTest, SequencesAreNTimesPPlusP) {
  EXPECT_EQ(Event("a1"), 5u);
  EXPECT_EQ(Event("a2"), 8u);
  // One group of several events: first, first + P, ...
  auto many = engine_->RecordMany({Input("agent:a1:main", "human_direct_message"),
                                   Input("agent:a2:main", "human_direct_message"),
                                   Input("agent:a3:main", "human_direct_message")});
  ASSERT_OK(many);
  EXPECT_EQ((*many)[0].event.sequence, 11u);
  EXPECT_EQ((*many)[1].event.sequence, 14u);
  EXPECT_EQ((*many)[2].event.sequence, 17u);
  // Non-event ops take sequences of the same rule: a registration (20), then an event.
  auto watched = engine_->Watch("agent:ops:boss", Name("agent:a1:main"));
  ASSERT_OK(watched);
  ASSERT_TRUE(*watched);
  EXPECT_EQ(Event("a1"), 23u);
  EXPECT_EQ(SinceCheckpoint(), 7u);  // sequences, not the span 23 - 0
  auto stats = engine_->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(stats->last_sequence, 23u);
}

TEST_F(PartitionNumberingTest, ReopenContinuesAndReplayAndVerifyAreClean) {
  EXPECT_EQ(Event("a1"), 5u);
  ASSERT_OK(engine_->Watch("agent:ops:boss", Name("agent:a2:main")));  // 8
  EXPECT_EQ(Event("a2"), 11u);
  Reopen();  // replays every group: nothing was checkpointed yet
  EXPECT_EQ(Head("a2"), 11u);
  EXPECT_EQ(Event("a3"), 14u);
  auto report = engine_->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok) << (report->differences.empty() ? "" : report->differences[0]);
  // A checkpoint (Rebuild writes one), then groups after it, then a replay from it.
  ASSERT_OK(engine_->Rebuild());
  EXPECT_EQ(SinceCheckpoint(), 0u);
  EXPECT_EQ(Event("a1"), 17u);
  EXPECT_EQ(Event("a2"), 20u);
  EXPECT_EQ(SinceCheckpoint(), 2u);
  Reopen();
  EXPECT_EQ(Head("a1"), 17u);
  EXPECT_EQ(Head("a2"), 20u);
  EXPECT_EQ(Event("a3"), 23u);
  report = engine_->Verify();
  ASSERT_OK(report);
  EXPECT_TRUE(report->ok) << (report->differences.empty() ? "" : report->differences[0]);
  auto page = engine_->ChangesSince(Name("agent:a1:main"), 0, 10);
  ASSERT_OK(page);
  ASSERT_EQ(page->events.size(), 2u);
  EXPECT_EQ(page->events[0].sequence, 5u);
  EXPECT_EQ(page->events[1].sequence, 17u);
}

// Delivery ids are numbered like sequences (n * P + p): an id names its partition, which is
// how a node routes an acknowledgement (POST /v1/deliveries/{id}/ack) without ?partition=.
TEST_F(PartitionNumberingTest, DeliveryIdsAreNTimesPPlusPAcrossReopens) {
  const Delivery d = MessageDelivery("a1", "agent:a1:main");
  std::vector<uint64_t> ids;
  for (int i = 0; i < 3; ++i) {
    auto id = SessionTables(*engine_).EnqueueDelivery(d);
    ASSERT_OK(id);
    ids.push_back(*id);
  }
  EXPECT_EQ(ids, (std::vector<uint64_t>{2, 5, 8}));
  Reopen();  // the counter replays with its group
  auto next = SessionTables(*engine_).EnqueueDelivery(d);
  ASSERT_OK(next);
  EXPECT_EQ(*next, 11u);
  auto pending = SessionTablesView(*engine_).PendingDeliveries("a1");
  ASSERT_OK(pending);
  ASSERT_EQ(pending->size(), 4u);
  for (const Delivery& each : *pending) EXPECT_EQ(each.id % 3, 2u) << each.id;
  EXPECT_TRUE(*SessionTables(*engine_).AckDelivery(5));
  EXPECT_FALSE(*SessionTables(*engine_).AckDelivery(6));  // never handed out here
}

TEST_F(PartitionNumberingTest, AnotherNumberingAtReopenIsRefusedAndChangesNothing) {
  EXPECT_EQ(Event("a1"), 5u);
  engine_.reset();
  for (auto [p, n] : {std::pair{2u, 4u}, std::pair{0u, 1u}, std::pair{1u, 3u}}) {
    EngineOptions other = options_;
    other.partition = p;
    other.partitions = n;
    auto e = Engine::Open(other, dir_);
    ASSERT_FALSE(e.ok());
    EXPECT_TRUE(e.status().IsInvalidArgument()) << e.status().ToString();
    EXPECT_EQ(e.status().message(),
              "the database numbers partition 2 of 3, but the options ask for partition " +
                  std::to_string(p) + " of " + std::to_string(n));
  }
  Reopen();
  EXPECT_EQ(Head("a1"), 5u);
  EXPECT_EQ(Event("a1"), 8u);
}

// `verify --data DIR` and the other read-only verbs are not told a partition's numbering.
TEST_F(PartitionNumberingTest, AReadOnlyOpenReadsUnderTheStoredNumbering) {
  EXPECT_EQ(Event("a1"), 5u);
  EXPECT_EQ(Event("a1"), 8u);
  engine_.reset();
  EngineOptions reader = options_;
  reader.partition = 0;
  reader.partitions = 1;
  reader.read_only = true;
  auto e = Engine::Open(reader, dir_);
  ASSERT_OK(e);
  auto head = (*e)->StateVersion(Name("agent:a1:main"));
  ASSERT_OK(head);
  EXPECT_EQ(*head, 8u);
  // ... and under it a read of another partition's session is Misdirected, as on the owner.
  auto elsewhere = (*e)->StateVersion(Name("agent:ops:x"));
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_EQ(elsewhere.status().code(), Status::Code::kMisdirected);
  auto verified = (*e)->Verify();
  ASSERT_OK(verified);
  EXPECT_TRUE(verified->ok) << (verified->differences.empty() ? "" : verified->differences[0]);
  e->reset();
  Reopen();  // the database still numbers partition 2 of 3
  EXPECT_EQ(Event("a1"), 11u);
}

TEST_F(EngineTest, ASingleNodeDatabaseIsNotOpenedAsAPartition) {
  EXPECT_EQ(Human("agent:a1:main"), 1u);  // no checkpoint yet: the meta record is absent
  engine_.reset();
  EngineOptions cluster = options_;
  cluster.partition = 2;
  cluster.partitions = 3;
  auto e = Engine::Open(cluster, dir_);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().ToString(),
            "Invalid argument: the database numbers partition 0 of 1, but the options ask for "
            "partition 2 of 3");
  Reopen();
  EXPECT_EQ(Human("agent:a1:main"), 2u);
  ASSERT_OK(engine_->Rebuild());  // now a meta record holds 0 of 1
  engine_.reset();
  e = Engine::Open(cluster, dir_);
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(e.status().IsInvalidArgument()) << e.status().ToString();
  Reopen();
  EXPECT_EQ(Human("agent:a1:main"), 3u);
}

TEST_F(PartitionNumberingTest, BadNumberingOptionsAreRefusedBeforeAnythingIsCreated) {
  std::string fresh = dir_ + "/fresh";
  EngineOptions bad = options_;
  bad.partitions = 0;
  bad.partition = 0;
  auto e = Engine::Open(bad, fresh);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().ToString(), "Invalid argument: partitions must be at least 1 (got 0)");
  bad.partitions = 3;
  bad.partition = 3;
  e = Engine::Open(bad, fresh);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().ToString(),
            "Invalid argument: partition must be below partitions 3 (got 3)");
  EXPECT_FALSE(std::filesystem::exists(fresh));
}

TEST_F(PartitionNumberingTest, WritesToAnotherPartitionsSessionAreMisdirected) {
  EXPECT_EQ(Event("a1"), 5u);
  auto r = engine_->Record(Input("agent:ops:x", "human_direct_message"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(r.status().message(),
            "session agent:ops:x (agent ops) belongs to partition 1 of 3; this node owns "
            "partition 2: send it to partition 1's owner");
  // One misdirected event refuses the whole call.
  auto many = engine_->RecordMany({Input("agent:a1:main", "human_direct_message"),
                                   Input("agent:main:main", "human_direct_message")});
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(many.status().message().rfind("events[1]: session agent:main:main (agent main) "
                                          "belongs to partition 0 of 3",
                                          0),
            0u)
      << many.status().message();
  // A watch of another partition's target; the watcher may be anywhere.
  auto w = engine_->Watch("agent:a1:main", Name("agent:ops:x"));
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), Status::Code::kMisdirected);
  EXPECT_TRUE(Pending("agent:a1:main").empty());
  // Deleting another partition's session.
  Status d = engine_->DeleteSession(Name("agent:ops:x"));
  EXPECT_EQ(d.code(), Status::Code::kMisdirected);
  // Nothing changed: the next sequence is the one after 5, and no session took one.
  EXPECT_EQ(Head("a1"), 5u);
  EXPECT_EQ(Event("a1"), 8u);
  auto stats = engine_->Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(stats->last_sequence, 8u);
}

// A read of another partition's session would answer "version 0, no events" for a session
// that may have thousands elsewhere: it is Misdirected, like the writes.
TEST_F(PartitionNumberingTest, ReadsOfAnotherPartitionsSessionAreMisdirected) {
  EXPECT_EQ(Event("a1"), 5u);
  const std::string ops_refusal =
      "session agent:ops:x (agent ops) belongs to partition 1 of 3; this node owns "
      "partition 2: send it to partition 1's owner";
  auto v = engine_->StateVersion(Name("agent:ops:x"));
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(v.status().message(), ops_refusal);
  auto page = engine_->ChangesSince(Name("agent:ops:x"), 0);
  ASSERT_FALSE(page.ok());
  EXPECT_EQ(page.status().message(), ops_refusal);
  // Batched: the index of the first misdirected session.
  auto versions = engine_->StateVersions({Name("agent:a1:main"), Name("agent:ops:x")});
  ASSERT_FALSE(versions.ok());
  EXPECT_EQ(versions.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(versions.status().message(), "sessions[1]: " + ops_refusal);
  // A cursor lives in its target's partition: its read, the target's watchers and an
  // acknowledgement of it are refused too; the watcher may be of any partition.
  auto cursor = engine_->Cursor("agent:a1:main", Name("agent:ops:x"));
  ASSERT_FALSE(cursor.ok());
  EXPECT_EQ(cursor.status().message(), ops_refusal);
  auto watchers = engine_->WatchersOf(Name("agent:ops:x"));
  ASSERT_FALSE(watchers.ok());
  EXPECT_EQ(watchers.status().code(), Status::Code::kMisdirected);
  Status ack = engine_->Acknowledge("agent:a1:main", {Name("agent:ops:x")});
  EXPECT_EQ(ack.code(), Status::Code::kMisdirected);
  EXPECT_EQ(ack.message(), ops_refusal);
  auto own_cursor = engine_->Cursor("agent:ops:x", Name("agent:a1:main"));
  ASSERT_OK(own_cursor);
  EXPECT_FALSE(own_cursor->has_value());
  // This partition's sessions read as before; a name that resolves nowhere still reads empty.
  auto own = engine_->ChangesSince(Name("agent:a1:main"), 0);
  ASSERT_OK(own);
  EXPECT_EQ(own->events.size(), 1u);
  auto nowhere = engine_->StateVersion(SessionName{"", ""});  // does not resolve
  ASSERT_OK(nowhere);
  EXPECT_EQ(*nowhere, 0u);
}

// The session tools' tables: a registry entry, a transcript or an upstream link of another
// partition's session is refused before the commit group, so nothing of it is written.
TEST_F(PartitionNumberingTest, SideTableWritesOfAnotherPartitionsSessionAreMisdirected) {
  SessionTables tables(*engine_);
  const SessionName other = Name("agent:ops:x");
  SessionRecord entry;
  entry.name = other;
  entry.label = "elsewhere";
  EXPECT_EQ(tables.UpsertSession(entry).code(), Status::Code::kMisdirected);
  TranscriptMessage m;
  m.role = "user";
  m.content_json = "\"hello\"";
  EXPECT_EQ(tables.AppendTranscript(other, {m}).code(), Status::Code::kMisdirected);
  UpstreamLink link;
  link.session = other;
  link.upstream_kind = "jsonl";
  link.upstream_ref = "/tmp/x.jsonl";
  EXPECT_EQ(tables.PutUpstreamLink(link).code(), Status::Code::kMisdirected);
  EXPECT_EQ(tables.DeleteUpstreamLink(other).code(), Status::Code::kMisdirected);
  EXPECT_EQ(tables.CheckOwned(other).code(), Status::Code::kMisdirected);
  EXPECT_OK(tables.CheckOwned(Name("agent:a1:main")));
  // Nothing was written: no entry, no transcript, no link, and no sequence was taken.
  auto listed = tables.ListSessions();
  ASSERT_OK(listed);
  EXPECT_TRUE(listed->empty());
  auto transcript = tables.RecentTranscript(other, 10);
  ASSERT_OK(transcript);
  EXPECT_TRUE(transcript->empty());
  auto links = tables.ListUpstreamLinks();
  ASSERT_OK(links);
  EXPECT_TRUE(links->empty());
  EXPECT_EQ(Event("a1"), 5u);
  // This partition's session takes all three.
  entry.name = Name("agent:a1:main");
  EXPECT_OK(tables.UpsertSession(entry));
  EXPECT_OK(tables.AppendTranscript(entry.name, {m}));
}

TEST_F(EngineTest, ASingleNodeNeverRefusesASessionAsMisdirected) {
  EXPECT_EQ(Human("agent:ops:x"), 1u);
  EXPECT_EQ(Human("agent:main:main"), 2u);
}

}  // namespace
}  // namespace statewatch::testing

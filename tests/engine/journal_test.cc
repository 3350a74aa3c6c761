// The signal journal (docs/semantics.md, "The journal", "Catching up: `changesSince`" and
// "Retention"): validation, sequences, heads, dedupe, changesSince and the exact
// historyGap, retention.
#include <gtest/gtest.h>

#include "engine/engine_fixture.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

constexpr char kKey[] = "agent:main:main";

class JournalTest : public EngineTest {
 protected:
  Status RecordStatus(const EventInput& in) { return engine_->Record(in).status(); }
  ChangesPage Changes(const std::string& key, Sequence after, int limit = 200) {
    auto p = engine_->ChangesSince(Name(key), after, limit);
    EXPECT_OK(p);
    return p.ok() ? *p : ChangesPage{};
  }
};

TEST_F(JournalTest, StoresEveryFieldAndNormalisesThem) {
  EventInput in = Input("AGENT:Main:main", "run_failed", ActorType::kAgent, "agent:ops:main");
  in.session_id = "sess-1";
  in.run_id = "run-1";
  in.summary = "line one\nline two\r\nthree";
  in.payload_json = R"({"outcome":"timeout","secret":"x"})";
  in.occurred_at_ms = kStart - 1000;
  auto r = engine_->Record(in);
  ASSERT_OK(r);
  const Event& e = r->event;
  EXPECT_EQ(e.session_key, kKey);
  EXPECT_EQ(e.agent_id, "main");
  EXPECT_EQ(e.summary, "line one line two three");
  EXPECT_EQ(e.occurred_at_ms, kStart - 1000);
  ChangesPage p = Changes(kKey, 0);
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].run_id, "run-1");
  EXPECT_EQ(p.events[0].session_id, "sess-1");
  EXPECT_EQ(p.events[0].actor_id, "agent:ops:main");
  EXPECT_EQ(p.events[0].payload_json, R"({"outcome":"timeout","secret":"x"})");
}

TEST_F(JournalTest, OccurredAtIsClampedIntoTheLastDay) {
  EventInput in = Input(kKey, "created");
  in.occurred_at_ms = kStart + 5000;
  EXPECT_EQ(engine_->Record(in)->event.occurred_at_ms, kStart);
  in.occurred_at_ms = kStart - 48LL * 3600 * 1000;
  EXPECT_EQ(engine_->Record(in)->event.occurred_at_ms, kStart - 24LL * 3600 * 1000);
}

TEST_F(JournalTest, SummaryIsCappedOnAUtf8Boundary) {
  EventInput in = Input(kKey, "created");
  in.summary = std::string(510, 'a') + "\xC3\xA9\xC3\xA9";  // 514 bytes, é at 510..513
  std::string s = engine_->Record(in)->event.summary;
  EXPECT_EQ(s.size(), 512u);
  EXPECT_EQ(s.substr(510), "\xC3\xA9");
  in.summary = std::string(511, 'a') + "\xC3\xA9";  // é would straddle the cap
  EXPECT_EQ(engine_->Record(in)->event.summary, std::string(511, 'a'));
}

TEST_F(JournalTest, NonObjectPayloadsAreDropped) {
  EventInput in = Input(kKey, "created");
  in.payload_json = "[1,2]";
  EXPECT_EQ(engine_->Record(in)->event.payload_json, "");
}

TEST_F(JournalTest, BadInputIsRefusedWithTheFieldAndValueAndWritesNothing) {
  struct Case {
    EventInput in;
    std::string message_part;
  };
  EventInput bad_kind = Input(kKey, "teleported");
  EventInput bad_key = Input("agent::x", "created");
  EventInput bad_key2 = Input("agent:main", "created");
  EventInput bad_key3 = Input("agent:main::x", "created");
  EventInput bad_payload = Input(kKey, "created");
  bad_payload.payload_json = "{not json";
  EventInput bad_utf8 = Input(kKey, "created");
  bad_utf8.summary = "bad \xC3\x28 byte";
  EventInput bad_agent = Input("global", "created");
  bad_agent.agent_id = "Not Valid!";
  EventInput bad_watcher = Input(kKey, "created");
  bad_watcher.watchers = {"agent:main:"};
  for (const Case& c : {Case{bad_kind, "unknown kind \"teleported\""},
                        Case{bad_kind, "(valid kinds: human_direct_message, upstream_missing, "
                                       "goal_changed, child_spawned, run_completed, run_failed, "
                                       "compacted, adopted, created, guard_refused)"},
                        Case{bad_key, "agent::x"}, Case{bad_key2, "agent:main"},
                        Case{bad_key3, "agent:main::x"}, Case{bad_payload, "{not json"},
                        Case{bad_utf8, "summary is not valid UTF-8"},
                        Case{bad_agent, "Not Valid!"}, Case{bad_watcher, "agent:main:"}}) {
    Status st = RecordStatus(c.in);
    EXPECT_TRUE(st.IsInvalidArgument()) << st.ToString();
    EXPECT_NE(st.message().find(c.message_part), std::string::npos) << st.message();
  }
  EXPECT_EQ(engine_->Stats()->last_sequence, 0u);
  EXPECT_EQ(engine_->Stats()->journal_rows, 0u);
}

TEST_F(JournalTest, RecordManyIsAllOrNothing) {
  auto r = engine_->RecordMany({Input(kKey, "created"), Input(kKey, "nope")});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("events[1]"), std::string::npos);
  EXPECT_EQ(*engine_->StateVersion(Name(kKey)), 0u);
  auto ok = engine_->RecordMany({Input(kKey, "created"), Input("global", "created")});
  ASSERT_OK(ok);
  EXPECT_LT((*ok)[0].event.sequence, (*ok)[1].event.sequence);
}

TEST_F(JournalTest, OneSequenceForTheWholeEngineNeverReused) {
  Sequence a = Human(kKey);
  Sequence b = Human("agent:ops:main");
  Sequence c = Human(kKey);
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(*engine_->StateVersion(Name(kKey)), c);
  // Prune everything, restart: the counter and the head survive.
  clock_->Advance(options_.retention_ms + 1);
  ASSERT_OK(engine_->Prune());
  EXPECT_EQ(engine_->Stats()->journal_rows, 0u);
  Reopen();
  EXPECT_EQ(*engine_->StateVersion(Name(kKey)), c);
  EXPECT_GT(Human("agent:new:main"), c);
}

TEST_F(JournalTest, BareKeysOfTwoAgentsAreDifferentSessions) {
  EventInput a = Input("global", "created");
  a.agent_id = "alpha";
  EventInput b = Input("global", "created");
  b.agent_id = "beta";
  Sequence sa = Rec(a), sb = Rec(b);
  auto v = engine_->StateVersions({SessionName{"alpha", "global"}, SessionName{"beta", "global"},
                                   SessionName{"main", "global"}});
  ASSERT_OK(v);
  EXPECT_EQ(*v, (std::vector<Sequence>{sa, sb, 0}));
  ASSERT_OK(engine_->DeleteSession(SessionName{"alpha", "global"}));
  EXPECT_EQ(*engine_->StateVersion(SessionName{"beta", "global"}), sb);
}

TEST_F(JournalTest, DedupeReturnsTheExistingEventAndChangesNothing) {
  EventInput in = Input(kKey, "child_spawned", ActorType::kAgent);
  in.dedupe_key = "child-spawned:run-1";
  auto first = engine_->Record(in);
  in.summary = "different";
  auto again = engine_->Record(in);
  ASSERT_OK(again);
  EXPECT_TRUE(again->deduplicated);
  EXPECT_EQ(again->event.sequence, first->event.sequence);
  EXPECT_EQ(again->event.summary, first->event.summary);
  EXPECT_EQ(engine_->Stats()->last_sequence, first->event.sequence);
  // Unique across the whole engine, not per session.
  in.session_key = "agent:ops:main";
  EXPECT_TRUE(engine_->Record(in)->deduplicated);
  // Also within one batch.
  EventInput d = Input(kKey, "created");
  d.dedupe_key = "batch";
  auto many = engine_->RecordMany({d, d});
  EXPECT_FALSE((*many)[0].deduplicated);
  EXPECT_TRUE((*many)[1].deduplicated);
}

TEST_F(JournalTest, ChangesSinceLimitTruncatedAndEarliest) {
  std::vector<Sequence> seqs;
  for (int i = 0; i < 205; ++i) seqs.push_back(Human(kKey));
  ChangesPage p = Changes(kKey, 0, 1000);  // clamped to 200
  EXPECT_EQ(p.events.size(), 200u);
  EXPECT_TRUE(p.truncated);
  EXPECT_EQ(p.earliest_available_sequence, seqs[0]);
  EXPECT_EQ(p.state_version, seqs.back());
  p = Changes(kKey, seqs[200], 0);  // clamped to 1
  ASSERT_EQ(p.events.size(), 1u);
  EXPECT_EQ(p.events[0].sequence, seqs[201]);
  EXPECT_TRUE(p.truncated);
  p = Changes(kKey, seqs[203]);
  EXPECT_EQ(p.events.size(), 1u);
  EXPECT_FALSE(p.truncated);
  p = Changes(kKey, seqs.back() + 10);  // after > head: nothing, no gap
  EXPECT_TRUE(p.events.empty());
  EXPECT_FALSE(p.history_gap);
  p = Changes("agent:none:main", 0);
  EXPECT_EQ(p.state_version, 0u);
  EXPECT_EQ(p.earliest_available_sequence, 0u);
}

TEST_F(JournalTest, HistoryGapIsExactFromTheWatermark) {
  options_.max_rows = 3;
  Reopen();
  Sequence a = Human(kKey);
  Sequence b = Human(kKey);
  Human("agent:ops:main");
  Sequence d = Human(kKey);  // the row cap deletes a
  EXPECT_EQ(engine_->Stats()->journal_rows, 3u);
  EXPECT_TRUE(Changes(kKey, 0).history_gap);
  EXPECT_TRUE(Changes(kKey, a - 1).history_gap);
  EXPECT_FALSE(Changes(kKey, a).history_gap);  // after == watermark is not a gap
  ChangesPage p = Changes(kKey, a);
  ASSERT_EQ(p.events.size(), 2u);
  EXPECT_EQ(p.events[0].sequence, b);
  EXPECT_EQ(p.earliest_available_sequence, b);
  EXPECT_EQ(p.state_version, d);
  // Another session's rows never raise this session's watermark.
  EXPECT_FALSE(Changes("agent:ops:main", 0).history_gap);
}

TEST_F(JournalTest, AgePruningRaisesTheWatermarkAndKeepsTheHead) {
  Sequence a = Human(kKey);
  clock_->Advance(10LL * 24 * 3600 * 1000);
  Sequence b = Human(kKey);
  clock_->Advance(25LL * 24 * 3600 * 1000);  // a is 35 days old, b 25
  auto pr = engine_->Prune();
  ASSERT_OK(pr);
  EXPECT_EQ(pr->rows_deleted, 1u);
  ChangesPage p = Changes(kKey, 0);
  EXPECT_TRUE(p.history_gap);
  EXPECT_FALSE(Changes(kKey, a).history_gap);
  EXPECT_EQ(p.earliest_available_sequence, b);
  clock_->Advance(10LL * 24 * 3600 * 1000);
  ASSERT_OK(engine_->Prune());
  p = Changes(kKey, 0);
  EXPECT_EQ(p.state_version, b);  // heads are never lowered
  EXPECT_TRUE(p.events.empty());
  EXPECT_EQ(p.earliest_available_sequence, b + 1);
  EXPECT_FALSE(Changes(kKey, b).history_gap);
}

TEST_F(JournalTest, DeletingASessionIsNotPruning) {
  Human(kKey);
  ASSERT_OK(engine_->DeleteSession(Name(kKey)));
  ChangesPage p = Changes(kKey, 0);
  EXPECT_FALSE(p.history_gap);  // rows removed other than by pruning never raise it
  EXPECT_EQ(p.state_version, 0u);
  EXPECT_EQ(engine_->Stats()->journal_rows, 0u);
}

TEST_F(JournalTest, DedupeKeysAreFreedWithTheirRows) {
  options_.max_rows = 1;
  Reopen();
  EventInput in = Input(kKey, "created");
  in.dedupe_key = "k";
  Sequence first = Rec(in);
  Human(kKey);  // the row cap prunes the first row
  auto again = engine_->Record(in);
  EXPECT_FALSE(again->deduplicated);
  EXPECT_GT(again->event.sequence, first);
}

TEST_F(JournalTest, RowCapHoldsUnderSustainedAppends) {
  options_.max_rows = 50;
  Reopen();
  for (int i = 0; i < 500; ++i) {
    Human("agent:main:s" + std::to_string(i % 7));
    ASSERT_LE(engine_->Stats()->journal_rows, 50u);
  }
  auto v = engine_->Verify();
  EXPECT_TRUE(v->ok) << (v->differences.empty() ? "" : v->differences[0]);
}

TEST_F(JournalTest, EverythingSurvivesReopen) {
  Sequence a = Human(kKey);
  Spawn(kKey, "agent:main:subagent:x");
  Human("agent:main:subagent:x");
  Reopen();
  EXPECT_EQ(*engine_->StateVersion(Name(kKey)), a);
  EXPECT_EQ(Pending(kKey).size(), 1u);
  EXPECT_EQ(Changes(kKey, 0).events.size(), 1u);
  EXPECT_TRUE(engine_->Verify()->ok);
}

TEST_F(JournalTest, CheckpointKeepsVerifyClean) {
  options_.checkpoint_min_records = 10;
  Reopen();
  Spawn(kKey, "agent:main:subagent:x");
  for (int i = 0; i < 60; ++i) {
    Human("agent:main:subagent:x");
    if (i % 7 == 0) {
      ASSERT_OK(engine_->Drain(kKey));
    }
  }
  auto s = engine_->Stats();
  EXPECT_LT(s->log_records_since_checkpoint, 60u);
  Reopen();
  auto v = engine_->Verify();
  ASSERT_OK(v);
  EXPECT_TRUE(v->ok) << (v->differences.empty() ? "" : v->differences[0]);
  auto rebuilt = engine_->Rebuild();
  ASSERT_OK(rebuilt);
  EXPECT_TRUE(engine_->Verify()->ok);
}

TEST_F(JournalTest, SessionRegistryUpsertMergesFields) {
  SessionRecord r;
  r.name = Name(kKey);
  r.label = "coordinator";
  r.kind = "main";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  SessionRecord u;
  u.name = Name(kKey);
  u.model = "m1";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(u));
  auto got = SessionTablesView(*engine_).GetSession(Name(kKey));
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->label, "coordinator");
  EXPECT_EQ((*got)->model, "m1");
  EXPECT_EQ((*got)->created_at_ms, kStart);
  EXPECT_EQ(SessionTablesView(*engine_).ListSessions()->size(), 1u);
  ASSERT_OK(engine_->DeleteSession(Name(kKey)));
  EXPECT_FALSE(SessionTablesView(*engine_).GetSession(Name(kKey))->has_value());
}

}  // namespace
}  // namespace statewatch::testing

namespace statewatch::testing {
namespace {

// Regression: Rebuild wrote heads into the cursors family and cursors into the heads family,
// so a session deleted after a rebuild came back from the stray copies at the next open.
TEST_F(JournalTest, DeleteAfterRebuildStaysDeleted) {
  Spawn(kKey, "agent:main:subagent:x");
  Human("agent:main:subagent:x");
  ASSERT_OK(engine_->Rebuild());
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:subagent:x")));
  Reopen();
  EXPECT_EQ(*engine_->StateVersion(Name("agent:main:subagent:x")), 0u);
  EXPECT_EQ(engine_->Stats()->cursors, 0u);
  EXPECT_TRUE(engine_->Verify()->ok);
}

// `statewatch stats` / EngineStats: the WAL cost of an event since open.
TEST_F(JournalTest, StatsReportWalBytesPerEventSinceOpen) {
  auto before = engine_->Stats();
  ASSERT_OK(before);
  EXPECT_EQ(before->events_recorded, 0u);
  EXPECT_EQ(before->wal_bytes, 0u);
  EventInput in = Input("agent:main:main", "human_direct_message");
  in.summary = std::string(200, 's');
  for (int i = 0; i < 10; ++i) Rec(in);
  auto after = engine_->Stats();
  ASSERT_OK(after);
  EXPECT_EQ(after->events_recorded, 10u);
  // Each event's row alone holds its 200-byte summary, and the row plus 7-byte header is
  // in the log.
  EXPECT_GT(after->wal_bytes / after->events_recorded, 200u + 7u);
  EXPECT_LT(after->wal_bytes / after->events_recorded, 4096u);
}

}  // namespace
}  // namespace statewatch::testing

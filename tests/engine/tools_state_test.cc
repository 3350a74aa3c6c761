// Transcripts, runs, deliveries and upstream links: durable side tables of the engine.
#include <gtest/gtest.h>

#include "engine/engine_fixture.h"
#include "statewatch/session_tables.h"
#include "statewatch/watcher_directory.h"
#include "status_matchers.h"

namespace statewatch::testing {
namespace {

class ToolsStateTest : public EngineTest {};

TEST_F(ToolsStateTest, TranscriptKeepsOrderAndServesTheLastMessages) {
  std::vector<TranscriptMessage> msgs;
  for (int i = 0; i < 5; ++i) {
    TranscriptMessage m;
    m.role = "user";
    m.content_json = "\"m" + std::to_string(i) + "\"";
    msgs.push_back(m);
  }
  ASSERT_OK(SessionTables(*engine_).AppendTranscript(Name("agent:main:main"), msgs));
  auto last = SessionTablesView(*engine_).RecentTranscript(Name("agent:main:main"), 2);
  ASSERT_OK(last);
  ASSERT_EQ(last->size(), 2u);
  EXPECT_EQ((*last)[0].content_json, "\"m3\"");
  EXPECT_EQ((*last)[1].content_json, "\"m4\"");
  EXPECT_LT((*last)[0].index, (*last)[1].index);
  EXPECT_EQ((*last)[1].timestamp_ms, kStart);
  ASSERT_OK(engine_->DeleteSession(Name("agent:main:main")));
  EXPECT_TRUE(SessionTablesView(*engine_).RecentTranscript(Name("agent:main:main"), 10)->empty());
}

TEST_F(ToolsStateTest, DeliveriesSurviveReopenUntilAcknowledged) {
  Delivery d = MessageDelivery("main", "agent:main:main");
  auto a = SessionTables(*engine_).EnqueueDelivery(d);
  d.agent_id = "ops";
  auto b = SessionTables(*engine_).EnqueueDelivery(d);
  ASSERT_OK(a);
  ASSERT_OK(b);
  EXPECT_LT(*a, *b);
  Reopen();
  EXPECT_EQ(SessionTablesView(*engine_).PendingDeliveries("")->size(), 2u);
  EXPECT_EQ(SessionTablesView(*engine_).PendingDeliveries("ops")->size(), 1u);
  EXPECT_TRUE(*SessionTables(*engine_).AckDelivery(*a));
  EXPECT_FALSE(*SessionTables(*engine_).AckDelivery(*a));
  Reopen();
  auto left = SessionTablesView(*engine_).PendingDeliveries("");
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ((*left)[0].id, *b);
}

TEST_F(ToolsStateTest, RunsAndUpstreamLinksRoundTrip) {
  RunRecord r;
  r.run_id = "run-1";
  r.kind = "spawn";
  r.requester = Name("agent:main:main");
  r.target = Name("agent:main:subagent:x");
  r.task = "do it";
  ASSERT_OK(SessionTables(*engine_).PutRun(r));
  auto got = SessionTablesView(*engine_).GetRun("run-1");
  ASSERT_OK(got);
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->task, "do it");
  EXPECT_EQ((*got)->status, "running");
  EXPECT_EQ(SessionTablesView(*engine_).ListRuns()->size(), 1u);

  UpstreamLink l;
  l.session = Name("agent:main:adopted");
  l.catalog_id = "claude";
  l.upstream_kind = "jsonl";
  l.upstream_ref = "/tmp/x.jsonl";
  l.marker = 42;
  ASSERT_OK(SessionTables(*engine_).PutUpstreamLink(l));
  Reopen();
  auto link = SessionTablesView(*engine_).GetUpstreamLink(Name("agent:main:adopted"));
  ASSERT_OK(link);
  ASSERT_TRUE(link->has_value());
  EXPECT_EQ((*link)->marker, 42u);
  ASSERT_OK(SessionTables(*engine_).DeleteUpstreamLink(Name("agent:main:adopted")));
  EXPECT_TRUE(SessionTablesView(*engine_).ListUpstreamLinks()->empty());
}

TEST_F(ToolsStateTest, TranscriptCarriesProvenanceAndUsageAndReadsFromTheStart) {
  TranscriptMessage task{0, "user", "\"do it\"", "", 0, std::nullopt, std::nullopt};
  task.provenance =
      MessageProvenance{"inter_session", "agent:main:main", "sessions_spawn", "telegram", "run-1"};
  TranscriptMessage answer{0, "assistant", "\"done\"", "", 0, std::nullopt, std::nullopt};
  answer.usage = TokenUsage{120, 30, 5, 7, 150};
  ASSERT_OK(
      SessionTables(*engine_).AppendTranscript(Name("agent:main:subagent:x"), {task, answer}));
  Reopen();
  auto first = SessionTablesView(*engine_).FirstTranscript(Name("agent:main:subagent:x"), 1);
  ASSERT_OK(first);
  ASSERT_EQ(first->size(), 1u);
  ASSERT_TRUE((*first)[0].provenance);
  EXPECT_EQ((*first)[0].provenance->source_session_key, "agent:main:main");
  EXPECT_EQ((*first)[0].provenance->source_tool, "sessions_spawn");
  EXPECT_EQ((*first)[0].provenance->source_channel, "telegram");
  EXPECT_EQ((*first)[0].provenance->run_id, "run-1");
  EXPECT_FALSE((*first)[0].usage);
  auto last = SessionTablesView(*engine_).RecentTranscript(Name("agent:main:subagent:x"), 1);
  ASSERT_TRUE((*last)[0].usage);
  EXPECT_EQ((*last)[0].usage->input, 120);
  EXPECT_EQ((*last)[0].usage->cache_write, 7);
  EXPECT_EQ((*last)[0].usage->total, 150);
  EXPECT_FALSE((*last)[0].provenance);
}

TEST_F(ToolsStateTest, RunsKeepSendStateSpawnOptionsAndRoute) {
  RunRecord r;
  r.run_id = "run-2";
  r.kind = "send";
  r.requester = Name("agent:main:main");
  r.target = Name("agent:main:telegram:dm:bob");
  SendRunState s;
  s.phase = SendRunState::Phase::kPingPong;
  s.turn = 2;
  s.max_turns = 5;
  s.next_is_requester = true;
  s.timeout_ms = 30000;
  s.deadline_ms = kStart + 30000;
  s.watch = s.watched = true;
  s.last_reply = "pong";
  r.send = s;
  SpawnOptions o;
  o.runtime = "acp";
  o.model = "opus";
  o.thinking = "high";
  o.thread = true;
  o.context = "fork";
  o.label = "scout";
  o.depth = 2;
  r.spawn = o;
  r.requester_route = DeliveryRoute{"discord", "chan-1", "acct", "th-9"};
  ASSERT_OK(SessionTables(*engine_).PutRun(r));
  Reopen();
  RunRecord got = **SessionTablesView(*engine_).GetRun("run-2");
  ASSERT_TRUE(got.send);
  EXPECT_EQ(got.send->phase, SendRunState::Phase::kPingPong);
  EXPECT_EQ(got.send->turn, 2);
  EXPECT_EQ(got.send->deadline_ms, kStart + 30000);
  EXPECT_TRUE(got.send->watched);
  EXPECT_EQ(got.send->last_reply, "pong");
  ASSERT_TRUE(got.spawn);
  EXPECT_EQ(got.spawn->runtime, "acp");
  EXPECT_EQ(got.spawn->context, "fork");
  EXPECT_TRUE(got.spawn->thread);
  EXPECT_EQ(got.spawn->depth, 2);
  EXPECT_EQ(got.spawn->sandbox, "inherit");
  EXPECT_EQ(got.requester_route, (DeliveryRoute{"discord", "chan-1", "acct", "th-9"}));
}

// Regression: a registry field could not be cleared once set (an upsert only overlaid
// present fields); SessionRecord::clear removes the named ones.
TEST_F(ToolsStateTest, RegistryClearRemovesTheNamedFields) {
  SessionRecord r;
  r.name = Name("agent:main:main");
  r.model = "opus";
  r.last_channel = "telegram";
  r.last_to = "42";
  r.input_tokens = 10;
  ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  SessionRecord clear;
  clear.name = r.name;
  clear.clear = {SessionField::kModel, SessionField::kLastTo, SessionField::kInputTokens};
  clear.label = "kept";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(clear));
  Reopen();
  SessionRecord got = **SessionTablesView(*engine_).GetSession(r.name);
  EXPECT_FALSE(got.model);
  EXPECT_FALSE(got.last_to);
  EXPECT_FALSE(got.input_tokens);
  EXPECT_EQ(got.last_channel, "telegram");
  EXPECT_EQ(got.label, "kept");
  EXPECT_TRUE(got.clear.empty());
}

// Regression: the watcher directory's rows ('Y' listings, 'Z' sagas) share the sessions
// family with the registry; listing the registry read them as registry records and failed
// with Corruption (sessions_list through a cluster node answered 503).
TEST_F(ToolsStateTest, ListingATableSkipsOtherTablesRowsInItsFamily) {
  SessionRecord r;
  r.name = Name("agent:main:main");
  r.label = "only";
  ASSERT_OK(SessionTables(*engine_).UpsertSession(r));
  WatcherDirectory directory(*engine_);
  ASSERT_OK(directory.Register("agent:main:main", 3));
  ASSERT_OK(directory.BeginSaga("agent:main:main", WatcherSagaKind::kReset, 0));
  auto listed = SessionTablesView(*engine_).ListSessions();
  ASSERT_OK(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].label, "only");
  ASSERT_OK(SessionTablesView(*engine_).ListRuns());
}

// Regression: a new session given only a past updatedAt got createdAt = now, later than its
// updatedAt.
TEST_F(ToolsStateTest, CreatedAtNeverFollowsUpdatedAt) {
  SessionRecord old;
  old.name = Name("agent:main:cron:nightly");
  old.updated_at_ms = kStart - 5000;
  ASSERT_OK(SessionTables(*engine_).UpsertSession(old));
  SessionRecord stored = **SessionTablesView(*engine_).GetSession(old.name);
  EXPECT_EQ(stored.updated_at_ms, kStart - 5000);
  EXPECT_EQ(stored.created_at_ms, kStart - 5000);
}

}  // namespace
}  // namespace statewatch::testing

// Transcripts, runs, deliveries and upstream links: durable side tables of the engine.
#include <gtest/gtest.h>

#include "engine/engine_fixture.h"

namespace statewatch::testing {
namespace {

class ToolsStateTest : public EngineTest {};

TEST_F(ToolsStateTest, TranscriptKeepsOrderAndServesTheLastMessages) {
  std::vector<TranscriptMessage> msgs;
  for (int i = 0; i < 5; ++i) msgs.push_back({0, "user", "\"m" + std::to_string(i) + "\"", "", 0});
  ASSERT_TRUE(engine_->AppendTranscript(Name("agent:main:main"), msgs).ok());
  auto last = engine_->RecentTranscript(Name("agent:main:main"), 2);
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->size(), 2u);
  EXPECT_EQ((*last)[0].content_json, "\"m3\"");
  EXPECT_EQ((*last)[1].content_json, "\"m4\"");
  EXPECT_LT((*last)[0].index, (*last)[1].index);
  EXPECT_EQ((*last)[1].timestamp_ms, kStart);
  ASSERT_TRUE(engine_->DeleteSession(Name("agent:main:main")).ok());
  EXPECT_TRUE(engine_->RecentTranscript(Name("agent:main:main"), 10)->empty());
}

TEST_F(ToolsStateTest, DeliveriesSurviveReopenUntilAcknowledged) {
  Delivery d;
  d.agent_id = "main";
  d.type = "message";
  d.session_key = "agent:main:main";
  d.text = "hello";
  auto a = engine_->EnqueueDelivery(d);
  d.agent_id = "ops";
  auto b = engine_->EnqueueDelivery(d);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_LT(*a, *b);
  Reopen();
  EXPECT_EQ(engine_->PendingDeliveries("")->size(), 2u);
  EXPECT_EQ(engine_->PendingDeliveries("ops")->size(), 1u);
  EXPECT_TRUE(*engine_->AckDelivery(*a));
  EXPECT_FALSE(*engine_->AckDelivery(*a));
  Reopen();
  auto left = engine_->PendingDeliveries("");
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
  ASSERT_TRUE(engine_->PutRun(r).ok());
  auto got = engine_->GetRun("run-1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->task, "do it");
  EXPECT_EQ((*got)->status, "running");
  EXPECT_EQ(engine_->ListRuns()->size(), 1u);

  UpstreamLink l;
  l.session = Name("agent:main:adopted");
  l.catalog_id = "claude";
  l.upstream_kind = "jsonl";
  l.upstream_ref = "/tmp/x.jsonl";
  l.marker = 42;
  ASSERT_TRUE(engine_->PutUpstreamLink(l).ok());
  Reopen();
  auto link = engine_->GetUpstreamLink(Name("agent:main:adopted"));
  ASSERT_TRUE(link.ok() && link->has_value());
  EXPECT_EQ((*link)->marker, 42u);
  ASSERT_TRUE(engine_->DeleteUpstreamLink(Name("agent:main:adopted")).ok());
  EXPECT_TRUE(engine_->ListUpstreamLinks()->empty());
}

}  // namespace
}  // namespace statewatch::testing

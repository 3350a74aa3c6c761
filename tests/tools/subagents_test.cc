// sessions_spawn, run ends, subagents list / steer / kill and sessions_yield on a real
// engine, with simulated agents finishing runs; deliveries across a restart.
#include <gtest/gtest.h>

#include <regex>

#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "tools/tools_fixture.h"

namespace statewatch::testing {
namespace {

namespace json = boost::json;

using SubagentsTest = MainSessionTest;

TEST_F(SubagentsTest, SpawnRegistersSeedsAndDeliversTheTask) {
  tools::ToolAnswer a =
      Call("sessions_spawn", kMain,
           R"({"task": "find papers", "label": "researcher", "model": "m1", "thinking": "low"})");
  EXPECT_EQ(a.result.size(), 3u);
  EXPECT_EQ(Str(a.result, "status"), "accepted");
  std::string run_id = Str(a.result, "runId");
  std::string child = Str(a.result, "childSessionKey");
  static const std::regex kUuid4(
      "[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}");
  EXPECT_TRUE(std::regex_match(run_id, kUuid4)) << run_id;
  ASSERT_EQ(child.rfind("agent:main:subagent:", 0), 0u);
  EXPECT_TRUE(std::regex_match(child.substr(20), kUuid4)) << child;

  auto rec = SessionTablesView(*engine_).GetSession(Name(child));
  ASSERT_OK(rec);
  ASSERT_TRUE(rec->has_value());
  EXPECT_EQ((*rec)->parent_session_key, kMain);
  EXPECT_EQ((*rec)->label, "researcher");
  EXPECT_EQ((*rec)->model, "m1");
  EXPECT_EQ((*rec)->sandboxed, false);

  auto run = SessionTablesView(*engine_).GetRun(run_id);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ((*run)->kind, "spawn");
  EXPECT_EQ((*run)->status, "running");
  EXPECT_EQ((*run)->task, "find papers");

  auto events = Journal(child);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, "child_spawned");
  EXPECT_EQ(events[0].summary, "child session spawned");
  EXPECT_EQ(events[0].dedupe_key, "child-spawned:" + run_id);
  EXPECT_EQ(events[0].actor_id, kMain);
  EXPECT_EQ(events[0].run_id, run_id);
  CursorState c = CursorOf(kMain, child);  // the spawner's cursor, seeded
  EXPECT_EQ(c.last_seen, events[0].sequence);
  EXPECT_EQ(c.notified, events[0].sequence);
  EXPECT_EQ(c.material, events[0].sequence);

  auto task = Take(child);
  ASSERT_TRUE(task);
  EXPECT_EQ(task->type, "task");
  EXPECT_EQ(task->text, "find papers");
  EXPECT_EQ(task->run_id, run_id);
  EXPECT_EQ(task->source_session_key, kMain);
  EXPECT_EQ(task->source_tool, "sessions_spawn");
}

TEST_F(SubagentsTest, AFinishedRunIsJournaledAndAnnouncedOnce) {
  auto [run_id, child] = Spawn(kMain, R"({"task": "t", "label": "r"})");
  ASSERT_TRUE(Take(child));
  clock_->Advance(5000);
  auto u = messaging_->OnRunFinish(run_id, "ok", "found 3 papers");
  ASSERT_OK(u);
  EXPECT_TRUE(u->applied);
  EXPECT_EQ(u->status, "ok");
  auto events = Journal(child);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, "run_completed");
  EXPECT_EQ(events[1].summary, "child run completed");
  EXPECT_EQ(events[1].dedupe_key, "run-terminal:" + run_id);
  auto announce = Take(kMain);
  ASSERT_TRUE(announce);
  EXPECT_EQ(announce->type, "announce");
  EXPECT_EQ(announce->run_id, run_id);
  EXPECT_EQ(announce->source_session_key, child);
  EXPECT_EQ(announce->text, "Sub-agent \"r\" completed (run " + run_id + ", session " + child +
                                ").\n\nfound 3 papers");
  auto run = *SessionTablesView(*engine_).GetRun(run_id);
  EXPECT_EQ(run->status, "ok");
  EXPECT_EQ(run->result, "found 3 papers");
  EXPECT_EQ(run->ended_at_ms, kStart + 5000);
  // The journal's spawn cursor is untouched: run_completed is journal only.
  EXPECT_TRUE(Pending(kMain).empty());

  auto again = messaging_->OnRunFinish(run_id, "error", "late");
  ASSERT_OK(again);
  EXPECT_FALSE(again->applied);
  EXPECT_TRUE(Deliveries().empty());
  EXPECT_EQ(Journal(child).size(), 2u);
}

TEST_F(SubagentsTest, FailedRunsCarryTheirOutcome) {
  for (const char* status : {"error", "timeout", "cancelled"}) {
    auto [run_id, child] = Spawn(kMain, R"({"task": "t"})");
    ASSERT_OK(messaging_->OnRunFinish(run_id, status, ""));
    auto events = Journal(child);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].kind, "run_failed");
    EXPECT_EQ(events[1].payload_json, std::string(R"({"outcome":")") + status + "\"}");
    EXPECT_EQ(events[1].dedupe_key, "run-terminal:" + run_id);
  }
}

TEST_F(SubagentsTest, KillCancelsJournalsAndTellsTheChild) {
  auto [first, first_child] = Spawn(kMain, R"({"task": "a", "label": "alpha"})");
  clock_->Advance(10);
  auto [second, second_child] = Spawn(kMain, R"({"task": "b", "label": "beta"})");
  ASSERT_TRUE(Take(first_child) && Take(second_child));

  json::object killed = ResultOf("subagents", R"({"action": "kill", "target": "1"})");
  EXPECT_EQ(Str(killed, "text"), "killed 1 subagent(s).");
  EXPECT_EQ(Str(killed, "runId"), first);
  auto events = Journal(first_child);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].kind, "run_failed");
  EXPECT_EQ(events[1].payload_json, R"({"outcome":"cancelled"})");
  EXPECT_EQ(events[1].actor_id, kMain);
  EXPECT_EQ((*SessionTablesView(*engine_).GetRun(first))->status, "cancelled");
  auto stop = Take(first_child);
  ASSERT_TRUE(stop);
  EXPECT_EQ(stop->type, "announce");
  EXPECT_EQ(stop->run_id, first);
  EXPECT_TRUE(For(kMain).empty());  // the killer is not told what it did

  EXPECT_EQ(Str(ResultOf("subagents", R"({"action": "kill", "target": "alpha"})"), "status"),
            "done");
  EXPECT_EQ(Str(ResultOf("subagents", R"({"action": "kill", "target": "all"})"), "text"),
            "killed 1 subagent(s).");
  EXPECT_EQ(Str(ResultOf("subagents", R"({"action": "kill", "target": "all"})"), "text"),
            "no running subagents to kill.");
}

TEST_F(SubagentsTest, KillReachesTheChildrenOfAnOrchestrator) {
  options_messaging_.tool_policy.max_spawn_depth = 2;
  OpenMessaging();
  auto [run_id, child] = Spawn(kMain, R"({"task": "orchestrate"})");
  auto [grand_run, grandchild] = Spawn(child, R"({"task": "leaf work"})");
  EXPECT_EQ(CallError("sessions_spawn", grandchild, R"({"task": "deeper"})").message(),
            "Tool sessions_spawn is not available to leaf sub-agents (spawn depth 2, "
            "agents.defaults.subagents.maxSpawnDepth=2).");
  json::object killed = ResultOf("subagents", R"({"action": "kill", "target": ")" + child + "\"}");
  EXPECT_EQ(killed.at("killed"), 2);
  EXPECT_EQ(Str(killed, "text"), "killed 2 subagent(s).");
  EXPECT_EQ((*SessionTablesView(*engine_).GetRun(grand_run))->status, "cancelled");
}

TEST_F(SubagentsTest, SteerIsLimitedToOneEveryTwoSecondsPerRun) {
  auto [run_id, child] = Spawn(kMain, R"({"task": "t", "label": "w"})");
  ASSERT_TRUE(Take(child));
  json::object ok =
      ResultOf("subagents", R"({"action": "steer", "target": "w", "message": "focus on 2024"})");
  EXPECT_EQ(Str(ok, "status"), "accepted");
  auto steer = Take(child);
  ASSERT_TRUE(steer);
  EXPECT_EQ(steer->type, "steer");
  EXPECT_EQ(steer->text, "focus on 2024");
  EXPECT_EQ(steer->source_tool, "subagents");
  EXPECT_EQ(ok.at("deliveryId").to_number<uint64_t>(), steer->id);

  clock_->Advance(1999);
  json::object limited =
      ResultOf("subagents", R"({"action": "steer", "target": "1", "message": "again"})");
  EXPECT_EQ(Str(limited, "status"), "rate_limited");
  EXPECT_EQ(Str(limited, "error"),
            "Steer rate limit: at most one steer every 2 s per run (retry in 1 ms).");
  EXPECT_TRUE(For(child).empty());
  clock_->Advance(1);
  EXPECT_EQ(Str(ResultOf("subagents",
                         R"({"action": "steer", "target": ")" + run_id + R"(", "message": "now"})"),
                "status"),
            "accepted");
}

TEST_F(SubagentsTest, SubagentRefusalsAreExact) {
  auto [a, a_child] = Spawn(kMain, R"({"task": "t", "label": "twin"})");
  auto [b, b_child] = Spawn(kMain, R"({"task": "t", "label": "Twin"})");
  std::string long_message(4001, 'x');
  EXPECT_EQ(CallError("subagents", kMain,
                      R"({"action": "steer", "target": "1", "message": ")" + long_message + "\"}")
                .message(),
            "Message too long (4001 chars, max 4000).");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "steer", "message": "x"})").message(),
            "Missing subagent target.");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "kill", "target": "  "})").message(),
            "Missing subagent target.");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "kill", "target": "ghost"})").message(),
            "Unknown subagent session: ghost");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "kill", "target": "7"})").message(),
            "Unknown subagent session: 7");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "kill", "target": "twin"})").message(),
            "Ambiguous subagent label: twin");
  EXPECT_EQ(CallError("subagents", kMain, R"({"action": "dance"})").message(),
            "action must be one of list, steer, kill (got \"dance\")");
  // Another session's children are not the caller's to see.
  Register("agent:main:other");
  EXPECT_EQ(
      CallError("subagents", "agent:main:other", R"({"action": "kill", "target": ")" + a + "\"}")
          .message(),
      "Unknown subagent session: " + a);
}

TEST_F(SubagentsTest, ListShowsActiveThenRecentWithOneIndex) {
  auto [a, a_child] = Spawn(kMain, R"({"task": "first", "label": "one"})");
  clock_->Advance(100);
  auto [b, b_child] = Spawn(kMain, R"({"task": "second"})");
  clock_->Advance(100);
  ASSERT_OK(messaging_->OnRunFinish(a, "ok", "r"));
  clock_->Advance(100);
  json::object list = ResultOf("subagents", R"({})");
  EXPECT_EQ(list.at("total"), 2);
  ASSERT_EQ(list.at("active").as_array().size(), 1u);
  const json::object& active = list.at("active").as_array()[0].as_object();
  EXPECT_EQ(active.at("index"), 1);
  EXPECT_EQ(Str(active, "runId"), b);
  EXPECT_EQ(active.at("runtimeMs"), 200);
  const json::object& recent = list.at("recent").as_array()[0].as_object();
  EXPECT_EQ(recent.at("index"), 2);
  EXPECT_EQ(Str(recent, "label"), "one");
  EXPECT_EQ(recent.at("runtimeMs"), 200);
  clock_->Advance(31 * 60 * 1000);
  EXPECT_EQ(ResultOf("subagents", R"({"action": "list"})").at("recent").as_array().size(), 0u);
  json::object wider = ResultOf("subagents", R"({"action": "list", "recentMinutes": 60})");
  EXPECT_EQ(wider.at("recent").as_array().size(), 1u);
}

TEST_F(SubagentsTest, YieldHoldsAnnouncementsUntilTheLastChildEnds) {
  auto [a, a_child] = Spawn(kMain, R"({"task": "a", "label": "A"})");
  auto [b, b_child] = Spawn(kMain, R"({"task": "b", "label": "B"})");
  tools::ToolAnswer y = Call("sessions_yield", kMain, "{}");
  EXPECT_EQ(Str(y.result, "status"), "yielded");
  EXPECT_EQ(y.result.at("waitingFor"), 2);
  EXPECT_FALSE(Str(y.result, "message").empty());

  ASSERT_OK(messaging_->OnRunFinish(a, "ok", "result A"));
  EXPECT_TRUE(For(kMain).empty());  // held back
  Restart();                        // the yield is durable
  ASSERT_OK(messaging_->OnRunFinish(b, "error", "broke"));
  auto all = For(kMain);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].type, "announce");
  EXPECT_EQ(all[0].source_tool, "sessions_yield");
  EXPECT_EQ(all[0].text, "Results of your sub-agents (2):\n\n1. Sub-agent \"A\" completed (run " +
                             a + ", session " + a_child +
                             ").\n\nresult A\n\n2. Sub-agent \"B\" failed (run " + b +
                             ", session " + b_child + ").\n\nbroke");

  // Afterwards announcements flow one by one again; a yield with nothing running waits for
  // nothing.
  tools::ToolAnswer idle = Call("sessions_yield", kMain, R"({"message": "done for now"})");
  EXPECT_EQ(json::serialize(idle.result),
            R"({"status":"yielded","message":"done for now","waitingFor":0})");
  auto [c, c_child] = Spawn(kMain, R"({"task": "c"})");
  ASSERT_OK(messaging_->OnRunFinish(c, "ok", ""));
  EXPECT_EQ(For(kMain).size(), 2u);
}

TEST_F(SubagentsTest, SpawnValidatesItsParameters) {
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({})").message(), "task is required");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "runtime": "docker"})").message(),
            "runtime must be \"subagent\" or \"acp\" (got \"docker\")");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "sandbox": "off"})").message(),
            "sandbox must be \"inherit\" or \"require\" (got \"off\")");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "context": "shared"})").message(),
            "context must be \"isolated\" or \"fork\" (got \"shared\")");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "thinking": "max"})").message(),
            "thinking must be one of off, minimal, low, medium, high, xhigh (got \"max\")");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "thread": "yes"})").message(),
            R"(thread must be a boolean (got "yes"))");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t", "agentId": "ops"})").message(),
            "agentId is not allowed for sessions_spawn (allowed: none; "
            "agents.defaults.subagents.allowAgents).");
  EXPECT_TRUE(Deliveries().empty());
  EXPECT_TRUE(SessionTablesView(*engine_).ListRuns()->empty());

  // A leaf sub-agent is refused by its profile before the tool runs; called directly, the
  // tool refuses it too.
  auto [run_id, child] = Spawn(kMain, R"({"task": "t", "runtime": "ACP", "sandbox": "require"})");
  EXPECT_EQ((*SessionTablesView(*engine_).GetSession(Name(child)))->sandboxed, true);
  EXPECT_EQ(messaging_->Spawn(Name(child), Params(R"({"task": "t"})")).status().message(),
            "sessions_spawn is not allowed at this depth (spawn depth 1, "
            "agents.defaults.subagents.maxSpawnDepth=1).");
}

TEST_F(SubagentsTest, SpawnRespectsAllowAgentsAndTheChildrenCap) {
  options_messaging_.tool_policy.allow_agents = {"o*"};
  options_messaging_.tool_policy.max_children_per_agent = 2;
  OpenMessaging();
  auto [run_id, child] = Spawn(kMain, R"({"task": "t", "agentId": "ops"})");
  EXPECT_EQ(child.rfind("agent:ops:subagent:", 0), 0u);
  EXPECT_EQ(Deliveries("ops").size(), 1u);
  Spawn(kMain, R"({"task": "t"})");
  EXPECT_EQ(CallError("sessions_spawn", kMain, R"({"task": "t"})").message(),
            "sessions_spawn has reached max active children for this session (2/2, "
            "agents.defaults.subagents.maxChildrenPerAgent).");
  ASSERT_OK(messaging_->OnRunFinish(run_id, "ok", ""));
  Spawn(kMain, R"({"task": "t"})");  // a slot is free again
}

TEST_F(SubagentsTest, UnacknowledgedDeliveriesAreOfferedAgainAfterARestart) {
  Register("agent:main:subagent:kid", std::string(kMain));
  tools::ToolAnswer sent =
      Call("sessions_send", "agent:main:main",
           R"({"sessionKey": "agent:main:subagent:kid", "message": "m", "timeoutSeconds": 0})");
  auto [run_id, child] = Spawn(kMain, R"({"task": "t"})");
  auto before = Deliveries();
  ASSERT_EQ(before.size(), 2u);
  ASSERT_TRUE(*SessionTables(*engine_).AckDelivery(before[0].id));

  Restart();
  auto after = Deliveries();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].id, before[1].id);
  EXPECT_EQ(json::serialize(tools::DeliveryToJson(after[0])),
            json::serialize(tools::DeliveryToJson(before[1])));
  // The runs go on after the restart: the send still takes its reply, the spawn its end.
  EXPECT_TRUE(Reply(sent.run_id, "late but fine").applied);
  auto finished = messaging_->OnRunFinish(run_id, "ok", "done");
  ASSERT_OK(finished);
  EXPECT_TRUE(finished->applied);
  auto to_main = For(kMain);  // the reply-back loop's first turn, then the announcement
  ASSERT_EQ(to_main.size(), 2u);
  EXPECT_EQ(to_main[0].type, "message");
  EXPECT_EQ(to_main[0].text, "late but fine");
  EXPECT_EQ(to_main[1].type, "announce");
}

}  // namespace
}  // namespace statewatch::testing

// sessions_spawn, its run's end, subagents and sessions_yield across partitions
// (docs/cluster-internals.md, "Session tools across partitions"): the run stays at the
// requester's partition (0), the child lives at its agent's partition (1) and is created
// there by one spawn mail; the child's run end goes back as an event mail, the announcement
// stays at home. Exactly once under resends, lost answers and restarts. Two engines on one
// ManualClock (session_mail_fixture.h).
#include "tools/session_mail_fixture.h"

namespace statewatch::testing {
namespace {

class SessionMailSpawnTest : public SessionMailFixture {
 protected:
  void SetUp() override {
    SessionMailFixture::SetUp();
    // The requester's route: a task carries it, an announcement goes back on it.
    SessionRecord caller;
    caller.name = SessionName{home_agent_, caller_};
    caller.last_channel = "telegram";
    caller.last_to = "chat-7";
    ASSERT_OK(SessionTables(home()).UpsertSession(caller));
  }

  struct Spawned {
    std::string run_id;
    std::string child;
  };
  Spawned SpawnRemote(std::string_view extra = "") {
    std::string params = "{\"task\":\"count the stars\",\"agentId\":\"" + dest_agent_ + "\"" +
                         std::string(extra) + "}";
    auto a = Call("sessions_spawn", params);
    EXPECT_OK(a);
    if (!a.ok()) return {};
    EXPECT_EQ(json::value_to<std::string>(a->result.at("status")), "accepted");
    return Spawned{json::value_to<std::string>(a->result.at("runId")),
                   json::value_to<std::string>(a->result.at("childSessionKey"))};
  }
  std::vector<Event> EventsOfKind(Engine& engine, const std::string& key,
                                  const std::string& kind) {
    std::vector<Event> out;
    for (Event& e : EventsOf(engine, key)) {
      if (e.kind == kind) out.push_back(std::move(e));
    }
    return out;
  }
  std::vector<Delivery> AnnouncementsAtHome() {
    std::vector<Delivery> out;
    for (Delivery& d : DeliveriesTo(home(), caller_)) {
      if (d.type == "announce") out.push_back(std::move(d));
    }
    return out;
  }
  Result<tools::RunUpdate> Finish(const std::string& run_id, std::string_view status,
                                  std::string_view result) {
    auto u = parts_[0].messaging->OnRunFinish(run_id, status, result);
    return u;
  }
};

// child_spawned seeds the caller's cursor on the child; a reset of the caller that began
// after the spawn, while its mail was still in the outbox, removes that cursor too.
TEST_F(SessionMailSpawnTest, AResetAfterASpawnIsNotOutlivedByTheSeededCursor) {
  Spawned s = SpawnRemote();
  ResetCallerAsASagaDoes();
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(EventsOfKind(dest(), s.child, "child_spawned").size(), 1u);
  auto cursor = dest().Cursor(caller_, SessionName{dest_agent_, s.child});
  ASSERT_OK(cursor);
  EXPECT_FALSE(cursor->has_value());

  Spawned later = SpawnRemote();  // after the reset: seeded
  EXPECT_EQ(Pump().sent, 1);
  cursor = dest().Cursor(caller_, SessionName{dest_agent_, later.child});
  ASSERT_OK(cursor);
  EXPECT_TRUE(cursor->has_value());
}

TEST_F(SessionMailSpawnTest, TheChildIsCreatedAtItsPartitionExactlyOnce) {
  Spawned s = SpawnRemote(",\"label\":\"stars\",\"model\":\"m-1\"");
  EXPECT_EQ(s.child.rfind("agent:" + dest_agent_ + ":subagent:", 0), 0u) << s.child;
  // Home: the run (running), one outbox row, the caller's directory lists partition 1.
  auto run = SessionTablesView(home()).GetRun(s.run_id);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ((*run)->status, "running");
  EXPECT_EQ((*run)->target.session_key, s.child);
  EXPECT_EQ(OutboxSize(), 1u);
  auto listed = WatcherDirectory(home()).Lookup(caller_);
  ASSERT_OK(listed);
  EXPECT_EQ(listed->partitions, std::vector<uint32_t>{1});
  EXPECT_TRUE(DeliveriesTo(dest(), s.child).empty());

  // Applied, but the answer is lost: the resend changes nothing.
  lose_answer_ = true;
  EXPECT_EQ(Pump().failed, 1);
  lose_answer_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(OutboxSize(), 0u);

  SessionName child{dest_agent_, s.child};
  auto record = SessionTablesView(dest()).GetSession(child);
  ASSERT_OK(record);
  ASSERT_TRUE(record->has_value());
  EXPECT_EQ((*record)->parent_session_key, caller_);
  EXPECT_EQ((*record)->label, "stars");
  EXPECT_EQ((*record)->model, "m-1");
  EXPECT_EQ((*record)->runtime, "subagent");
  auto spawned = EventsOfKind(dest(), s.child, "child_spawned");
  ASSERT_EQ(spawned.size(), 1u);
  EXPECT_EQ(spawned[0].dedupe_key, "child-spawned:" + s.run_id);
  EXPECT_EQ(spawned[0].actor_id, caller_);
  EXPECT_EQ(spawned[0].run_id, s.run_id);
  // child_spawned seeded the parent's cursor at the child's partition.
  auto cursor = dest().Cursor(caller_, child);
  ASSERT_OK(cursor);
  EXPECT_TRUE(cursor->has_value());
  auto tasks = DeliveriesTo(dest(), s.child);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].type, "task");
  EXPECT_EQ(tasks[0].text, "count the stars");
  EXPECT_EQ(tasks[0].run_id, s.run_id);
  EXPECT_EQ(tasks[0].source_session_key, caller_);
  EXPECT_EQ(tasks[0].route.channel, "telegram");
  EXPECT_EQ(tasks[0].route.to, "chat-7");
  ASSERT_TRUE(tasks[0].spawn.has_value());
  EXPECT_EQ(tasks[0].spawn->label, "stars");
  EXPECT_EQ(tasks[0].spawn->depth, 1);
  EXPECT_EQ(parts_[1].published.size(), 1u);
  auto transcript = SessionTablesView(dest()).RecentTranscript(child, 10);
  ASSERT_OK(transcript);
  ASSERT_EQ(transcript->size(), 1u);
  EXPECT_EQ((*transcript)[0].content_json, "\"count the stars\"");

  // The same mail once more (a new home owner resending): applied before, nothing changes.
  SessionMail again;
  again.key = s.run_id + ":1spawn";
  auto applied = SessionMailTables(dest()).Applied(again.key);
  ASSERT_OK(applied);
  EXPECT_TRUE(*applied);
}

// A spawn across partitions lists the child's partition in the caller's watcher directory,
// then writes the run and the mail: its X-Request-Id record rides on the mail's group, so it
// is kept exactly when the spawn was (as for a watched send, session_mail_test.cc).
TEST_F(SessionMailSpawnTest, ASpawnsRequestRecordIsWrittenWithItsMail) {
  const std::string params =
      "{\"task\":\"count the stars\",\"agentId\":\"" + dest_agent_ + "\"}";
  ExpectTheRecordExactlyWithTheMail([&] { (void)Call("sessions_spawn", params); });
}

TEST_F(SessionMailSpawnTest, ARestartedDestinationAndANewHomeOwnerStillApplyOnce) {
  down_ = true;
  Spawned s = SpawnRemote();
  EXPECT_EQ(Pump().failed, 1);
  forwarder_.reset();
  Open(0, /*cross_partition=*/true);  // the home fails over
  forwarder_ = NewForwarder();
  down_ = false;
  lose_answer_ = true;
  EXPECT_EQ(Pump().failed, 1);  // applied, answer lost
  Open(1, /*cross_partition=*/true);  // the destination restarts
  lose_answer_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 1);
  EXPECT_EQ(DeliveriesTo(dest(), s.child).size(), 1u);
  EXPECT_EQ(EventsOfKind(dest(), s.child, "child_spawned").size(), 1u);
}

TEST_F(SessionMailSpawnTest, AForkCarriesTheRequestersTranscript) {
  TranscriptMessage a, b;
  a.role = "user";
  a.content_json = "\"hello\"";
  b.role = "assistant";
  b.content_json = "\"hi there\"";
  ASSERT_OK(SessionTables(home()).AppendTranscript(SessionName{home_agent_, caller_}, {a, b}));
  Spawned s = SpawnRemote(",\"context\":\"fork\"");
  EXPECT_EQ(Pump().sent, 1);
  auto transcript =
      SessionTablesView(dest()).RecentTranscript(SessionName{dest_agent_, s.child}, 10);
  ASSERT_OK(transcript);
  ASSERT_EQ(transcript->size(), 3u);
  EXPECT_EQ((*transcript)[0].role, "user");
  EXPECT_EQ((*transcript)[0].content_json, "\"hello\"");
  EXPECT_EQ((*transcript)[1].role, "assistant");
  EXPECT_EQ((*transcript)[1].content_json, "\"hi there\"");
  EXPECT_EQ((*transcript)[2].content_json, "\"count the stars\"");
  EXPECT_LT((*transcript)[0].index, (*transcript)[2].index);
}

TEST_F(SessionMailSpawnTest, FinishRecordsTheEndAtTheChildAndAnnouncesAtHomeOnce) {
  Spawned s = SpawnRemote();
  EXPECT_EQ(Pump().sent, 1);
  auto u = Finish(s.run_id, "ok", "42 stars");
  ASSERT_OK(u);
  EXPECT_TRUE(u->applied);
  EXPECT_EQ(u->status, "ok");
  ASSERT_EQ(u->deliveries.size(), 1u);  // the announcement, at home
  EXPECT_GT(u->deliveries[0].id, 0u);
  auto announced = AnnouncementsAtHome();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].run_id, s.run_id);
  EXPECT_NE(announced[0].text.find("42 stars"), std::string::npos);
  EXPECT_EQ(announced[0].route.channel, "telegram");
  EXPECT_EQ(OutboxSize(), 1u);  // the event, to the child's partition
  EXPECT_GE(parts_[0].mail_wakes, 2);

  lose_answer_ = true;
  EXPECT_EQ(Pump().failed, 1);
  lose_answer_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 1);
  auto ended = EventsOfKind(dest(), s.child, "run_completed");
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].dedupe_key, "run-terminal:" + s.run_id);
  EXPECT_EQ(ended[0].actor_id, s.child);
  EXPECT_EQ(ended[0].summary, "child run completed");
  // The run's end notifies nobody (journal only), but the parent's cursor at the child's
  // partition, seeded by child_spawned, sees a notifying change of the child.
  auto pending = dest().PendingNotices(caller_);
  ASSERT_OK(pending);
  EXPECT_TRUE(pending->empty());
  EventInput human;
  human.session_key = s.child;
  human.kind = "human_direct_message";
  human.actor_type = ActorType::kHuman;
  human.summary = "a human wrote to the child";
  ASSERT_OK(dest().Record(human));
  pending = dest().PendingNotices(caller_);
  ASSERT_OK(pending);
  EXPECT_EQ(pending->size(), 1u);

  // A second finish (the gateway's retry) is not applied and announces nothing.
  auto again = Finish(s.run_id, "ok", "42 stars");
  ASSERT_OK(again);
  EXPECT_FALSE(again->applied);
  EXPECT_TRUE(again->deliveries.empty());
  EXPECT_EQ(AnnouncementsAtHome().size(), 1u);
  EXPECT_EQ(OutboxSize(), 0u);
}

TEST_F(SessionMailSpawnTest, AFailedChildRecordsRunFailedWithItsOutcome) {
  Spawned s = SpawnRemote();
  EXPECT_EQ(Pump().sent, 1);
  ASSERT_OK(Finish(s.run_id, "timeout", ""));
  EXPECT_EQ(Pump().sent, 1);
  auto failed = EventsOfKind(dest(), s.child, "run_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].summary, "child run timed out");
  EXPECT_EQ(json::parse(failed[0].payload_json), json::parse(R"({"outcome":"timeout"})"));
  auto announced = AnnouncementsAtHome();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_NE(announced[0].text.find("timed out"), std::string::npos);
}

TEST_F(SessionMailSpawnTest, YieldCollectsTwoRemoteChildrenIntoOneAnnouncement) {
  Spawned a = SpawnRemote(",\"label\":\"first\"");
  Spawned b = SpawnRemote(",\"label\":\"second\"");
  EXPECT_EQ(Pump().sent, 2);
  auto y = Call("sessions_yield", "{}");
  ASSERT_OK(y);
  EXPECT_EQ(y->result.at("waitingFor").to_number<int64_t>(), 2);
  auto first = Finish(a.run_id, "ok", "alpha");
  ASSERT_OK(first);
  EXPECT_TRUE(first->deliveries.empty());  // held for the yield
  EXPECT_TRUE(AnnouncementsAtHome().empty());
  ASSERT_OK(Finish(b.run_id, "error", "beta broke"));
  auto announced = AnnouncementsAtHome();
  ASSERT_EQ(announced.size(), 1u);
  EXPECT_EQ(announced[0].source_tool, "sessions_yield");
  EXPECT_NE(announced[0].text.find("alpha"), std::string::npos);
  EXPECT_NE(announced[0].text.find("beta broke"), std::string::npos);
  EXPECT_EQ(Pump().sent, 2);  // both ends reach the children
  EXPECT_EQ(EventsOfKind(dest(), a.child, "run_completed").size(), 1u);
  EXPECT_EQ(EventsOfKind(dest(), b.child, "run_failed").size(), 1u);
  // A late retry of either finish announces nothing more.
  ASSERT_OK(Finish(a.run_id, "ok", "alpha"));
  EXPECT_EQ(AnnouncementsAtHome().size(), 1u);
}

TEST_F(SessionMailSpawnTest, SubagentsListSteerAndKillARemoteChild) {
  Spawned s = SpawnRemote(",\"label\":\"worker\"");
  EXPECT_EQ(Pump().sent, 1);
  auto list = Call("subagents", R"({"action":"list"})");
  ASSERT_OK(list);
  EXPECT_EQ(list->result.at("total").to_number<int64_t>(), 1);
  const json::object& row = list->result.at("active").as_array().at(0).as_object();
  EXPECT_EQ(json::value_to<std::string>(row.at("sessionKey")), s.child);
  EXPECT_EQ(json::value_to<std::string>(row.at("status")), "running");

  auto steer = Call("subagents", R"({"action":"steer","target":"worker","message":"faster"})");
  ASSERT_OK(steer);
  EXPECT_EQ(json::value_to<std::string>(steer->result.at("status")), "accepted");
  EXPECT_EQ(steer->result.at("deliveryId").to_number<int64_t>(), 0);  // assigned at the child's side
  EXPECT_EQ(OutboxSize(), 1u);
  EXPECT_EQ(Pump().sent, 1);
  auto got = DeliveriesTo(dest(), s.child);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1].type, "steer");
  EXPECT_EQ(got[1].text, "faster");

  auto kill = Call("subagents", R"({"action":"kill","target":"worker"})");
  ASSERT_OK(kill);
  EXPECT_EQ(kill->result.at("killed").to_number<int64_t>(), 1);
  EXPECT_EQ(OutboxSize(), 2u);  // the end and the stop
  EXPECT_EQ(Pump().sent, 2);
  auto failed = EventsOfKind(dest(), s.child, "run_failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].summary, "child run cancelled");
  EXPECT_EQ(failed[0].actor_id, caller_);
  got = DeliveriesTo(dest(), s.child);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].type, "announce");
  EXPECT_NE(got[2].text.find("Stop working"), std::string::npos);
  EXPECT_TRUE(AnnouncementsAtHome().empty());  // the killer is not told its own kill
  auto after = Call("subagents", R"({"action":"list"})");
  ASSERT_OK(after);
  EXPECT_EQ(json::value_to<std::string>(
                after->result.at("recent").as_array().at(0).as_object().at("status")),
            "cancelled");
}

TEST_F(SessionMailSpawnTest, AKillReachesTheRunsTheRemoteChildSpawned) {
  Spawned s = SpawnRemote(",\"label\":\"parent-of-one\"");
  EXPECT_EQ(Pump().sent, 1);
  // The child (at partition 1, its home) spawns a grandchild there.
  auto g = parts_[1].messaging->CallTool("sessions_spawn", SessionName{dest_agent_, s.child},
                                         json::parse(R"({"task":"deeper"})").as_object());
  ASSERT_OK(g);
  std::string grandchild_run = json::value_to<std::string>(g->result.at("runId"));
  ASSERT_OK(Call("subagents", R"({"action":"kill","target":"parent-of-one"})"));
  EXPECT_EQ(Pump().sent, 2);  // the end and the stop
  auto run = SessionTablesView(dest()).GetRun(grandchild_run);
  ASSERT_OK(run);
  ASSERT_TRUE(run->has_value());
  EXPECT_EQ((*run)->status, "cancelled");
  EXPECT_EQ((*run)->result, "killed by " + caller_);
  // A resend of the stop changes nothing.
  auto stop_applied = SessionMailTables(dest()).Applied(s.run_id + ":4stop");
  ASSERT_OK(stop_applied);
  EXPECT_TRUE(*stop_applied);
}

TEST_F(SessionMailSpawnTest, ARunsLaterMailWaitsForItsSpawnToArrive) {
  down_ = true;
  Spawned s = SpawnRemote();
  ASSERT_OK(Call("subagents", R"({"action":"kill","target":"last"})"));
  EXPECT_EQ(OutboxSize(), 3u);  // spawn, end, stop
  auto r = Pump();
  EXPECT_EQ(r.failed, 1);  // the spawn; its run's later rows wait for it
  EXPECT_EQ(sends_, 1);
  down_ = false;
  clock_->Advance(200);
  EXPECT_EQ(Pump().sent, 3);
  auto events = EventsOf(dest(), s.child);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].kind, "child_spawned");
  EXPECT_EQ(events[1].kind, "run_failed");
  auto got = DeliveriesTo(dest(), s.child);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, "task");
  EXPECT_EQ(got[1].type, "announce");
}

// One node's window: the journal of a local child is written before the run's group; a crash
// between them (the event recorded, the run still running, no announcement) is repaired by
// the retry, which announces exactly once.
TEST_F(SessionMailSpawnTest, ARetryAfterACrashBeforeTheAnnouncementAnnouncesOnce) {
  auto a = Call("sessions_spawn", R"({"task":"local work"})");  // the caller's own agent
  ASSERT_OK(a);
  std::string run_id = json::value_to<std::string>(a->result.at("runId"));
  std::string child = json::value_to<std::string>(a->result.at("childSessionKey"));
  EXPECT_EQ(OutboxSize(), 0u);
  // The first attempt got as far as the journal, then the process died.
  EventInput ended;
  ended.session_key = child;
  ended.kind = "run_completed";
  ended.actor_type = ActorType::kAgent;
  ended.actor_id = child;
  ended.run_id = run_id;
  ended.summary = "child run completed";
  ended.dedupe_key = "run-terminal:" + run_id;
  ASSERT_OK(home().Record(ended));
  Open(0, /*cross_partition=*/true);
  auto u = Finish(run_id, "ok", "done");
  ASSERT_OK(u);
  EXPECT_TRUE(u->applied);
  EXPECT_EQ(AnnouncementsAtHome().size(), 1u);
  EXPECT_EQ(EventsOfKind(home(), child, "run_completed").size(), 1u);
  // After the run's group, a restart and a retry change nothing.
  Open(0, /*cross_partition=*/true);
  auto again = Finish(run_id, "ok", "done");
  ASSERT_OK(again);
  EXPECT_FALSE(again->applied);
  EXPECT_EQ(AnnouncementsAtHome().size(), 1u);
}

TEST_F(SessionMailSpawnTest, TheWireFormCarriesTheWholeSpawn) {
  TranscriptMessage m;
  m.role = "user";
  m.content_json = "\"context\"";
  ASSERT_OK(SessionTables(home()).AppendTranscript(SessionName{home_agent_, caller_}, {m}));
  Spawned s = SpawnRemote(",\"context\":\"fork\",\"thread\":true");
  auto rows = SessionMailTables(home()).Outbox();
  ASSERT_OK(rows);
  ASSERT_EQ(rows->size(), 1u);
  auto back = tools::MailFromJson(json::value(tools::MailToJson((*rows)[0])));
  ASSERT_OK(back);
  EXPECT_EQ(back->kind, "spawn");
  ASSERT_TRUE(back->child.has_value());
  EXPECT_EQ(back->child->parent_session_key, caller_);
  ASSERT_TRUE(back->event.has_value());
  EXPECT_EQ(back->event->watchers, std::vector<std::string>{caller_});
  ASSERT_EQ(back->transcript.size(), 1u);
  EXPECT_EQ(back->transcript[0].content_json, "\"context\"");
  ASSERT_TRUE(back->delivery.spawn.has_value());
  EXPECT_TRUE(back->delivery.spawn->thread);
  // An encoded record naming another key is refused by name.
  json::object wire = tools::MailToJson((*rows)[0]);
  wire["key"] = "other:1spawn";
  auto bad = tools::MailFromJson(json::value(wire));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("another key"), std::string::npos);
  (void)s;
}

TEST_F(SessionMailSpawnTest, WithoutCrossPartitionMailARemoteSpawnIsMisdirected) {
  Open(0, /*cross_partition=*/false);
  auto a = Call("sessions_spawn", "{\"task\":\"x\",\"agentId\":\"" + dest_agent_ + "\"}");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), Status::Code::kMisdirected);
  EXPECT_EQ(OutboxSize(), 0u);
}

}  // namespace
}  // namespace statewatch::testing

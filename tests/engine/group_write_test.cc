// The side tables' hook (engine/group_write.h): SessionTables writes join the commit group of
// the journal events queued with them, read that group's earlier writes, and DeleteSession
// runs every registered delete step; a handle over an Engine that Engine::Open did not make
// stops with a message. The group is formed as in group_commit_test.cc: the first commit's
// fsync is held while the others queue; every wait is bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "engine/held_sync_engine.h"
#include "statewatch/clock.h"
#include "statewatch/session_tables.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

SessionRecord Update(const std::string& key) {
  SessionRecord r;
  r.name = SessionName{"main", key};
  return r;
}

TEST(GroupWriteTest, SideTableWritesShareTheGroupAndReadItsEarlierWrites) {
  auto opened = OpenHeldSyncEngine("group-write");
  ASSERT_OK(opened);
  engine::EngineImpl* engine = opened->engine;
  storage::FaultInjector* faults = opened->faults.get();
  SessionTables tables(*engine);
  const uint64_t groups_before = engine->Stats()->commit_groups;

  Status first, label, model;
  Result<RecordResult> recorded = Status::IOError("not run");
  std::vector<std::thread> writers;
  faults->HoldSyncs();
  RunRecord held_run;
  held_run.run_id = "held";
  writers.emplace_back([&] { first = tables.PutRun(held_run); });
  bool held = WaitFor([&] { return faults->held_syncs() == 1; });
  // Queued behind the held commit, in this order: an event, then two upserts of one entry.
  // Each write starts on its own thread once the one before it is queued, and is queued
  // when the engine's queue holds `length` commands.
  bool queued = held;
  auto queue_behind = [&](std::function<void()> write, std::size_t length) {
    if (!queued) return;
    writers.emplace_back(std::move(write));
    queued = WaitFor([&] { return engine->TEST_QueueLength() == length; });
  };
  queue_behind([&] { recorded = engine->Record(HumanEvent("agent:main:a")); }, 2);
  // An upsert of agent:main:a with one field set by `set`; its status goes to `*result`.
  auto upsert = [&](std::function<void(SessionRecord&)> set, Status* result) {
    return [&tables, set = std::move(set), result] {
      SessionRecord u = Update("agent:main:a");
      set(u);
      *result = tables.UpsertSession(u);
    };
  };
  queue_behind(upsert([](SessionRecord& u) { u.label = "first"; }, &label), 3);
  queue_behind(upsert([](SessionRecord& u) { u.model = "m1"; }, &model), 4);
  faults->ReleaseSyncs();
  for (std::thread& t : writers) t.join();
  ASSERT_TRUE(held) << "the first commit never reached its fsync";
  ASSERT_TRUE(queued) << "only " << engine->TEST_QueueLength() << " commands queued";
  ASSERT_OK(first);
  ASSERT_OK(recorded);
  ASSERT_OK(label);
  ASSERT_OK(model);
  EXPECT_EQ(engine->Stats()->commit_groups - groups_before, 2u)
      << "the held commit, then the event and both upserts in one group";
  auto entry = tables.GetSession(SessionName{"main", "agent:main:a"});
  ASSERT_OK(entry);
  ASSERT_TRUE(entry->has_value());
  EXPECT_EQ((*entry)->label, std::optional<std::string>("first"))
      << "the second upsert read the first one's write in the same group";
  EXPECT_EQ((*entry)->model, std::optional<std::string>("m1"));
  opened->owner.reset();
  std::filesystem::remove_all(opened->dir);
}

class SessionTablesDeleteTest : public EngineTest {};

TEST_F(SessionTablesDeleteTest, DeleteSessionRunsEveryTablesStepAndKeepsRunsAndDeliveries) {
  SessionTables tables(*engine_);
  const SessionName name = Name("agent:main:gone");
  Human("agent:main:gone");
  SessionRecord entry;
  entry.name = name;
  ASSERT_OK(tables.UpsertSession(entry));
  TranscriptMessage m;
  m.role = "user";
  m.content_json = "\"hi\"";
  ASSERT_OK(tables.AppendTranscript(name, {m}));
  UpstreamLink link;
  link.session = name;
  link.upstream_kind = "jsonl";
  ASSERT_OK(tables.PutUpstreamLink(link));
  RunRecord run;
  run.run_id = "r1";
  run.target = name;
  ASSERT_OK(tables.PutRun(run));
  Delivery d;
  d.agent_id = "main";
  d.session_key = "agent:main:gone";
  auto delivery = tables.EnqueueDelivery(d);
  ASSERT_OK(delivery);

  ASSERT_OK(engine_->DeleteSession(name));
  EXPECT_FALSE(tables.GetSession(name)->has_value());
  EXPECT_TRUE(tables.RecentTranscript(name, 10)->empty());
  EXPECT_FALSE(tables.GetUpstreamLink(name)->has_value());
  EXPECT_TRUE(tables.GetRun("r1")->has_value()) << "runs belong to their requester";
  EXPECT_EQ(tables.PendingDeliveries("main")->size(), 1u) << "deliveries too";
}

// An Engine subclass of the caller's own (a test double) with no commit groups or store of
// its own: what SessionTables' REQUIRES rules out.
class ForeignEngine final : public Engine {
 public:
  Status Start() override { return No(); }
  Result<RecordResult> Record(const EventInput&) override { return No(); }
  Result<std::vector<RecordResult>> RecordMany(const std::vector<EventInput>&) override {
    return No();
  }
  Result<Sequence> StateVersion(const SessionName&) const override { return No(); }
  Result<std::vector<Sequence>> StateVersions(const std::vector<SessionName>&) const override {
    return No();
  }
  Status ReadChanges(const SessionName&, Sequence, int, RowRenderer, ChangesView*) const override {
    return No();
  }
  Status DeleteSession(const SessionName&) override { return No(); }
  Result<bool> Watch(const std::string&, const SessionName&) override { return No(); }
  Result<WatchManyResult> WatchMany(const std::vector<WatchSpec>&) override { return No(); }
  Result<UnwatchResult> Unwatch(const std::vector<WatchSpec>&) override { return No(); }
  Result<std::vector<Notice>> PendingNotices(const std::string&) const override { return No(); }
  Result<std::vector<Notice>> Drain(const std::string&) override { return No(); }
  Status Acknowledge(const std::string&, const std::vector<SessionName>&) override { return No(); }
  Result<std::optional<CursorState>> Cursor(const std::string&, const SessionName&) const override {
    return No();
  }
  Result<std::vector<std::string>> WatchersOf(const SessionName&) const override { return No(); }
  Status ResetWatcher(const std::string&) override { return No(); }
  Result<uint64_t> Sweep() override { return No(); }
  uint64_t SubscribeWakes(WakeCallback, std::string) override { return 0; }
  void UnsubscribeWakes(uint64_t) override {}
  void RunDueWakes() override {}
  std::optional<int64_t> NextWakeDueMs() const override { return std::nullopt; }
  Result<PruneStats> Prune() override { return No(); }
  Result<VerifyReport> Verify() override { return No(); }
  Result<VerifyReport> Rebuild() override { return No(); }
  Result<EngineStats> Stats() const override { return No(); }
  Result<EnginePulse> Pulse() const override { return No(); }
  Status Backup(const std::string&) const override { return No(); }
  Status ForEachEvent(const std::function<Status(const statewatch::Event&)>&) const override {
    return No();
  }
  const Clock& clock() const override { return clock_; }

 private:
  static Status No() { return Status::FailedPrecondition("a test double"); }
  ManualClock clock_{0};
};

// A handle over an engine the library did not make has no side-table host: it stops with a
// message when it is made (once a static_cast read and wrote through a wrong object).
TEST(GroupWriteDeathTest, AHandleOverAnEngineNotMadeByOpenStopsWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ForeignEngine foreign;
  EXPECT_DEATH(SessionTablesView(foreign).ListRuns().ok(),
               "SessionTables needs an Engine made by Engine::Open; got another Engine subclass");
  RunRecord run;
  run.run_id = "r1";
  EXPECT_DEATH(SessionTables(foreign).PutRun(run).ok(),
               "SessionTables needs an Engine made by Engine::Open");
}

}  // namespace
}  // namespace statewatch::testing

// Group commit (docs/design.md): concurrent `sync` writers share one fsync. The test holds
// the first commit's fsync (a fault-injection hook), lets the other writers queue behind it,
// then releases it: the queued writers must go out as one commit group — fewer groups than
// writes — each with its own sequence, all durable. No timing is asserted: the waits are
// for states (a sync held, N commands queued), each bounded.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "engine/engine_fixture.h"
#include "engine/engine_impl.h"
#include "engine/held_sync_engine.h"
#include "status_matchers.h"
#include "storage/store.h"

namespace statewatch::testing {
namespace {

EventInput Event(int i) {
  EventInput in;
  in.session_key = "agent:main:w" + std::to_string(i);
  in.kind = "human_direct_message";
  in.actor_type = ActorType::kHuman;
  in.summary = "writer " + std::to_string(i);
  return in;
}

TEST(GroupCommitTest, ConcurrentSyncWritersShareOneFsync) {
  constexpr int kWriters = 16;
  auto opened = OpenHeldSyncEngine("group-commit");
  ASSERT_OK(opened);
  engine::EngineImpl* engine = opened->engine;
  storage::FaultInjector* faults = opened->faults.get();
  const uint64_t groups_before = engine->Stats()->commit_groups;

  std::vector<Result<RecordResult>> results(kWriters, Status::IOError("not run"));
  std::vector<std::thread> writers;
  faults->HoldSyncs();
  // The first writer's commit reaches its fsync and stays there...
  writers.emplace_back([&] { results[0] = engine->Record(Event(0)); });
  bool held = WaitFor([&] { return faults->held_syncs() == 1; });
  // ...while the others queue behind it.
  for (int i = 1; held && i < kWriters; ++i) {
    writers.emplace_back([&, i] { results[i] = engine->Record(Event(i)); });
  }
  bool queued = held && WaitFor([&] { return engine->TEST_QueueLength() == kWriters; });
  faults->ReleaseSyncs();
  for (std::thread& t : writers) t.join();
  ASSERT_TRUE(held) << "the first commit never reached its fsync";
  ASSERT_TRUE(queued) << "only " << engine->TEST_QueueLength() << " commands queued";

  std::set<Sequence> sequences;
  for (const auto& r : results) {
    ASSERT_OK(r);
    sequences.insert(r->event.sequence);
  }
  EXPECT_EQ(sequences.size(), static_cast<std::size_t>(kWriters));
  const uint64_t groups = engine->Stats()->commit_groups - groups_before;
  EXPECT_EQ(groups, 2u) << "the held commit, then every queued writer in one group";
  EXPECT_EQ(engine->Stats()->events_recorded, static_cast<uint64_t>(kWriters));
  opened->owner.reset();
  std::filesystem::remove_all(opened->dir);
}

}  // namespace
}  // namespace statewatch::testing

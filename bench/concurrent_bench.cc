// Concurrent writers (issue: group commit where it matters). A gateway has many sessions at
// once: N threads each record single events with `sync` durability, every one durable before
// it returns. statewatch groups the callers queued behind its commit leader into one batch and
// one fsync; RocksDB groups concurrent writers the same way (the floor); the reference design
// gives every writer its own SQLite connection (synchronous=FULL, busy_timeout 5 s, one
// transaction per event), serialised by SQLite's write lock.
//
// One round = every system records 3,200 events (N threads x 3,200/N each, all starting
// together on a WriterPool), in alternation (InterleavedRun). Thread t's i-th event goes to
// session (i * N + t) mod 1,000, the same on every system. SQLite with a connection per
// writer manages a few hundred events/s (its writers spend their time in the busy handler's
// sleeps, 1 ms and up) and the shared connection below some hundreds, so SQLite's rounds are
// 400 events.
//
// A SQLite writer that still finds the lock taken after its busy timeout gets SQLITE_BUSY:
// the reference would log and drop that event. Here the writer retries it (so every system
// records the same events) and the retries are counted (sqlite_busy_retries).
//
// A second SQLite figure is the best the reference could do with these writers: one shared
// connection, the writers taking turns on a mutex (no busy handler, still one transaction
// and one fsync per event) — sqlite_shared.
//
//   concurrent/sync/writers:<8|32>
//     counters statewatch_per_s, floor_per_s, sqlite_per_s, sqlite_shared_per_s (events/s),
//              vs_sqlite, vs_sqlite_shared, vs_floor,
//              statewatch_events_per_group (events per commit group: per fsync),
//              sqlite_busy_retries (per SQLite round)
#include <algorithm>
#include <atomic>
#include <mutex>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/raw_rocksdb_floor.h"
#include "bench/sqlite_reference.h"
#include "bench/writer_pool.h"

namespace statewatch::bench {
namespace {

constexpr int64_t kEventsPerRound = 3200;
constexpr int64_t kSqliteEventsPerRound = 400;
constexpr uint64_t kSessions = 1000;
constexpr int kBusyRetries = 1000;  // bounds a writer's retries of one event

uint64_t SessionOf(int thread, int threads, int64_t i) {
  return (static_cast<uint64_t>(i) * threads + thread) % kSessions;
}

// Each system's writers, one per thread, with their reusable inputs.
struct Writers {
  int threads;
  int64_t per_thread, sqlite_per_thread;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RawRocksdbFloor> floor;
  std::vector<std::unique_ptr<SqliteReference>> refs;  // one connection per thread
  std::unique_ptr<SqliteReference> shared_ref;         // one connection for all
  std::mutex shared_mu;                                // the turn on shared_ref
  std::vector<EventInput> sw_inputs;
  std::vector<RefEventInput> ref_inputs;
  std::atomic<int64_t> busy_retries{0};

  explicit Writers(int n)
      : threads(n),
        per_thread(std::max<int64_t>(1, kEventsPerRound / n)),
        sqlite_per_thread(std::max<int64_t>(1, kSqliteEventsPerRound / n)),
        sw_inputs(n, StandardEvent(0)),
        ref_inputs(n, StandardRefEvent(0)) {}

  Status Open(const TempDir& dir) {
    auto engine_or = OpenEngine(dir.Sub("statewatch"), Durability::kSync);
    if (!engine_or.ok()) return engine_or.status();
    engine = std::move(*engine_or);
    auto floor_or = RawRocksdbFloor::Open(dir.Sub("floor"),
                                          static_cast<std::size_t>(StandardJournalRow().value));
    if (!floor_or.ok()) return floor_or.status();
    floor = std::move(*floor_or);
    for (int t = 0; t < threads; ++t) {
      auto ref = SqliteReference::Open(dir.Sub("reference.db"), SqliteSync::kFull);
      if (!ref.ok()) return ref.status();
      refs.push_back(std::move(*ref));
    }
    auto shared = SqliteReference::Open(dir.Sub("reference-shared.db"), SqliteSync::kFull);
    if (!shared.ok()) return shared.status();
    shared_ref = std::move(*shared);
    return Status::OK();
  }

  Status Statewatch(int t) {
    EventInput& in = sw_inputs[t];
    for (int64_t i = 0; i < per_thread; ++i) {
      SetSession(SessionOf(t, threads, i), &in);
      SW_RETURN_IF_ERROR(engine->Record(in).status());
    }
    return Status::OK();
  }

  Status Floor(int t) {
    for (int64_t i = 0; i < per_thread; ++i)
      SW_RETURN_IF_ERROR(floor->Put(SessionOf(t, threads, i), /*sync=*/true));
    return Status::OK();
  }

  Status Sqlite(int t) {
    RefEventInput& in = ref_inputs[t];
    for (int64_t i = 0; i < sqlite_per_thread; ++i) {
      SetSession(SessionOf(t, threads, i), &in);
      Status st = refs[t]->RecordEvent(in).status();
      for (int retry = 0; st.code() == Status::Code::kBusy && retry < kBusyRetries; ++retry) {
        busy_retries.fetch_add(1, std::memory_order_relaxed);
        st = refs[t]->RecordEvent(in).status();
      }
      SW_RETURN_IF_ERROR(st);
    }
    return Status::OK();
  }

  Status SqliteShared(int t) {
    RefEventInput& in = ref_inputs[t];
    for (int64_t i = 0; i < sqlite_per_thread; ++i) {
      SetSession(SessionOf(t, threads, i), &in);
      std::lock_guard<std::mutex> turn(shared_mu);
      SW_RETURN_IF_ERROR(shared_ref->RecordEvent(in).status());
    }
    return Status::OK();
  }
};

void Concurrent(benchmark::State& state, int threads) {
  TempDir dir;
  Writers w(threads);
  if (!CheckOk(state, w.Open(dir), "open")) return;
  WriterPool pool(threads);
  auto before = w.engine->Stats();
  if (!CheckOk(state, before, "Stats")) return;

  double items = static_cast<double>(w.per_thread * threads);
  InterleavedRun run;
  run.Add(
      "statewatch", [&] { return pool.Run([&](int t) { return w.Statewatch(t); }); },
      {.items = items});
  run.Add(
      "floor", [&] { return pool.Run([&](int t) { return w.Floor(t); }); }, {.items = items});
  run.Add(
      "sqlite", [&] { return pool.Run([&](int t) { return w.Sqlite(t); }); },
      {.items = static_cast<double>(w.sqlite_per_thread * threads)});
  run.Add(
      "sqlite_shared", [&] { return pool.Run([&](int t) { return w.SqliteShared(t); }); },
      {.items = static_cast<double>(w.sqlite_per_thread * threads)});
  run.AddRatio("vs_sqlite", "statewatch", "sqlite");
  run.AddRatio("vs_sqlite_shared", "statewatch", "sqlite_shared");
  run.AddRatio("vs_floor", "statewatch", "floor");
  run.Run(state);

  auto after = w.engine->Stats();
  if (!CheckOk(state, after, "Stats")) return;
  uint64_t groups = after->commit_groups - before->commit_groups;
  uint64_t events = after->events_recorded - before->events_recorded;
  state.counters["statewatch_events_per_group"] =
      groups > 0 ? static_cast<double>(events) / static_cast<double>(groups) : 0;
  state.counters["sqlite_busy_retries"] =
      static_cast<double>(w.busy_retries.load()) / static_cast<double>(state.iterations());
  state.counters["writers"] = threads;
}

}  // namespace

void RegisterConcurrentBenchmarks() {
  for (int threads : {8, 32}) {
    Register("concurrent/sync/writers:" + std::to_string(threads),
             [threads](benchmark::State& s) { Concurrent(s, threads); })
        ->Iterations(Scaled(4));
  }
}

}  // namespace statewatch::bench

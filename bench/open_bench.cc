// Opening with many cursors, opening after a crash-like close, and verify.
//
//   open/statewatch/cursors:1000000   Engine::Open of a database holding 1,000,000 cursors
//                                     (1,000 watchers x 1,000 targets, seeded by
//                                     child_spawned events). Reports the resident memory
//                                     the open adds (RSS delta from /proc/self/statm, heap
//                                     trimmed first) and bytes per cursor. The delta counts
//                                     everything Open allocates: the in-memory cursor table
//                                     and indexes, but also RocksDB's memtables and the
//                                     blocks it reads.
//   open/statewatch/replay:50000      Engine::Open of a database whose last checkpoint is
//                                     older than 50,000 events (500 commit groups of 100):
//                                     what an open after a crash folds back into the
//                                     projections. Seconds per open.
//   verify/statewatch/events:50000    Engine::Verify over 50,000 events and some cursors:
//                                     retained journal rows verified per second. A verify
//                                     reads every row back through the FlatBuffers
//                                     Verifier, checks every file's checksums and replays
//                                     the log after the last checkpoint (a few records, so
//                                     "records replayed" is no unit of work to compare).
#include <algorithm>
#include <chrono>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"

namespace statewatch::bench {
namespace {

constexpr uint64_t kWatchers = 1000;
constexpr uint64_t kTargets = 1000;

// One child_spawned per target, naming every watcher as producer: each seeds 1,000 cursors.
Status SeedCursors(Engine& engine) {
  std::vector<std::string> watchers;
  for (uint64_t w = 0; w < kWatchers; ++w) watchers.push_back(WatcherKey(w));
  std::vector<EventInput> batch;
  for (uint64_t t = 0; t < kTargets; ++t) {
    EventInput in;
    in.session_key = SessionKey(t);
    in.kind = "child_spawned";
    in.actor_type = ActorType::kAgent;
    in.run_id = "run-" + std::to_string(t);
    in.summary = "child session spawned";
    in.dedupe_key = "child-spawned:" + in.run_id;
    in.watchers = watchers;
    batch.push_back(std::move(in));
    if (batch.size() == 10 || t + 1 == kTargets) {
      SW_RETURN_IF_ERROR(engine.RecordMany(batch).status());
      batch.clear();
    }
  }
  return Status::OK();
}

void OpenManyCursors(benchmark::State& state) {
  TempDir dir;
  std::string path = dir.Sub("db");
  {
    auto opened = OpenEngine(path, Durability::kBuffered);
    if (!CheckOk(state, opened, "Engine::Open (fill)")) return;
    if (!CheckOk(state, SeedCursors(**opened), "seed cursors")) return;
    auto stats = (*opened)->Stats();
    if (!CheckOk(state, stats, "Stats")) return;
    if (stats->cursors != kWatchers * kTargets) {
      state.SkipWithError(("seeded " + std::to_string(stats->cursors) + " cursors, expected " +
                           std::to_string(kWatchers * kTargets))
                              .c_str());
      return;
    }
  }
  uint64_t rss_delta = 0;
  double open_seconds = 0;
  for (auto _ : state) {
    TrimHeap();
    uint64_t before = ResidentBytes();
    auto t0 = std::chrono::steady_clock::now();
    auto opened = OpenEngine(path, Durability::kBuffered);
    open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    if (!CheckOk(state, opened, "Engine::Open")) break;
    uint64_t after = ResidentBytes();
    rss_delta = after > before ? after - before : 0;
    std::unique_ptr<Engine> engine = std::move(opened).value();
    engine.reset();  // close, untimed
    state.ResumeTiming();
  }
  double cursors = static_cast<double>(kWatchers * kTargets);
  state.counters["cursors"] = cursors;
  state.counters["open_seconds"] = open_seconds;
  state.counters["rss_delta_bytes"] = static_cast<double>(rss_delta);
  state.counters["bytes_per_cursor"] = static_cast<double>(rss_delta) / cursors;
}

void OpenReplaying(benchmark::State& state) {
  TempDir dir;
  std::string path = dir.Sub("db");
  {
    auto opened = OpenEngine(path, Durability::kBuffered);
    if (!CheckOk(state, opened, "Engine::Open (fill)")) return;
    for (const auto& batch : StandardBatches(1000, 100, 500))
      if (!CheckOk(state, (*opened)->RecordMany(batch), "fill")) return;
  }  // closed without a checkpoint (the cadence is 100,000 records): the log stays
  double seconds = 0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    auto opened = OpenEngine(path, Durability::kBuffered);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    state.PauseTiming();
    if (!CheckOk(state, opened, "Engine::Open")) break;
    opened->reset();  // close, untimed
    state.ResumeTiming();
  }
  double opens = static_cast<double>(std::max<int64_t>(1, state.iterations()));
  state.counters["open_seconds"] = seconds / opens;
  state.counters["events_replayed"] = 50000;
}

void VerifyBench(benchmark::State& state) {
  TempDir dir;
  auto opened = OpenEngine(dir.Sub("db"), Durability::kBuffered);
  if (!CheckOk(state, opened, "Engine::Open")) return;
  Engine& engine = **opened;
  // 100 watchers on 10 sessions each, then 50,000 events: notices open and coalesce.
  for (uint64_t w = 0; w < 100; ++w) {
    for (uint64_t t = 0; t < 10; ++t) {
      if (!CheckOk(state, engine.Watch(WatcherKey(w), {kAgent, SessionKey(w * 10 + t)}), "Watch"))
        return;
    }
  }
  for (const auto& batch : StandardBatches(1000, 100, 500))
    if (!CheckOk(state, engine.RecordMany(batch), "fill")) return;
  for (uint64_t w = 0; w < 50; ++w)
    if (!CheckOk(state, engine.Drain(WatcherKey(w)), "Drain")) return;
  uint64_t rows = 0;
  uint64_t replayed = 0;
  bool clean = true;
  for (auto _ : state) {
    auto report = engine.Verify();
    if (!CheckOk(state, report, "Verify")) break;
    rows += report->rows_checked;
    replayed += report->records_replayed;
    clean = clean && report->ok;
  }
  state.SetItemsProcessed(static_cast<int64_t>(rows));
  double iterations = static_cast<double>(std::max<int64_t>(1, state.iterations()));
  state.counters["rows_checked"] = static_cast<double>(rows) / iterations;
  state.counters["records_replayed"] = static_cast<double>(replayed) / iterations;
  state.counters["verify_clean"] = clean ? 1 : 0;
}

}  // namespace

void RegisterOpenBenchmarks() {
  // One repetition: a second open in the same process would reuse freed heap and under-count.
  Register("open/statewatch/cursors:1000000", OpenManyCursors)->Iterations(1)->Repetitions(1);
  Register("open/statewatch/replay:50000", OpenReplaying)->Iterations(3);
  Register("verify/statewatch/events:50000", VerifyBench)->Iterations(3);
}

}  // namespace statewatch::bench

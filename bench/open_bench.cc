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
//   open/statewatch/rows              Engine::Open with 100,000 and then 1,000,000 retained
//                                     rows over the same 1,000 sessions and 1,000 cursors
//                                     (the journal grows in place between the two): seconds
//                                     per open and the resident memory the open adds, each
//                                     size opened 3 times after a clean close. The goal: 10x
//                                     the rows costs at most 1.5x the time and 64 MB more.
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

// The median seconds and RSS delta of `opens` opens of `path` (each closed, untimed).
struct OpenCost {
  double seconds = 0;
  uint64_t rss_delta = 0;
};
Result<OpenCost> MeasureOpens(const std::string& path, uint64_t max_rows, int opens) {
  std::vector<double> seconds;
  std::vector<uint64_t> rss;
  for (int i = 0; i < opens; ++i) {
    TrimHeap();
    uint64_t before = ResidentBytes();
    auto t0 = std::chrono::steady_clock::now();
    auto opened = OpenEngine(path, Durability::kBuffered, max_rows);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!opened.ok()) return opened.status();
    uint64_t after = ResidentBytes();
    rss.push_back(after > before ? after - before : 0);
  }
  std::sort(seconds.begin(), seconds.end());
  std::sort(rss.begin(), rss.end());
  return OpenCost{seconds[seconds.size() / 2], rss[rss.size() / 2]};
}

void OpenByRows(benchmark::State& state) {
  constexpr uint64_t kSessions = 1000, kMaxRows = kNoRowCap;
  const uint64_t small = static_cast<uint64_t>(Scaled(100000));
  const uint64_t large = 10 * small;
  TempDir dir;
  std::string path = dir.Sub("db");
  uint64_t filled = 0;
  // Grows the journal to `rows` (batches of 1,000 over the same sessions), then closes.
  auto fill_to = [&](uint64_t rows) -> Status {
    auto opened = OpenEngine(path, Durability::kBuffered, kMaxRows);
    if (!opened.ok()) return opened.status();
    if (filled == 0) {  // 100 watchers on 10 targets each: 1,000 cursors, never more
      for (uint64_t w = 0; w < 100; ++w) {
        for (uint64_t t = 0; t < 10; ++t) {
          SW_RETURN_IF_ERROR(
              (*opened)->Watch(WatcherKey(w), {kAgent, SessionKey(w * 10 + t)}).status());
        }
      }
    }
    for (; filled < rows; filled += 1000) {
      auto batch = StandardBatches(kSessions, 1000, 1)[0];
      SW_RETURN_IF_ERROR((*opened)->RecordMany(batch).status());
    }
    auto stats = (*opened)->Stats();
    if (!stats.ok()) return stats.status();
    if (stats->journal_rows != rows) {
      return Status::FailedPrecondition("filled " + std::to_string(stats->journal_rows) +
                                        " rows, expected " + std::to_string(rows));
    }
    return Status::OK();
  };
  OpenCost at_small, at_large;
  for (auto _ : state) {
    if (!CheckOk(state, fill_to(small), "fill to the small size")) return;
    auto s = MeasureOpens(path, kMaxRows, 3);
    if (!CheckOk(state, s, "open (small)")) return;
    if (!CheckOk(state, fill_to(large), "fill to the large size")) return;
    auto l = MeasureOpens(path, kMaxRows, 3);
    if (!CheckOk(state, l, "open (large)")) return;
    at_small = *s;
    at_large = *l;
  }
  state.counters["rows_small"] = static_cast<double>(small);
  state.counters["rows_large"] = static_cast<double>(large);
  state.counters["open_seconds_small"] = at_small.seconds;
  state.counters["open_seconds_large"] = at_large.seconds;
  state.counters["time_ratio"] = at_large.seconds / std::max(at_small.seconds, 1e-9);
  state.counters["rss_small_bytes"] = static_cast<double>(at_small.rss_delta);
  state.counters["rss_large_bytes"] = static_cast<double>(at_large.rss_delta);
  state.counters["rss_added_bytes"] =
      static_cast<double>(at_large.rss_delta) - static_cast<double>(at_small.rss_delta);
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
  // One iteration: the journal is grown in place from the small size to the large one.
  Register("open/statewatch/rows", OpenByRows)->Iterations(1)->Repetitions(1);
}

}  // namespace statewatch::bench

// Record throughput (architecture.md §7): one event per write and batches of 100, over 1
// and 1,000 sessions, durable (sync) and buffered. Each benchmark measures statewatch, the
// raw RocksDB floor and the SQLite reference (synchronous=FULL for sync, NORMAL for
// buffered) in alternation, in one loop (see InterleavedRun), each in its own directory.
//
// Every event is the standard human message (a notifying kind) to a session with no
// watchers; row-cap pruning is off here (bench/prune_bench.cc measures it).
//
//   record/<single|batch100>/<sync|buffered>/sessions:<n>
//     counters statewatch_per_s, floor_per_s, sqlite_per_s (events/s),
//              vs_floor, vs_sqlite (statewatch / baseline)
#include <algorithm>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/raw_rocksdb_floor.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr std::size_t kBatch = 100;

enum class Mode { kSingle, kBatch };
const char* ModeName(Mode m) { return m == Mode::kSingle ? "single" : "batch100"; }

// Inputs built before timing: one event per session, and a cycle of batches that records
// every session once per cycle.
struct Workload {
  std::vector<EventInput> singles;
  std::vector<std::vector<EventInput>> batches;
  std::vector<RefEventInput> ref_singles;
  std::vector<std::vector<RefEventInput>> ref_batches;

  explicit Workload(uint64_t sessions) {
    for (uint64_t i = 0; i < sessions; ++i) singles.push_back(StandardEvent(i));
    batches = StandardBatches(sessions, kBatch, std::max<uint64_t>(1, sessions / kBatch));
    for (const EventInput& in : singles) ref_singles.push_back(ToRef(in));
    ref_batches = ToRef(batches);
  }
};

void Record(benchmark::State& state, Mode mode, Durability d, uint64_t sessions) {
  TempDir dir;
  auto engine = OpenEngine(dir.Sub("statewatch"), d);
  if (!CheckOk(state, engine, "Engine::Open")) return;
  auto floor = RawRocksdbFloor::Open(dir.Sub("floor"), SerializedEventBytes());
  if (!CheckOk(state, floor, "RawRocksdbFloor::Open")) return;
  SqliteSync sync = d == Durability::kSync ? SqliteSync::kFull : SqliteSync::kNormal;
  auto ref = SqliteReference::Open(dir.Sub("reference.db"), sync);
  if (!CheckOk(state, ref, "SqliteReference::Open")) return;

  const Workload w(sessions);
  bool single = mode == Mode::kSingle;
  double items = single ? 1 : kBatch;
  std::size_t i_sw = 0, i_floor = 0, i_ref = 0;
  Engine& e = **engine;
  RawRocksdbFloor& f = **floor;
  SqliteReference& r = **ref;
  InterleavedRun run;
  run.Add(
      "statewatch",
      [&]() -> Status {
        std::size_t i = i_sw++;
        return single ? e.Record(w.singles[i % w.singles.size()]).status()
                      : e.RecordMany(w.batches[i % w.batches.size()]).status();
      },
      items);
  run.Add(
      "floor",
      [&]() -> Status {
        uint64_t i = i_floor++;
        return single ? f.Put(i % sessions, d == Durability::kSync)
                      : f.PutBatch(i * kBatch, sessions, kBatch, d == Durability::kSync);
      },
      items);
  run.Add(
      "sqlite",
      [&]() -> Status {
        std::size_t i = i_ref++;
        return single ? r.RecordEvent(w.ref_singles[i % w.ref_singles.size()]).status()
                      : r.RecordBatch(w.ref_batches[i % w.ref_batches.size()]).status();
      },
      items);
  run.AddRatio("vs_floor", "statewatch", "floor");
  run.AddRatio("vs_sqlite", "statewatch", "sqlite");
  run.Run(state);
  state.counters["floor_value_bytes"] = static_cast<double>(SerializedEventBytes());
}

}  // namespace

void RegisterRecordBenchmarks() {
  for (Mode mode : {Mode::kSingle, Mode::kBatch}) {
    for (Durability d : {Durability::kSync, Durability::kBuffered}) {
      for (uint64_t sessions : {1, 1000}) {
        std::string name = std::string("record/") + ModeName(mode) + "/" + DurabilityName(d) +
                           "/sessions:" + std::to_string(sessions);
        Register(name, [=](benchmark::State& s) { Record(s, mode, d, sessions); });
      }
    }
  }
}

}  // namespace statewatch::bench

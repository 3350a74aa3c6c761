// Record throughput (architecture.md §7): one event per write and batches of 100, over 1
// and 1,000 sessions, durable (sync) and buffered — for statewatch, the raw RocksDB floor and
// the SQLite reference (synchronous=FULL matches sync, NORMAL matches buffered).
//
// Every event is the standard human message (a notifying kind) to a session with no
// watchers; row-cap pruning is off here (bench/prune_bench.cc measures it).
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

// Inputs built before timing: one event per session, and a cycle of batches.
struct Workload {
  std::vector<EventInput> singles;
  std::vector<std::vector<EventInput>> batches;
};

Workload MakeWorkload(uint64_t sessions) {
  Workload w;
  for (uint64_t i = 0; i < sessions; ++i) w.singles.push_back(StandardEvent(i));
  std::size_t cycle = std::max<uint64_t>(1, sessions / kBatch);  // every session once per cycle
  w.batches = StandardBatches(sessions, kBatch, cycle);
  return w;
}

void SetItems(benchmark::State& state, Mode mode) {
  state.SetItemsProcessed(state.iterations() * (mode == Mode::kBatch ? kBatch : 1));
}

void RecordStatewatch(benchmark::State& state, Mode mode, Durability d, uint64_t sessions) {
  TempDir dir;
  auto opened = OpenEngine(dir.Sub("db"), d);
  if (!CheckOk(state, opened, "Engine::Open")) return;
  Engine& engine = **opened;
  Workload w = MakeWorkload(sessions);
  std::size_t i = 0;
  for (auto _ : state) {
    Status st = mode == Mode::kSingle ? engine.Record(w.singles[i % w.singles.size()]).status()
                                      : engine.RecordMany(w.batches[i % w.batches.size()]).status();
    ++i;
    if (!CheckOk(state, st, "record")) break;
  }
  SetItems(state, mode);
}

void RecordFloor(benchmark::State& state, Mode mode, Durability d, uint64_t sessions) {
  TempDir dir;
  auto opened = RawRocksdbFloor::Open(dir.Sub("db"), SerializedEventBytes());
  if (!CheckOk(state, opened, "RawRocksdbFloor::Open")) return;
  RawRocksdbFloor& floor = **opened;
  bool sync = d == Durability::kSync;
  uint64_t i = 0;
  for (auto _ : state) {
    Status st = mode == Mode::kSingle ? floor.Put(i % sessions, sync)
                                      : floor.PutBatch(i * kBatch, sessions, kBatch, sync);
    ++i;
    if (!CheckOk(state, st, "put")) break;
  }
  SetItems(state, mode);
  state.counters["value_bytes"] = static_cast<double>(SerializedEventBytes());
}

void RecordSqlite(benchmark::State& state, Mode mode, SqliteSync sync, uint64_t sessions) {
  TempDir dir;
  auto opened = SqliteReference::Open(dir.Sub("ref.db"), sync);
  if (!CheckOk(state, opened, "SqliteReference::Open")) return;
  SqliteReference& ref = **opened;
  Workload w = MakeWorkload(sessions);
  std::vector<RefEventInput> singles;
  for (const EventInput& in : w.singles) singles.push_back(ToRef(in));
  std::vector<std::vector<RefEventInput>> batches = ToRef(w.batches);
  std::size_t i = 0;
  for (auto _ : state) {
    Status st = mode == Mode::kSingle ? ref.RecordEvent(singles[i % singles.size()]).status()
                                      : ref.RecordBatch(batches[i % batches.size()]).status();
    ++i;
    if (!CheckOk(state, st, "record")) break;
  }
  SetItems(state, mode);
}

}  // namespace

void RegisterRecordBenchmarks() {
  for (Mode mode : {Mode::kSingle, Mode::kBatch}) {
    for (Durability d : {Durability::kSync, Durability::kBuffered}) {
      SqliteSync sync = d == Durability::kSync ? SqliteSync::kFull : SqliteSync::kNormal;
      for (uint64_t sessions : {1, 1000}) {
        std::string tail = std::string("/") + ModeName(mode) + "/" + DurabilityName(d) +
                           "/sessions:" + std::to_string(sessions);
        Register("record/statewatch" + tail,
                 [=](benchmark::State& s) { RecordStatewatch(s, mode, d, sessions); });
        Register("record/floor" + tail,
                 [=](benchmark::State& s) { RecordFloor(s, mode, d, sessions); });
        std::string system = sync == SqliteSync::kFull ? "sqlite_full" : "sqlite_normal";
        Register("record/" + system + tail,
                 [=](benchmark::State& s) { RecordSqlite(s, mode, sync, sessions); });
      }
    }
  }
}

}  // namespace statewatch::bench

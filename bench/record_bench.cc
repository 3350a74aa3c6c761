// Record throughput (docs/benchmarks.md): one event per write and batches of 100, durable
// (sync) and buffered, into 1 session and into 100,000 sessions picked at random. Each
// benchmark measures, in alternation (InterleavedRun), statewatch, the raw RocksDB floor and
// the SQLite reference (synchronous=FULL for sync, NORMAL for buffered) on both session
// counts: six systems, each in its own directory, each recording the same sessions in the
// same order (SessionPicker).
//
// Runs are long enough to include RocksDB's background work: 200,000-300,000 events per
// system per repetition fill the 16 MiB memtables several times over, so every run pays for
// flushes and L0 compactions — counted and reported (statewatch's both lanes together, from
// the RocksDB info log the engine sends to spdlog; the floor's per lane, from its LOG). Single `sync`
// events are fsync-bound (~4k/s on a quiet disk) and run 1,000 events. SQLite is the slowest system here
// (single events ~10x, random sessions ~6x slower), so to keep `make bench` within its time
// it records on every n-th round only: its rate is still events per second of its own
// time, and its smaller table only favours it.
//
// Every event is the standard human message (a notifying kind) to a session with no
// watchers; row-cap pruning is off here (bench/prune_bench.cc measures it).
//
//   record/<single|batch100>/<sync|buffered>
//     per session count S in {1, 100000}:
//       counters statewatch_S_per_s, floor_S_per_s, sqlite_S_per_s (events/s),
//                vs_floor_S, vs_sqlite_S (statewatch / baseline),
//                statewatch_S_wal_bytes_per_event, floor_S_flushes, floor_S_compactions
//     statewatch_flushes, statewatch_compactions: both statewatch lanes, during the run
//     many_vs_one_cost: statewatch's cost per event with 100,000 random sessions over its
//                cost with one (rate(1) / rate(100000)); floor_many_vs_one_cost likewise.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "bench/bench_registry.h"
#include "bench/bench_util.h"
#include "bench/raw_rocksdb_floor.h"
#include "bench/rocksdb_event_counter.h"
#include "bench/rocksdb_inspect.h"
#include "bench/sqlite_reference.h"

namespace statewatch::bench {
namespace {

constexpr std::size_t kBatch = 100;
constexpr uint64_t kManySessions = 100000;

enum class Mode { kSingle, kBatch };
const char* ModeName(Mode m) { return m == Mode::kSingle ? "single" : "batch100"; }

struct Case {
  Mode mode;
  Durability durability;
  int64_t events;    // per system per repetition
  int sqlite_every;  // SQLite records on every n-th round only
  std::size_t batch() const { return mode == Mode::kSingle ? 1 : kBatch; }
  int64_t iterations() const {
    return std::max<int64_t>(1, Scaled(events) / static_cast<int64_t>(batch()));
  }
  bool sync() const { return durability == Durability::kSync; }
};

// The suffix of a lane's counters: "_1", "_100000". (Appended, not `"_" + ...`, which trips
// GCC 12's -Wrestrict false positive.)
std::string Tag(uint64_t sessions) {
  std::string tag = "_";
  tag += std::to_string(sessions);
  return tag;
}

// statewatch, the floor and the reference, each recording one session count.
struct Lane {
  uint64_t sessions;
  std::string dir_sw, dir_floor;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RawRocksdbFloor> floor;
  std::unique_ptr<SqliteReference> ref;
  SessionPicker pick_sw, pick_floor, pick_ref;
  std::vector<EventInput> sw_batch;
  std::vector<uint64_t> floor_batch;
  std::vector<RefEventInput> ref_batch;

  Lane(uint64_t n, std::size_t batch)
      : sessions(n), pick_sw(n), pick_floor(n), pick_ref(n), floor_batch(batch) {
    sw_batch.assign(batch, StandardEvent(0));
    ref_batch.assign(batch, StandardRefEvent(0));
  }
};

Status OpenLane(const TempDir& dir, const Case& c, Lane* lane) {
  std::string tag = std::to_string(lane->sessions);
  lane->dir_sw = dir.Sub("statewatch-" + tag);
  lane->dir_floor = dir.Sub("floor-" + tag);
  auto engine = OpenEngine(lane->dir_sw, c.durability);
  if (!engine.ok()) return engine.status();
  lane->engine = std::move(*engine);
  auto floor = RawRocksdbFloor::Open(lane->dir_floor,
                                     static_cast<std::size_t>(StandardJournalRow().value));
  if (!floor.ok()) return floor.status();
  lane->floor = std::move(*floor);
  SqliteSync sync = c.sync() ? SqliteSync::kFull : SqliteSync::kNormal;
  auto ref = SqliteReference::Open(dir.Sub("reference-" + tag + ".db"), sync);
  if (!ref.ok()) return ref.status();
  lane->ref = std::move(*ref);
  return Status::OK();
}

// The three systems of one lane as timed operations; inputs are prepared untimed.
void AddLane(const Case& c, Lane& l, InterleavedRun* run) {
  std::string tag = Tag(l.sessions);
  double items = static_cast<double>(c.batch());
  bool single = c.mode == Mode::kSingle;
  bool sync = c.sync();
  run->Add(
      "statewatch" + tag,
      [&l, single] {
        return single ? l.engine->Record(l.sw_batch[0]).status()
                      : l.engine->RecordMany(l.sw_batch).status();
      },
      {.items = items, .before = [&l] {
         for (EventInput& in : l.sw_batch) SetSession(l.pick_sw.Next(), &in);
         return Status::OK();
       }});
  run->Add(
      "floor" + tag,
      [&l, single, sync] {
        return single ? l.floor->Put(l.floor_batch[0], sync) : l.floor->PutBatch(l.floor_batch, sync);
      },
      {.items = items, .before = [&l] {
         for (uint64_t& s : l.floor_batch) s = l.pick_floor.Next();
         return Status::OK();
       }});
  run->Add(
      "sqlite" + tag,
      [&l, single] {
        return single ? l.ref->RecordEvent(l.ref_batch[0]).status()
                      : l.ref->RecordBatch(l.ref_batch).status();
      },
      {.items = items, .every = c.sqlite_every, .before = [&l] {
         for (RefEventInput& in : l.ref_batch) SetSession(l.pick_ref.Next(), &in);
         return Status::OK();
       }});
  run->AddRatio("vs_floor" + tag, "statewatch" + tag, "floor" + tag);
  run->AddRatio("vs_sqlite" + tag, "statewatch" + tag, "sqlite" + tag);
}

// After the run: WAL bytes per event, then (databases closed) the floor's background work.
void ReportLane(benchmark::State& state, Lane& l) {
  std::string tag = Tag(l.sessions);
  auto stats = l.engine->Stats();
  if (stats.ok() && stats->events_recorded > 0) {
    state.counters["statewatch" + tag + "_wal_bytes_per_event"] =
        static_cast<double>(stats->wal_bytes) / static_cast<double>(stats->events_recorded);
    state.counters["statewatch" + tag + "_events_per_group"] =
        static_cast<double>(stats->events_recorded) /
        static_cast<double>(std::max<uint64_t>(1, stats->commit_groups));
  }
  l.engine.reset();
  l.floor.reset();
  BackgroundWork work = CountBackgroundWork(l.dir_floor);
  state.counters["floor" + tag + "_flushes"] = static_cast<double>(work.flushes);
  state.counters["floor" + tag + "_compactions"] = static_cast<double>(work.compactions);
}

void Record(benchmark::State& state, const Case& c) {
  TempDir dir;
  RocksdbEventCounter events;  // before the engines open: they log to it
  Lane one(1, c.batch()), many(kManySessions, c.batch());
  for (Lane* lane : {&one, &many}) {
    if (!CheckOk(state, OpenLane(dir, c, lane), "open")) return;
  }
  InterleavedRun run;
  // BENCH_RECORD_LANE=1 or 100000 times one session count only: a profile of one lane
  // (bench/profile.sh), since both lanes run the same code and a stack cannot tell them apart.
  const char* only = std::getenv("BENCH_RECORD_LANE");
  bool both = only == nullptr || *only == '\0';
  for (Lane* lane : {&one, &many}) {
    if (both || std::to_string(lane->sessions) == only) AddLane(c, *lane, &run);
  }
  // Cost per event is the inverse rate: cost(many) / cost(one) = rate(one) / rate(many).
  if (both) {
    run.AddRatio("many_vs_one_cost", "statewatch_1", "statewatch" + Tag(kManySessions));
    run.AddRatio("floor_many_vs_one_cost", "floor_1", "floor" + Tag(kManySessions));
  }
  run.Run(state);
  BackgroundWork work = events.Counts();
  state.counters["statewatch_flushes"] = static_cast<double>(work.flushes);
  state.counters["statewatch_compactions"] = static_cast<double>(work.compactions);
  ReportLane(state, one);
  ReportLane(state, many);
  state.counters["row_bytes"] = StandardJournalRow().total();
  state.counters["row_bytes_probed"] = StandardJournalRow().probed ? 1 : 0;
}

}  // namespace

void RegisterRecordBenchmarks() {
  const Case cases[] = {
      {Mode::kSingle, Durability::kSync, /*events=*/1000, /*sqlite_every=*/1},
      {Mode::kSingle, Durability::kBuffered, 300000, 10},
      {Mode::kBatch, Durability::kSync, 200000, 3},
      {Mode::kBatch, Durability::kBuffered, 300000, 4},
  };
  for (const Case& c : cases) {
    std::string name =
        std::string("record/") + ModeName(c.mode) + "/" + DurabilityName(c.durability);
    Register(name, [c](benchmark::State& s) { Record(s, c); })->Iterations(c.iterations());
  }
}

}  // namespace statewatch::bench

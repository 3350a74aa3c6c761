// WAL bytes per event against the journal row's bytes: how much the engine writes to its
// write-ahead log for each event beyond the row itself (the heads, indexes, log records and
// meta it keeps beside the row). 10,000 standard events over 1,000 sessions (random order)
// are recorded into a fresh engine, singly or in batches of 100; EngineStats::wal_bytes
// (bytes of the batches written to the WAL since open) / EngineStats::events_recorded is
// divided by the bytes of one stored journal row (key + value, read back from the
// database's `journal` column family: StandardJournalRow()).
//
// The figure is a count of bytes, not a time: one repetition says it all.
//
//   wal/<single|batch100>
//     counters wal_bytes_per_event, row_bytes, wal_vs_row (the ratio), row_bytes_probed
#include "bench/bench_registry.h"
#include "bench/bench_util.h"

namespace statewatch::bench {
namespace {

constexpr int64_t kEvents = 10000;
constexpr uint64_t kSessions = 1000;

void WalBytes(benchmark::State& state, std::size_t batch_size) {
  TempDir dir;
  auto engine = OpenEngine(dir.Sub("statewatch"), Durability::kBuffered);
  if (!CheckOk(state, engine, "Engine::Open")) return;
  Engine& e = **engine;
  SessionPicker pick(kSessions);
  std::vector<EventInput> batch(batch_size, StandardEvent(0));
  for (auto _ : state) {
    for (int64_t done = 0; done < kEvents; done += static_cast<int64_t>(batch_size)) {
      for (EventInput& in : batch) SetSession(pick.Next(), &in);
      Status st = batch_size == 1 ? e.Record(batch[0]).status() : e.RecordMany(batch).status();
      if (!CheckOk(state, st, "record")) return;
    }
  }
  auto stats = e.Stats();
  if (!CheckOk(state, stats, "Stats")) return;
  if (stats->events_recorded == 0 || stats->wal_bytes == 0) {
    state.SkipWithError(("EngineStats reports " + std::to_string(stats->wal_bytes) +
                         " WAL bytes for " + std::to_string(stats->events_recorded) + " events")
                            .c_str());
    return;
  }
  double per_event =
      static_cast<double>(stats->wal_bytes) / static_cast<double>(stats->events_recorded);
  const RowBytes& row = StandardJournalRow();
  state.counters["wal_bytes_per_event"] = per_event;
  state.counters["row_bytes"] = row.total();
  state.counters["wal_vs_row"] = per_event / row.total();
  state.counters["row_bytes_probed"] = row.probed ? 1 : 0;
  state.SetItemsProcessed(static_cast<int64_t>(stats->events_recorded));
}

}  // namespace

void RegisterWalBenchmarks() {
  for (std::size_t batch : {std::size_t{1}, std::size_t{100}}) {
    std::string mode = batch == 1 ? "single" : "batch100";
    Register("wal/" + mode, [batch](benchmark::State& s) { WalBytes(s, batch); })
        ->Iterations(1)
        ->Repetitions(1);
  }
}

}  // namespace statewatch::bench

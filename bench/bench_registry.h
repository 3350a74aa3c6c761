// Registration of statewatch's benchmarks. Names are `figure/variant...`; where one system
// is measured alone the system is part of the name (statewatch | sqlite_normal), otherwise
// statewatch and its baselines run in one loop (InterleavedRun) and report one counter
// each. bench/report.py finds its rows by these names and counters: change both together.
//
// Every benchmark measures wall-clock time (UseRealTime): the engine commits on its own
// thread and waits for fsync, so the caller's CPU time says little.
#ifndef STATEWATCH_BENCH_BENCH_REGISTRY_H_
#define STATEWATCH_BENCH_BENCH_REGISTRY_H_

#include <benchmark/benchmark.h>

#include <functional>
#include <string>

namespace statewatch::bench {

inline benchmark::internal::Benchmark* Register(const std::string& name,
                                                std::function<void(benchmark::State&)> fn) {
  return benchmark::RegisterBenchmark(name.c_str(), [fn](benchmark::State& state) { fn(state); })
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

void RegisterRecordBenchmarks();      // record_bench.cc: 1 and 100,000 sessions
void RegisterConcurrentBenchmarks();  // concurrent_bench.cc: 8 and 32 sync writers
void RegisterWalBenchmarks();         // wal_bench.cc: WAL bytes per event
void RegisterChangesBenchmarks();     // changes_bench.cc: pages from SSTs and the memtable
void ReleaseChangesFixture();         // closes the journal changes_bench keeps between runs
void RegisterChangesLeanBenchmarks();  // changes_lean_bench.cc: read APIs on rows in SSTs
void ReleaseChangesLeanFixtures();    // closes the journal changes_lean keeps between runs
void RegisterPruneBenchmarks();       // prune_bench.cc: at the cap vs the hourly pass
void RegisterFanoutBenchmarks();      // fanout_bench.cc
void ReleaseFanoutFixtures();         // closes the fixtures fan-out keeps between runs
void RegisterOpenBenchmarks();        // open_bench.cc: open with many cursors, verify
void RegisterChangesMemtableBenchmarks();  // changes_memtable_bench.cc: read APIs, memtable
void RegisterSessionToolsBenchmarks();     // session_tools_bench.cc: sessions_list, _history
void ReleaseSessionToolsFixtures();        // closes the registry and transcript it keeps
void RegisterMonitorBenchmarks();          // monitor_bench.cc: scan throughput, ticks
void ReleaseMonitorFixtures();             // closes the linked sessions it keeps

}  // namespace statewatch::bench

#endif  // STATEWATCH_BENCH_BENCH_REGISTRY_H_

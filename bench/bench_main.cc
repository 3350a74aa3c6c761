// statewatch_bench: every benchmark of docs/benchmarks.md in one binary. scripts/bench.sh
// runs it with --benchmark_format=json and bench/report.py turns the result into the ratio
// table.
#include <benchmark/benchmark.h>

#include "bench/bench_registry.h"

int main(int argc, char** argv) {
  namespace sb = statewatch::bench;
  sb::RegisterRecordBenchmarks();
  sb::RegisterConcurrentBenchmarks();
  sb::RegisterWalBenchmarks();
  sb::RegisterChangesBenchmarks();
  sb::RegisterChangesLeanBenchmarks();
  sb::RegisterPruneBenchmarks();
  sb::RegisterFanoutBenchmarks();
  sb::RegisterOpenBenchmarks();
  sb::RegisterChangesMemtableBenchmarks();
  sb::RegisterSessionToolsBenchmarks();
  sb::RegisterMonitorBenchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  // Before static destruction tears RocksDB's globals down.
  sb::ReleaseFanoutFixtures();
  sb::ReleaseChangesFixture();
  sb::ReleaseChangesLeanFixtures();
  sb::ReleaseSessionToolsFixtures();
  sb::ReleaseMonitorFixtures();
  benchmark::Shutdown();
  return 0;
}

#!/usr/bin/env bash
# Runs statewatch's benchmarks and prints the ratio table of the README's Performance section.
#
#   scripts/bench.sh BUILD_DIR      (make bench: BUILD_DIR = build-release, a Release tree)
#
# Writes bench/results/raw.json (Google Benchmark JSON, every repetition and the medians),
# then bench/report.py prints the markdown table on stdout and writes
# bench/results/summary.json and bench/results/summary.png. Benchmark progress goes to stderr.
#
# Environment:
#   BENCH_FILTER   a --benchmark_filter regex (default: everything)
#   BENCH_REPS     repetitions per benchmark; the report uses the median (default 3;
#                  5 is steadier but takes ~3 min instead of ~2 on this machine)
#   BENCH_MIN_TIME seconds per benchmark run (default 0.2; a plain number for benchmark 1.7)
#   BENCH_INTERLEAVE  run the repetitions of all benchmarks in random order (default true):
#                  the machine is shared and its disk speed drifts, so a baseline and its
#                  statewatch figure should not be measured minutes apart in one block each.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-build-release}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
BIN="$BUILD_DIR/bench/statewatch_bench"
RESULTS="$ROOT/bench/results"

if [ ! -x "$BIN" ]; then
  echo "bench: $BIN not found; build the Release tree first (make bench)" >&2
  exit 1
fi
mkdir -p "$RESULTS"

echo "bench: running $BIN (a few minutes; progress below)" >&2
SECONDS=0
"$BIN" \
  --benchmark_filter="${BENCH_FILTER:-.}" \
  --benchmark_min_time="${BENCH_MIN_TIME:-0.2}" \
  --benchmark_repetitions="${BENCH_REPS:-3}" \
  --benchmark_enable_random_interleaving="${BENCH_INTERLEAVE:-true}" \
  --benchmark_display_aggregates_only=true \
  --benchmark_format=console \
  --benchmark_out="$RESULTS/raw.json.tmp" \
  --benchmark_out_format=json >&2
mv "$RESULTS/raw.json.tmp" "$RESULTS/raw.json"
echo "bench: benchmarks ran in ${SECONDS}s" >&2

python3 -B "$ROOT/bench/report.py" "$RESULTS/raw.json" --out-dir "$RESULTS"
echo "bench: wrote $RESULTS/raw.json, summary.json, summary.png" >&2

#!/usr/bin/env bash
# Where the time of one benchmark goes, sampled (perf, call graphs through DWARF), split by
# the system each sample belongs to (statewatch, the raw RocksDB floor, SQLite, RocksDB's
# background threads: bench/fold_profile.py). bench/profile.sh counts instructions instead
# (callgrind): repeatable, but blind to cache misses and I/O, which is what a write into
# 100,000 sessions pays for; this one samples the real run.
#
# Usage: bench/perf_profile.sh NAME FILTER [BUILD_DIR]
#   e.g. BENCH_RECORD_LANE=100000 bench/perf_profile.sh batch100-buffered-100k \
#          '^record/batch100/buffered/'
#   Runs BUILD_DIR/bench/statewatch_bench (default build-release) once under perf record at
#   BENCH_SCALE (default 0.3: long enough for memtable flushes), then writes
#   bench/results/profiles/NAME.txt (the folded profile) and NAME.json.
#   Env: BENCH_SCALE, BENCH_RECORD_LANE (1 or 100000: one session count of the record
#   benchmarks), TOP (rows per list, default 15), FREQ (samples/s, default 499).
# Needs perf (apt-get install linux-perf) and permission to sample (root, or
# kernel.perf_event_paranoid <= 1).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

NAME="${1:?usage: bench/perf_profile.sh NAME FILTER [BUILD_DIR]}"
FILTER="${2:?usage: bench/perf_profile.sh NAME FILTER [BUILD_DIR]}"
BUILD_DIR="${3:-build-release}"
BIN="$BUILD_DIR/bench/statewatch_bench"
require_built "$BIN" "make build-release"
require_command perf linux-perf

OUT_DIR="bench/results/profiles"
mkdir -p "$OUT_DIR"
make_scratch_dir statewatch-perf
BENCH_SCALE="${BENCH_SCALE:-0.3}" perf record -q -F "${FREQ:-499}" --call-graph dwarf,16384 \
  -o "$WORK/perf.data" "$BIN" --benchmark_filter="$FILTER" --benchmark_repetitions=1 \
  --benchmark_format=json --benchmark_out="$WORK/bench.json" >"$WORK/bench.log" 2>&1 ||
  { cat "$WORK/bench.log" >&2; exit 1; }
{
  echo "# $NAME: $FILTER, BENCH_SCALE=${BENCH_SCALE:-0.3}, lane ${BENCH_RECORD_LANE:-all}"
  python3 - "$WORK/bench.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1])).get("benchmarks", []):
    keep = {k: round(v, 3) for k, v in b.items()
            if isinstance(v, float) and k.endswith(("_per_s", "vs_floor_1", "vs_floor_100000"))}
    print("# " + b["name"] + " " + json.dumps(keep, sort_keys=True))
PY
  perf script -i "$WORK/perf.data" 2>/dev/null |
    python3 "$(dirname "$0")/fold_profile.py" --top "${TOP:-15}" --json "$OUT_DIR/$NAME.json"
} | tee "$OUT_DIR/$NAME.txt"

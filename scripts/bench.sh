#!/usr/bin/env bash
# Runs statewatch's benchmarks and regenerates the report (docs/benchmarks.md):
#
#   scripts/bench.sh BUILD_DIR      (make bench: BUILD_DIR = build-release, a Release tree)
#
#   1. bench/statewatch_bench (Google Benchmark) -> bench/results/raw.json: every
#      repetition's counters; statewatch and its baselines alternate inside each benchmark.
#   2. bench/http_bench.sh, section status (the daemon answering 200-event pages under wrk)
#      -> bench/results/http.json.
#   2b. bench/restart_bench.py: the daemon's restart after kill -9 mid-load at 100,000 and
#      1,000,000 retained rows (kill -> /healthz 200) -> bench/results/restart.json.
#   3. the cluster figures: tests/cluster/jetstream/cluster_engine_measure (three loopback
#      nats-servers it starts itself; 8 writers on a JetStream R3 partition vs the local log,
#      then a takeover), BENCH_REPS runs -> bench/results/cluster_engine.json.
#   4. bench/report.py -> the tables on stdout, bench/results/summary.json and summary.png,
#      and the table of docs/benchmarks.md (between <!-- bench:begin --> and
#      <!-- bench:end -->) — by default only from a complete run: no BENCH_FILTER,
#      BENCH_SCALE 1, the HTTP benchmark included (see BENCH_TABLE).
# Takes ~15-25 minutes on a shared 2-core machine (docs/benchmarks.md). Progress on stderr.
#
# Environment:
#   BENCH_FILTER      a --benchmark_filter regex (default: everything)
#   BENCH_REPS        repetitions per benchmark (default 3); the report shows medians and
#                     marks figures whose repetitions spread over 25 %
#   BENCH_MIN_TIME    seconds per benchmark whose length is not fixed (default 0.2)
#   BENCH_SCALE       multiplies the fixed amounts of work (default 1; 0.05 for a quick look)
#   BENCH_INTERLEAVE  run the repetitions of all benchmarks in random order (default true)
#   BENCH_HTTP        0 skips the HTTP benchmark (default 1)
#   BENCH_RESTART     0 skips the restart benchmark (default 1; ~3 min)
#   BENCH_CLUSTER     0 skips the cluster figures (default 1; needs nats-server)
#   BENCH_TABLE       auto (default): rewrite docs/benchmarks.md's table after a full run only;
#                     1: also after a partial run (its header says so); 0: never
#   BENCH_RESULTS     where the results go (default bench/results)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-build-release}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
BIN="$BUILD_DIR/bench/statewatch_bench"
RESULTS="${BENCH_RESULTS:-$ROOT/bench/results}"
SCALE="${BENCH_SCALE:-1}"

if [ ! -x "$BIN" ]; then
  echo "bench: $BIN not found; build the Release tree first (make bench)" >&2
  exit 1
fi
mkdir -p "$RESULTS"
load() { cut -d' ' -f1-3 /proc/loadavg; }
LOAD_BEFORE="$(load)"
STARTED="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
SECONDS=0

echo "bench: running $BIN (load average $LOAD_BEFORE; ~15-25 min)" >&2
BENCH_SCALE="$SCALE" "$BIN" \
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

HTTP_ARGS=()
if [ "${BENCH_HTTP:-1}" != 0 ]; then
  rm -f "$RESULTS/http.json"
  SECTIONS=status RUNS=3 DURATION=5 JSON_OUT="$RESULTS/http.json" \
    bash "$ROOT/bench/http_bench.sh" "$BUILD_DIR" >&2
  HTTP_ARGS=(--http "$RESULTS/http.json")
fi

RESTART_ARGS=()
if [ "${BENCH_RESTART:-1}" != 0 ]; then
  rm -f "$RESULTS/restart.json"
  restart_rows="$(python3 -c "import sys; s=float(sys.argv[1]); print(f'{max(1,int(1e5*s))},{max(1,int(1e6*s))}')" "$SCALE")"
  if python3 -B "$ROOT/bench/restart_bench.py" --bin "$BUILD_DIR/statewatch" \
      --rows "$restart_rows" --trials "${BENCH_REPS:-3}" --json "$RESULTS/restart.json" >&2; then
    RESTART_ARGS=(--restart "$RESULTS/restart.json")
  else
    echo "bench: restart_bench.py failed; its figures are left out" >&2
  fi
fi

CLUSTER_ARGS=()
CLUSTER_BIN="$BUILD_DIR/tests/cluster/jetstream/cluster_engine_measure"
if [ "${BENCH_CLUSTER:-1}" != 0 ]; then
  if [ ! -x "$CLUSTER_BIN" ]; then
    echo "bench: $CLUSTER_BIN not found (make bench builds it); cluster figures skipped" >&2
  else
    # One JSON object per run, one run per line; a failed run is reported and left out.
    rm -f "$RESULTS/cluster_engine.json"
    for run in $(seq 1 "${BENCH_REPS:-3}"); do
      echo "bench: cluster_engine_measure, run $run" >&2
      if "$CLUSTER_BIN" --seconds 5 --json "$RESULTS/cluster_engine.run.json" >&2; then
        cat "$RESULTS/cluster_engine.run.json" >>"$RESULTS/cluster_engine.json"
      else
        echo "bench: cluster_engine_measure run $run failed" >&2
      fi
      rm -f "$RESULTS/cluster_engine.run.json"
    done
    [ -s "$RESULTS/cluster_engine.json" ] && CLUSTER_ARGS=(--cluster "$RESULTS/cluster_engine.json")
  fi
fi

LOAD_AFTER="$(load)"
python3 - "$RESULTS/meta.json" "$STARTED" "$SECONDS" "$LOAD_BEFORE" "$LOAD_AFTER" "$SCALE" \
  "${BENCH_FILTER:-}" "${#HTTP_ARGS[@]}" <<'PY'
import datetime, json, sys
out, started, secs, before, after, scale, flt, http = sys.argv[1:]
json.dump({"started_at": started, "finished_at": datetime.datetime.now(datetime.timezone.utc)
           .strftime("%Y-%m-%dT%H:%M:%SZ"), "duration_s": int(secs), "load_before": before,
           "load_after": after, "bench_scale": float(scale), "filter": flt,
           "http": http != "0"},
          open(out, "w"), indent=2)
PY

# A partial run rewrites the table of docs/benchmarks.md only when asked (BENCH_TABLE=1); its
# header then says "NOT a full run", so a short look is never mistaken for the measured figures.
TABLE_ARGS=()
FULL_RUN=0
if [ -z "${BENCH_FILTER:-}" ] && [ "$SCALE" = 1 ] && [ "${#HTTP_ARGS[@]}" -gt 0 ]; then
  FULL_RUN=1
fi
case "${BENCH_TABLE:-auto}" in
  1) TABLE_ARGS=(--table "$ROOT/docs/benchmarks.md") ;;
  auto) if [ "$FULL_RUN" = 1 ]; then TABLE_ARGS=(--table "$ROOT/docs/benchmarks.md"); fi ;;
esac
if [ "${#TABLE_ARGS[@]}" -eq 0 ]; then
  echo "bench: a partial run (filter, scale or no HTTP): docs/benchmarks.md left as it is" \
    "(BENCH_TABLE=1 writes it anyway, marked NOT a full run)" >&2
fi
python3 -B "$ROOT/bench/report.py" "$RESULTS/raw.json" "${HTTP_ARGS[@]}" "${CLUSTER_ARGS[@]}" \
  "${RESTART_ARGS[@]}" \
  --meta "$RESULTS/meta.json" --out-dir "$RESULTS" "${TABLE_ARGS[@]}"
echo "bench: wrote $RESULTS/raw.json, http.json, cluster_engine.json, meta.json, summary.json," \
  "summary.png" \
  "(${SECONDS}s in all; load average $LOAD_BEFORE before, $LOAD_AFTER after)" >&2

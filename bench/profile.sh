#!/usr/bin/env bash
# Where the time of one benchmark goes, as instruction counts (callgrind): repeatable on a
# shared machine where wall-clock profiles are not. Backs the "what limits each" of
# docs/benchmarks.md, "The last run".
#
# Usage: bench/profile.sh FILTER [BUILD_DIR]   e.g.  bench/profile.sh '^record/single/buffered/'
#   Runs BUILD_DIR/bench/statewatch_bench (default build-release) once under
#   valgrind --tool=callgrind, short (BENCH_SCALE, default 0.005), and prints the functions
#   with the most inclusive instructions. Only the calls of one function are collected
#   (COLLECT, a callgrind --toggle-collect pattern; it must not call itself), so that the
#   baselines measured in the same loop do not blur the profile:
#     '*EngineImpl::Execute*'       every write, through the commit queue (the default)
#     '*EngineImpl::ChangesSince*'  a changesSince page
#     '*RawRocksdbFloor::Put*'      the floor's single put, for comparison
#   Divide the total by the calls the benchmark made for a cost per call.
#   Env: TOP (rows, default 40), KEEP (a file to keep the callgrind output in).
# Needs valgrind (apt-get install valgrind).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

FILTER="${1:?usage: bench/profile.sh FILTER [BUILD_DIR]}"
BUILD_DIR="${2:-build-release}"
BIN="$BUILD_DIR/bench/statewatch_bench"
COLLECT="${COLLECT:-*EngineImpl::Execute*}"
require_built "$BIN" "make build-release"
require_command valgrind

OUT="$(mktemp /tmp/statewatch-callgrind-XXXXXX)"
trap 'rm -f "$OUT"' EXIT
BENCH_SCALE="${BENCH_SCALE:-0.005}" valgrind --tool=callgrind --callgrind-out-file="$OUT" \
  --collect-atstart=no --toggle-collect="$COLLECT" \
  "$BIN" --benchmark_filter="$FILTER" --benchmark_repetitions=1 --benchmark_min_time=0.01 \
  >&2 2>"$OUT.log" || { cat "$OUT.log" >&2; rm -f "$OUT.log"; exit 1; }
rm -f "$OUT.log"
[ -n "${KEEP:-}" ] && cp "$OUT" "$KEEP"
callgrind_annotate --inclusive=yes "$OUT" 2>/dev/null | head -n "$((${TOP:-40} + 20))"

#!/usr/bin/env bash
# Builds the libFuzzer target (fuzz/input_fuzz.cc) with clang in its own tree and runs it over
# the committed seed corpus (fuzz/corpus). Two modes:
#
#   scripts/fuzz.sh check     what `make test` runs: a fixed number of runs (FUZZ_RUNS, default
#                             200000) from a fixed seed (FUZZ_SEED, default 1) over fuzz/corpus
#                             alone: a fixed amount of fuzzing from a fixed start, the same on
#                             a fast machine and a slow one (runs still diverge a little: some
#                             of the target's coverage depends on addresses);
#   scripts/fuzz.sh explore   what `make fuzz` runs: FUZZ_SECONDS (default 600) from a random
#                             seed, keeping what it finds in $FUZZ_BUILD/corpus across runs.
#
# (env: FUZZ_BUILD, default build-fuzz; JOBS, default 2.) A crash leaves its input in
# $FUZZ_BUILD/artifacts/ and fails the run. Reproduce one with
#   $FUZZ_BUILD/fuzz/statewatch_fuzz $FUZZ_BUILD/artifacts/crash-<hash>
# then turn it into a regression test of the code it broke and add it to fuzz/corpus as
# regression-<what>, so every later `check` run replays it.
# Regenerate the seed corpus with: $FUZZ_BUILD/fuzz/statewatch_fuzz --write-seeds=fuzz/corpus
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
MODE="${1:-check}"
case "$MODE" in check|explore) ;; *) echo "fuzz: unknown mode '$MODE' (check or explore)" >&2; exit 2 ;; esac
CXX_CLANG="$(command -v clang++-14 || command -v clang++ || true)"
[ -n "$CXX_CLANG" ] || { echo "fuzz: clang++ is missing (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }

LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache)")
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_CLANG" \
  -DSTATEWATCH_FUZZ=ON -DSTATEWATCH_BUILD_TESTS=OFF -DSTATEWATCH_BUILD_BENCH=OFF \
  -DSTATEWATCH_WITH_NATS=OFF \
  "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"${JOBS:-2}" --target statewatch_fuzz

mkdir -p "$BUILD/artifacts"
COMMON=(-timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
        -artifact_prefix="$BUILD/artifacts/")
if [ "$MODE" = check ]; then
  # New inputs go to a scratch directory emptied first: what an earlier run found must not
  # change what this one does.
  SCRATCH="$BUILD/check-corpus"
  rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
  RUNS="${FUZZ_RUNS:-200000}"
  SEED="${FUZZ_SEED:-1}"
  echo "fuzz: $RUNS runs of statewatch_fuzz from seed $SEED over fuzz/corpus" >&2
  "$BUILD/fuzz/statewatch_fuzz" -runs="$RUNS" -seed="$SEED" "${COMMON[@]}" \
    "$SCRATCH" "$ROOT/fuzz/corpus"
else
  SECONDS_="${FUZZ_SECONDS:-600}"
  mkdir -p "$BUILD/corpus"
  echo "fuzz: exploring with statewatch_fuzz for ${SECONDS_}s over fuzz/corpus" >&2
  "$BUILD/fuzz/statewatch_fuzz" -max_total_time="$SECONDS_" "${COMMON[@]}" \
    "$BUILD/corpus" "$ROOT/fuzz/corpus"
fi

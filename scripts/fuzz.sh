#!/usr/bin/env bash
# Builds the libFuzzer target (fuzz/input_fuzz.cc) with clang in its own tree and runs it for a
# bounded time over the committed seed corpus (fuzz/corpus). `make test` runs it after the
# plain and ASan suites; `make fuzz` alone.
#
#   scripts/fuzz.sh            (env: FUZZ_SECONDS, default 60; FUZZ_BUILD, default build-fuzz;
#                               JOBS, default 2)
#
# Inputs the run finds interesting go to $FUZZ_BUILD/corpus (never into fuzz/corpus); a crash
# leaves its input in $FUZZ_BUILD/artifacts/ and fails the run. Reproduce one with
#   $FUZZ_BUILD/fuzz/statewatch_fuzz $FUZZ_BUILD/artifacts/crash-<hash>
# then turn it into a regression test of the code it broke (and add it to fuzz/corpus).
# Regenerate the seed corpus with: $FUZZ_BUILD/fuzz/statewatch_fuzz --write-seeds=fuzz/corpus
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${FUZZ_BUILD:-$ROOT/build-fuzz}"
case "$BUILD" in /*) ;; *) BUILD="$ROOT/$BUILD" ;; esac
FUZZ_SECONDS="${FUZZ_SECONDS:-60}"
CXX_CLANG="$(command -v clang++-14 || command -v clang++ || true)"
[ -n "$CXX_CLANG" ] || { echo "fuzz: clang++ is missing (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }

LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache)")
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX_CLANG" \
  -DSTATEWATCH_FUZZ=ON -DSTATEWATCH_BUILD_TESTS=OFF -DSTATEWATCH_BUILD_BENCH=OFF \
  -DSTATEWATCH_WITH_NATS=OFF \
  "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD" -j"${JOBS:-2}" --target statewatch_fuzz

mkdir -p "$BUILD/corpus" "$BUILD/artifacts"
echo "fuzz: running statewatch_fuzz for ${FUZZ_SECONDS}s over fuzz/corpus" >&2
"$BUILD/fuzz/statewatch_fuzz" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/" \
  "$BUILD/corpus" "$ROOT/fuzz/corpus"

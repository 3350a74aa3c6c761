#!/usr/bin/env bash
# `make soak` (not part of `make test`): builds the statewatch binary and runs the kill -9 soak
# of the daemon (scripts/soak.py): several client threads record events over HTTP, the daemon
# is SIGKILLed at random moments and restarted, every acknowledged event must be there exactly
# once, no sequence may be reused, and `statewatch verify` must be clean after every round.
#
#   scripts/soak.sh [BUILD_DIR]   (default build)
#   env: SOAK_ROUNDS (default 1000), SOAK_THREADS (default 4), SOAK_SEED (default: the time)
#
# The last line is `rounds N, acknowledged A, lost 0, reused 0, verify ok` when all held; the
# exit code is non-zero otherwise (the data directory is then kept for inspection).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${1:-build}"
case "$BUILD_DIR" in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac

LAUNCHER=()
command -v ccache >/dev/null && LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER="$(command -v ccache)")
cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${LAUNCHER[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j"${JOBS:-2}" --target statewatch_bin

SEED_ARGS=()
[ -n "${SOAK_SEED:-}" ] && SEED_ARGS=(--seed "$SOAK_SEED")
exec python3 -B "$ROOT/scripts/soak.py" --bin "$BUILD_DIR/statewatch" \
  --rounds "${SOAK_ROUNDS:-1000}" --threads "${SOAK_THREADS:-4}" "${SEED_ARGS[@]}"

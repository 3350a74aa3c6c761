#!/usr/bin/env bash
# Seeded chaos against a local stage-2a cluster, with the checker (scripts/cluster-chaos.py
# says what it does; docs/cluster-internals.md,
# "A local cluster, chaos, and what a client measures").
#
#   scripts/cluster-chaos.sh [--seed S] [--seconds D] [--partitions P] [--lease-ttl T] [--keep]
#
# It runs $STATEWATCH_BIN when set, else build/statewatch, and the reference model binary
# beside it (tests/cluster_smoke_model); make cluster-chaos builds both first.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SW="${STATEWATCH_BIN:-$ROOT/build/statewatch}"
MODEL="${STATEWATCH_MODEL:-$ROOT/build/tests/cluster_smoke_model}"
exec python3 "$ROOT/scripts/cluster-chaos.py" --statewatch "$SW" --model "$MODEL" "$@"

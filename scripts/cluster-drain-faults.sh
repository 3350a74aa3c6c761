#!/usr/bin/env bash
# A drained notice is never lost (issue 37) on a local cluster: drains through a node while a
# partition refuses its part, while its owner is stopped and while it is killed, each retried
# with the same X-Request-Id (scripts/cluster-drain-faults.py says what it checks).
#
#   scripts/cluster-drain-faults.sh [--lease-ttl T] [--dir DIR] [--keep]
#
# It runs $STATEWATCH_BIN when set, else build/statewatch; make cluster-drain-faults builds
# it first. Needs etcd, nats-server and python3 (30 to 50 s: one failover at lease TTL 24 s).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SW="${STATEWATCH_BIN:-$ROOT/build/statewatch}"
exec python3 "$ROOT/scripts/cluster-drain-faults.py" --statewatch "$SW" "$@"

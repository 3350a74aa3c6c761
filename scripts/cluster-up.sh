#!/usr/bin/env bash
# A local cluster in one command (docs/cluster.md §14): three etcd members, three
# nats-servers with JetStream and N statewatch nodes (stage 2a: the controller assigns the
# partitions), all on loopback, all under DIR. It waits until every partition has a serving
# owner and a standby, prints where everything is, writes DIR/env (source it for
# STATEWATCH_ETCD, STATEWATCH_NATS, STATEWATCH_NODES) and returns; the processes keep running.
#
#   scripts/cluster-up.sh DIR [--nodes N] [--partitions P] [--lease-ttl S] [--build BUILD_DIR]
#   scripts/cluster-up.sh --down DIR        stop every process it started (kill -9), keep DIR
#
# Builds the binary first (make build-bin) when BUILD_DIR/statewatch is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = "--down" ]; then
  [ -n "${2:-}" ] || { echo "usage: $0 --down DIR" >&2; exit 2; }
  exec python3 "$ROOT/scripts/cluster-up.py" down "$2"
fi
[ -n "${1:-}" ] && [ "${1#-}" = "$1" ] || {
  echo "usage: $0 DIR [--nodes N] [--partitions P] [--lease-ttl S] [--build BUILD_DIR]" >&2
  echo "       $0 --down DIR" >&2; exit 2; }
BUILD="$ROOT/build"
ARGS=()
DIR="$1"; shift
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ ! -x "$BUILD/statewatch" ]; then
  make -C "$ROOT" build-bin BUILD="$BUILD"
fi
for tool in etcd nats-server; do
  command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || bash "$ROOT/scripts/install-deps.sh"
done
exec python3 "$ROOT/scripts/cluster-up.py" up "$DIR" --statewatch "$BUILD/statewatch" "${ARGS[@]}"

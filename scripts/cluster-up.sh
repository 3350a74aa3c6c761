#!/usr/bin/env bash
# A local cluster in one command (docs/cluster-internals.md,
# "A local cluster, chaos, and what a client measures"): three etcd members, three nats-servers
# with JetStream and N statewatch nodes (stage 2a: the controller assigns the partitions), all
# on free loopback ports, all state under DIR. It waits until every partition has a serving
# owner and a standby, prints one line per node (`node <id> http://127.0.0.1:<port>`) and where
# the rest is, writes DIR/env (source it: STATEWATCH_ETCD, STATEWATCH_NATS, STATEWATCH_NODES,
# STATEWATCH_CLUSTER_NAME) and returns; the processes keep running.
#
#   scripts/cluster-up.sh DIR [--nodes N] [--partitions P] [--lease-ttl S]
#   scripts/cluster-up.sh DIR --down     stop every process it started (by pid), keep DIR
#
# It runs $STATEWATCH_BIN when set, else build/statewatch (built first with make build-bin
# when missing). Defaults: 3 nodes, 4 partitions, a 5 s lease.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  echo "usage: $0 DIR [--nodes N] [--partitions P] [--lease-ttl S]" >&2
  echo "       $0 DIR --down" >&2
  exit 2
}
[ $# -ge 1 ] || usage
DIR="$1"; shift
case "$DIR" in -*) usage ;; esac
if [ "${1:-}" = "--down" ]; then
  exec python3 "$ROOT/scripts/cluster-up.py" down "$DIR"
fi
SW="${STATEWATCH_BIN:-$ROOT/build/statewatch}"
if [ ! -x "$SW" ]; then
  [ -z "${STATEWATCH_BIN:-}" ] || { echo "STATEWATCH_BIN=$SW is not an executable" >&2; exit 2; }
  make -C "$ROOT" build-bin
fi
if ! command -v etcd >/dev/null || ! { command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ]; }; then
  bash "$ROOT/scripts/install-deps.sh"
fi
exec python3 "$ROOT/scripts/cluster-up.py" up "$DIR" --statewatch "$SW" "$@"

#!/usr/bin/env bash
# JetStreamLog's figures on a loopback three-server R3 cluster (tests/log/jetstream/
# jetstream_measure.cc): synchronous and pipelined appends of 1-event and 100-event commit
# groups (records/s, events/s, p50/p99), sealing a frame, reading back — first with the
# JetStream store on this machine's filesystem, then, when run as root and the kernel allows
# a loop mount, on an ext4 image mounted with -o sync (the design's mitigation for 2.9.10
# acknowledging before fsync), and prints both tables. Ratios between the two runs are the
# cost of the sync mount; absolute figures drift with the machine's load. Then the engine
# itself (tests/cluster/jetstream/engine_jetstream_measure.cc): events/s with 8 concurrent
# writers on JetStream vs the local log, and the time a takeover takes to its first write.
#
#   scripts/cluster-bench.sh [SECONDS_PER_FIGURE]     (default 5; ~2 min in all)
#
# Builds log_jetstream_measure in build-cluster-bench (Release). Writes the output to
# bench/results/cluster.txt as well as stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SECONDS_PER_FIGURE="${1:-5}"
BUILD="$ROOT/build-cluster-bench"
OUT="$ROOT/bench/results/cluster.txt"
LAUNCHER=$(command -v ccache || true)

cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DSTATEWATCH_BUILD_BENCH=OFF \
  ${LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$LAUNCHER} >/dev/null
cmake --build "$BUILD" -j2 --target log_jetstream_measure cluster_engine_measure >&2
BIN="$BUILD/tests/log/jetstream/log_jetstream_measure"
ENGINE_BIN="$BUILD/tests/cluster/jetstream/cluster_engine_measure"

WORK=$(mktemp -d /tmp/statewatch-cluster-bench.XXXXXX)
MNT="$WORK/mnt"
cleanup() {
  # The servers of a run that failed may take a moment to exit after their parent.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    mountpoint -q "$MNT" 2>/dev/null || break
    umount "$MNT" 2>/dev/null || sleep 1
  done
  if mountpoint -q "$MNT" 2>/dev/null; then umount -l "$MNT" || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

mkdir -p "$(dirname "$OUT")"
{
  echo "# scripts/cluster-bench.sh $SECONDS_PER_FIGURE — $(date -u +%Y-%m-%dT%H:%M:%SZ)," \
       "$(nproc) cores, $(nats-server --version 2>/dev/null || /usr/sbin/nats-server --version)"
  "$BIN" --seconds "$SECONDS_PER_FIGURE" --label plain
  mkdir -p "$MNT"
  if [ "$(id -u)" -ne 0 ]; then
    echo "sync mount: not measured (needs root to mount a loop device)"
  elif truncate -s 4G "$WORK/store.img" && mkfs.ext4 -q -F "$WORK/store.img" &&
       mount -o loop,sync "$WORK/store.img" "$MNT" 2>"$WORK/mount.err"; then
    "$BIN" --seconds "$SECONDS_PER_FIGURE" --label sync-mount --store-root "$MNT" | tail -n +2
  else
    echo "sync mount: not measured (mount -o loop,sync failed: $(cat "$WORK/mount.err" 2>/dev/null))"
  fi
  echo "# the engine on the stream vs on its local log (cluster_engine_measure)"
  "$ENGINE_BIN" --seconds "$SECONDS_PER_FIGURE"
} | tee "$OUT"

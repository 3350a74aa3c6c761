#!/usr/bin/env bash
# Cluster smoke (docs/cluster.md): three nats-servers on loopback and two partitions, each
# with an owner daemon (`serve --cluster --partitions 2 --role owner`) and a standby daemon
# (`--role standby`); a load driver per partition records events (half with dedupe keys,
# some naming a watcher), registers watches and drains, logging every acknowledged event
# and every operation in the order the partition applied it. Then:
#   - each standby refuses a write and its projection digest equals its owner's;
#   - partition 0: the owner is paused (SIGSTOP), its standby takes over live (`statewatch
#     takeover`), the paused owner resumes (SIGCONT) and its write and its read are
#     refused (503), then it is killed (kill -9);
#   - partition 1: the owner is killed (kill -9) mid-load and its standby takes over while
#     the driver keeps retrying;
#   - the NATS server leading partition 0's stream is killed (kill -9) under load on both;
#   - the checker: every acknowledged event present exactly once, every sequence n*2+p of
#     its partition and unique across both, increasing per session, each watcher's pending
#     notices equal to what the model test's reference model gives for the same operations
#     (tests/cluster/smoke_model.cc), `verify` clean on each new owner and on the old
#     owner's directory refolded from the stream (`cluster follow --once`), and their
#     exports equal.
# The daemons checkpoint every 100 stream positions (SW_SMOKE_CHECKPOINT_EVERY), so each
# stream is purged as it goes (the checker asks each new owner for its last checkpoint's
# position) and the refold of an old owner's directory restores from SW_CKPT
# (docs/cluster-internals.md, "Checkpoints and purge").
# Last line: `acknowledged N, lost 0, duplicated 0, verify ok, digests equal`.
#
#   scripts/cluster-smoke.sh [BUILD_DIR]      (default build; needs nats-server, python3, curl,
#                                             the build's statewatch and cluster_smoke_model;
#                                             ~1 min)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
SW="$BUILD/statewatch"
MODEL="$BUILD/tests/cluster_smoke_model"
PY="python3 $ROOT/scripts/cluster-smoke.py"
NATS=$(command -v nats-server || echo /usr/sbin/nats-server)
WORK=$(mktemp -d /tmp/statewatch-cluster-smoke.XXXXXX)
P=2
PIDS=()
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then  # say why: the daemons' last lines
    for f in "$WORK"/*.log; do
      case "$f" in */n?.log) continue ;; esac
      [ -f "$f" ] && { echo "--- $f"; tail -5 "$f"; }
    done
  fi
  for p in "${PIDS[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# --- three nats-servers -------------------------------------------------------------------
declare -a CPORT RPORT MPORT NPID
for i in 0 1 2; do CPORT[$i]=$(free_port); RPORT[$i]=$(free_port); MPORT[$i]=$(free_port); done
ROUTES=$(printf '"nats-route://127.0.0.1:%s", ' "${RPORT[@]}"); ROUTES="[${ROUTES%, }]"
for i in 0 1 2; do
  cat > "$WORK/n$i.conf" <<CONF
server_name: "n$i"
listen: "127.0.0.1:${CPORT[$i]}"
http: "127.0.0.1:${MPORT[$i]}"
jetstream { store_dir: "$WORK/n$i" }
cluster { name: "smoke", listen: "127.0.0.1:${RPORT[$i]}", routes: $ROUTES }
CONF
  "$NATS" -c "$WORK/n$i.conf" > "$WORK/n$i.log" 2>&1 &
  NPID[$i]=$!; PIDS+=("$!")
done
URLS="nats://127.0.0.1:${CPORT[0]},nats://127.0.0.1:${CPORT[1]},nats://127.0.0.1:${CPORT[2]}"
for _ in $(seq 1 100); do  # bounded: 20 s for a meta leader
  curl -sf "http://127.0.0.1:${MPORT[0]}/jsz" | python3 -c '
import json,sys; sys.exit(0 if json.load(sys.stdin).get("meta_cluster",{}).get("leader") else 1)' \
    2>/dev/null && break
  sleep 0.2
done

serve() {  # NAME PARTITION ROLE: a daemon with its data in $WORK/NAME; sets LAST_PID, LAST_URL
  "$SW" serve --data "$WORK/$1" --durability buffered --listen 127.0.0.1:0 \
    --port-file "$WORK/$1.port" --cluster "$URLS" --partitions "$P" --partition "$2" \
    --role "$3" --cluster-checkpoint-every "${SW_SMOKE_CHECKPOINT_EVERY:-100}" \
    > "$WORK/$1.log" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
  for _ in $(seq 1 300); do [ -s "$WORK/$1.port" ] && break; sleep 0.1; done  # bounded: 30 s
  [ -s "$WORK/$1.port" ] || { echo "daemon $1 did not start:"; tail -5 "$WORK/$1.log"; exit 1; }
  LAST_URL="http://127.0.0.1:$(cat "$WORK/$1.port")"
}

wait_owner() {  # URL: bounded, 10 s for the owner's server to replace the standby's
  for _ in $(seq 1 100); do
    curl -sf "$1/v1/cluster/status" 2>/dev/null | grep -q '"role":"owner"' && return 0
    sleep 0.1
  done
  echo "$1 did not become the owner"; exit 1
}

# --- owners, standbys, quiet load with watches and drains ---------------------------------
declare -a OWNER OWNER_PID STANDBY
for p in 0 1; do
  serve "a$p" "$p" owner; OWNER[$p]=$LAST_URL; OWNER_PID[$p]=$LAST_PID
  serve "b$p" "$p" standby; STANDBY[$p]=$LAST_URL
  $PY setup "$WORK" "$P" "$p" "${OWNER[$p]}"
done
$PY load "$WORK" "$P" 0 0 100 10 "${OWNER[0]}" & L0=$!
$PY load "$WORK" "$P" 1 0 100 10 "${OWNER[1]}" & L1=$!
wait "$L0"; wait "$L1"
$PY standby "${STANDBY[0]}"
for p in 0 1; do $PY same-digest "${OWNER[$p]}" "${STANDBY[$p]}"; done

# --- partition 0: pause the owner, take over live on the standby, resume the zombie ---------
kill -STOP "${OWNER_PID[0]}"
"$SW" takeover --partition 0 --url "${STANDBY[0]}"
wait_owner "${STANDBY[0]}"
kill -CONT "${OWNER_PID[0]}"
$PY refused "$P" "${OWNER[0]}"
kill -9 "${OWNER_PID[0]}"; wait "${OWNER_PID[0]}" 2>/dev/null || true

# --- partition 1: kill -9 of the owner mid-load, takeover while the driver retries ----------
$PY load "$WORK" "$P" 1 100 100 0 "${OWNER[1]}" "${STANDBY[1]}" & L1=$!
for _ in $(seq 1 200); do  # bounded: 20 s for 30 more acknowledged events
  [ "$(wc -l < "$WORK/acks1.jsonl")" -ge 130 ] && break; sleep 0.1
done
kill -9 "${OWNER_PID[1]}"; wait "${OWNER_PID[1]}" 2>/dev/null || true
"$SW" takeover --partition 1 --url "${STANDBY[1]}"
wait_owner "${STANDBY[1]}"
wait "$L1"

# --- both partitions under load while partition 0's stream leader dies ---------------------
$PY load "$WORK" "$P" 0 200 100 0 "${STANDBY[0]}" & L0=$!
$PY load "$WORK" "$P" 1 200 100 0 "${STANDBY[1]}" & L1=$!
for _ in $(seq 1 200); do  # bounded: 20 s for 20 acknowledged events on partition 0
  [ "$(wc -l < "$WORK/acks0.jsonl")" -ge 120 ] && break; sleep 0.1
done
LEADER=$($PY leader "http://127.0.0.1:${MPORT[0]}" SW_P0 || true)
echo "killing partition 0's stream leader: ${LEADER:-unknown}"
for i in 0 1 2; do
  if [ "n$i" = "$LEADER" ]; then kill -9 "${NPID[$i]}"; wait "${NPID[$i]}" 2>/dev/null || true; fi
done
wait "$L0"; wait "$L1"

# --- quiet again: drains, then events left pending ------------------------------------------
$PY load "$WORK" "$P" 0 300 25 10 "${STANDBY[0]}" & L0=$!
$PY load "$WORK" "$P" 1 300 25 10 "${STANDBY[1]}" & L1=$!
wait "$L0"; wait "$L1"

# --- checker --------------------------------------------------------------------------------
CHECK=$($PY check "$WORK" "$P" "$MODEL" "${STANDBY[0]}" "${STANDBY[1]}") || { echo "$CHECK"; exit 1; }
echo "$CHECK"
for p in 0 1; do
  NEW=${STANDBY[$p]}
  curl -sf "$NEW/v1/verify" | grep -q '"ok":true' || { echo "verify failed on partition $p's owner"; exit 1; }
  CKPT=$(curl -sf "$NEW/v1/cluster/status" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("checkpointPosition",0))')
  [ "$CKPT" -gt 0 ] || { echo "partition $p's owner wrote no checkpoint"; exit 1; }
  echo "partition $p: last checkpoint at stream position $CKPT, the stream purged below it"
  "$SW" cluster follow --data "$WORK/a$p" --cluster "$URLS" --partitions "$P" --partition "$p" \
    --once > /dev/null
  "$SW" verify --data "$WORK/a$p" | grep -q '"ok":true' \
    || { echo "verify failed on partition $p's refolded copy"; exit 1; }
  curl -sf "$NEW/v1/export" > "$WORK/owner$p.export"
  "$SW" export --data "$WORK/a$p" > "$WORK/copy$p.export"
  cmp -s "$WORK/owner$p.export" "$WORK/copy$p.export" || { echo "partition $p: exports differ"; exit 1; }
done
echo "${CHECK##*$'\n'}, verify ok, digests equal"

#!/usr/bin/env bash
# Cluster smoke (docs/cluster.md): three nats-servers on loopback, an owner daemon of
# partition 0 (`serve --cluster --role owner`) and a standby daemon (`--role standby`), a
# load driver (half the events with dedupe keys) logging every acknowledged event; the
# standby refuses a write and its projection digest equals the owner's; then the old owner
# is paused (SIGSTOP), the running standby takes over live (`statewatch takeover`, i.e.
# POST /v1/cluster/takeover: no restart), the paused owner resumes (SIGCONT) and its next
# write must be refused (503 "partition moved") and its next read too (503
# partition_moved), then it is killed (kill -9); more load on the new owner while the NATS
# server leading the stream is killed (kill -9); then the checker: every acknowledged event
# present exactly once with unique increasing sequences, `verify` clean on the new owner and
# on the old owner's directory refolded from the stream (`cluster follow --once`), and their
# exports equal. The daemons checkpoint every 100 stream positions
# (SW_SMOKE_CHECKPOINT_EVERY), so the stream is purged as it goes and the refold of the old
# owner's directory restores from SW_CKPT (docs/cluster.md §7). Last line: `acknowledged N, lost 0, duplicated 0, verify ok, digests equal`.
#
#   scripts/cluster-smoke.sh [BUILD_DIR]      (default build; needs nats-server, python3, curl;
#                                             ~1 min)
#
# Not covered yet (docs/cluster.md §12): two partitions (the engine numbers P = 1 per
# stream), the model test's pending-notice comparison.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
SW="$BUILD/statewatch"
PY="python3 $ROOT/scripts/cluster-smoke.py"
NATS=$(command -v nats-server || echo /usr/sbin/nats-server)
WORK=$(mktemp -d /tmp/statewatch-cluster-smoke.XXXXXX)
PIDS=()
cleanup() {
  local rc=$?
  if [ "$rc" -ne 0 ]; then  # say why: the daemons' and the follower's last lines
    for f in "$WORK"/a.log "$WORK"/b.log; do
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

serve() {  # DIR PORTFILE LOG ROLE: a daemon of partition 0; sets LAST_PID, LAST_URL
  "$SW" serve --data "$1" --durability buffered --listen 127.0.0.1:0 --port-file "$2" \
    --cluster "$URLS" --partition 0 --role "$4" \
    --cluster-checkpoint-every "${SW_SMOKE_CHECKPOINT_EVERY:-100}" > "$3" 2>&1 &
  LAST_PID=$!; PIDS+=("$LAST_PID")
  for _ in $(seq 1 300); do [ -s "$2" ] && break; sleep 0.1; done  # bounded: 30 s
  [ -s "$2" ] || { echo "daemon on $1 did not start:"; tail -5 "$3"; exit 1; }
  LAST_URL="http://127.0.0.1:$(cat "$2")"
}

# --- owner + standby daemon, load ---------------------------------------------------------
serve "$WORK/a" "$WORK/a.port" "$WORK/a.log" owner; OWNER_URL=$LAST_URL; OWNER_PID=$LAST_PID
serve "$WORK/b" "$WORK/b.port" "$WORK/b.log" standby; STANDBY_URL=$LAST_URL
ACKS="$WORK/acks.jsonl"; : > "$ACKS"
$PY load "$OWNER_URL" 0 200 "$ACKS"
$PY standby "$STANDBY_URL"
$PY same-digest "$OWNER_URL" "$STANDBY_URL"

# --- zombie: pause the owner, take over live on the standby, resume it ----------------------
kill -STOP "$OWNER_PID"
"$SW" takeover --partition 0 --url "$STANDBY_URL"
NEW_URL=$STANDBY_URL  # the same process and address, now the owner
for _ in $(seq 1 100); do  # bounded: 10 s for the owner's server to replace the standby's
  curl -sf "$NEW_URL/v1/cluster/status" 2>/dev/null | grep -q '"role":"owner"' && break
  sleep 0.1
done
kill -CONT "$OWNER_PID"
$PY refused "$OWNER_URL"
kill -9 "$OWNER_PID"; wait "$OWNER_PID" 2>/dev/null || true

# --- more load while the stream's leader dies ----------------------------------------------
$PY load "$NEW_URL" 200 100 "$ACKS"
LEADER=$(curl -s "http://127.0.0.1:${MPORT[0]}/jsz?streams=true" | python3 -c '
import json,sys
d=json.load(sys.stdin)
for a in d.get("account_details",[]):
  for s in a.get("stream_detail",[]):
    if s["name"]=="SW_P0": print(s.get("cluster",{}).get("leader",""))')
echo "killing the stream leader: ${LEADER:-unknown}"
for i in 0 1 2; do
  if [ "n$i" = "$LEADER" ]; then kill -9 "${NPID[$i]}"; fi
done
$PY load "$NEW_URL" 300 100 "$ACKS"

# --- checker ------------------------------------------------------------------------------
CHECK=$($PY check "$NEW_URL" "$ACKS") || { echo "$CHECK"; exit 1; }
echo "$CHECK"
curl -sf "$NEW_URL/v1/verify" | grep -q '"ok":true' || { echo "verify failed on the owner"; exit 1; }
"$SW" cluster follow --data "$WORK/a" --cluster "$URLS" --partition 0 --once > /dev/null
"$SW" verify --data "$WORK/a" | grep -q '"ok":true' || { echo "verify failed on the refolded copy"; exit 1; }
curl -sf "$NEW_URL/v1/export" > "$WORK/owner.export"
"$SW" export --data "$WORK/a" > "$WORK/copy.export"
cmp -s "$WORK/owner.export" "$WORK/copy.export" || { echo "exports differ"; exit 1; }
EXPORTED=$(wc -l < "$WORK/owner.export")
[ "$EXPORTED" -ge 400 ] || { echo "the export holds $EXPORTED events, fewer than recorded"; exit 1; }
echo "${CHECK}, verify ok, digests equal"

#!/usr/bin/env bash
# session_status with a 200-event changesSince page over HTTP, two builds compared on the
# same machine state: each build's `statewatch serve` gets the same 250-event session, then
# wrk runs against A, B, A, B, ... (RUNS rounds, alternating, so that both see the same
# neighbours on a shared machine) and the median requests/s of each is printed with B/A.
#
# Usage: bench/http_page_ab.sh BIN_A BIN_B   (paths to two `statewatch` binaries)
# Env: DURATION (s per wrk run, default 5), RUNS (default 3), WRK_ARGS (default
#      "-t2 -c32"), THREADS (server threads, default: the server's).
# Needs wrk and curl. Everything stays on 127.0.0.1 and stops by itself.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

[ $# -eq 2 ] || { echo "usage: $0 BIN_A BIN_B" >&2; exit 2; }
DURATION="${DURATION:-5}"
RUNS="${RUNS:-3}"
WRK_ARGS="${WRK_ARGS:--t2 -c32}"
require_command wrk

WORK="$(mktemp -d /tmp/statewatch-http-ab-XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

PARENT="agent:main:main"
CHILD="agent:main:subagent:page"
python3 - "$CHILD" >"$WORK/history.json" <<'EOF'
import json, sys
print(json.dumps([{"sessionKey": sys.argv[1], "kind": "human_direct_message", "actorType": "human",
                   "actorId": "agent:main:main", "runId": f"run-{i}",
                   "summary": "human message via telegram", "payload": {"channel": "telegram"}}
                  for i in range(125)]))
EOF

start() {  # NAME BIN -> sets PORT_<NAME>
  local name="$1" bin="$2" threads=()
  [ -n "${THREADS:-}" ] && threads=(--threads "$THREADS")
  "$bin" --data "$WORK/$name" --durability buffered serve --listen 127.0.0.1:0 \
    --port-file "$WORK/$name.port" --log-level warn "${threads[@]}" >/dev/null 2>"$WORK/$name.err" &
  PIDS+=($!)
  for _ in $(seq 1 200); do [ -s "$WORK/$name.port" ] && break; sleep 0.05; done
  [ -s "$WORK/$name.port" ] || { echo "http_page_ab: $bin did not start" >&2; cat "$WORK/$name.err" >&2; exit 1; }
  local url="http://127.0.0.1:$(cat "$WORK/$name.port")"
  curl -sf -X PUT "$url/v1/sessions/$PARENT" -H 'Content-Type: application/json' -d '{"kind":"main"}' >/dev/null
  curl -sf -X PUT "$url/v1/sessions/$CHILD" -H 'Content-Type: application/json' \
    -d "{\"parentSessionKey\":\"$PARENT\"}" >/dev/null
  local first
  first="$(curl -sf "$url/v1/events" -H 'Content-Type: application/json' -d @"$WORK/history.json" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["events"][0]["sequence"])')"
  curl -sf "$url/v1/events" -H 'Content-Type: application/json' -d @"$WORK/history.json" >/dev/null
  # After the session's 25th event: 200 events of the 225 after it, truncated.
  local since=$((first + 24))
  write_status_wrk_script "$WORK/$name.lua" "{\"sessionKey\":\"$CHILD\",\"changesSince\":$since}" \
    "$PARENT"
  curl -sf "$url/v1/tools/session_status" -H "X-Session-Key: $PARENT" -H 'Content-Type: application/json' \
    -d "{\"sessionKey\":\"$CHILD\",\"changesSince\":$since}" | python3 -c '
import json,sys; r=json.load(sys.stdin)["stateChanges"]; assert len(r["events"]) == 200 and r["truncated"], r' ||
    { echo "http_page_ab: $bin answered an unexpected page" >&2; exit 1; }
  echo "$url" >"$WORK/$name.url"
}

start a "$1"
start b "$2"
for round in $(seq 1 "$RUNS"); do
  for name in a b; do
    # shellcheck disable=SC2086
    wrk $WRK_ARGS -d"${DURATION}s" -s "$WORK/$name.lua" "$(cat "$WORK/$name.url")/v1/tools/session_status" \
      >"$WORK/wrk.txt"
    if grep -q "Non-2xx" "$WORK/wrk.txt"; then echo "http_page_ab: errors from $name" >&2; cat "$WORK/wrk.txt" >&2; exit 1; fi
    awk '/Requests\/sec/ {print $2}' "$WORK/wrk.txt" >>"$WORK/$name.rps"
  done
done
python3 - "$WORK/a.rps" "$WORK/b.rps" "$1" "$2" "$WRK_ARGS" "$DURATION" <<'EOF'
import statistics, sys
a = [float(x) for x in open(sys.argv[1])]
b = [float(x) for x in open(sys.argv[2])]
print(f"session_status, 200-event page, wrk {sys.argv[5]} {sys.argv[6]}s x {len(a)} (alternating)")
print(f"  A {sys.argv[3]}: median {statistics.median(a):.0f} req/s  runs {', '.join(f'{x:.0f}' for x in a)}")
print(f"  B {sys.argv[4]}: median {statistics.median(b):.0f} req/s  runs {', '.join(f'{x:.0f}' for x in b)}")
print(f"  B/A {statistics.median(b) / statistics.median(a):.2f}x")
EOF

#!/usr/bin/env bash
# HTTP benchmarks of `statewatch serve` on loopback, in one run:
#   1. session_status with changesSince (a reconcile of 5 events): requests/s and latency
#      percentiles (wrk --latency);
#   2. batched POST /v1/events (100 events per request): events/s, one connection (each
#      batch waits for its own group commit) and 8 connections (batches share commits),
#      beside the in-process RecordMany rate of the same batches when the benchmark binary
#      is built (record/batch100 of bench/record_bench.cc);
#   3. wake delivery latency: from sending the POST that opens a notice to the wake message
#      on a WebSocket client (the record's fsync included).
#
# Usage: bench/http_bench.sh [BUILD_DIR]   (default build; BENCH_BUILD for the in-process
#        benchmark, default build-release). Env: DURATION (s, default 10), DURABILITY
#        (sync|buffered, default sync), THREADS (server threads, default: server default).
# Needs wrk and /usr/bin/python3 with python3-websocket (scripts/install-deps.sh installs
# both). Everything stays on 127.0.0.1 and stops by itself.
set -euo pipefail

BUILD_DIR="${1:-build}"
BIN="$BUILD_DIR/statewatch"
BENCH_BIN="${BENCH_BUILD:-build-release}/bench/statewatch_bench"
DURATION="${DURATION:-10}"
DURABILITY="${DURABILITY:-sync}"
[ -x "$BIN" ] || { echo "http_bench: $BIN is not built" >&2; exit 1; }
command -v wrk >/dev/null || { echo "http_bench: wrk is missing (apt-get install wrk)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/statewatch-http-bench-XXXXXX)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

THREAD_ARGS=()
[ -n "${THREADS:-}" ] && THREAD_ARGS=(--threads "$THREADS")
"$BIN" --data "$WORK/data" --durability "$DURABILITY" serve --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --log-level warn "${THREAD_ARGS[@]}" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/port" ] && break; sleep 0.05; done
[ -s "$WORK/port" ] || { echo "http_bench: the server did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }
PORT="$(cat "$WORK/port")"
URL="http://127.0.0.1:$PORT"
echo "statewatch serve on $URL (durability $DURABILITY), wrk ${DURATION}s per run"

PARENT="agent:main:main"
CHILD="agent:main:subagent:bench"
curl -sf -X PUT "$URL/v1/sessions/$PARENT" -d '{"kind":"main"}' >/dev/null
curl -sf -X PUT "$URL/v1/sessions/$CHILD" -d "{\"parentSessionKey\":\"$PARENT\"}" >/dev/null
# 200 events of history on the child, in two batches.
python3 - "$CHILD" >"$WORK/history.json" <<'EOF'
import json, sys
print(json.dumps([{"sessionKey": sys.argv[1], "kind": "human_direct_message", "actorType": "human",
                   "summary": "human message via telegram", "payload": {"channel": "telegram"}}
                  for _ in range(100)]))
EOF
curl -sf "$URL/v1/events" -d @"$WORK/history.json" >/dev/null
HEAD="$(curl -sf "$URL/v1/events" -d @"$WORK/history.json" | python3 -c 'import json,sys; print(json.load(sys.stdin)["events"][-1]["sequence"])')"
SINCE=$((HEAD - 5))

# ---- 1. session_status with changesSince -------------------------------------------------
cat >"$WORK/status.lua" <<EOF
wrk.method = "POST"
wrk.body = '{"sessionKey":"$CHILD","changesSince":$SINCE}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Session-Key"] = "$PARENT"
EOF
curl -sf "$URL/v1/tools/session_status" -H "X-Session-Key: $PARENT" \
  -d "{\"sessionKey\":\"$CHILD\",\"changesSince\":$SINCE}" | python3 -c '
import json,sys; r=json.load(sys.stdin); assert len(r["stateChanges"]["events"]) == 5, r' \
  || { echo "http_bench: session_status answered unexpectedly" >&2; exit 1; }

wrk_summary() {  # FILE -> "req/s p50 p75 p90 p99 non2xx"
  python3 - "$1" <<'EOF'
import re, sys
text = open(sys.argv[1]).read()
def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
pct = {p: ms(v, u) for p, v, u in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"{rps:.0f} {pct.get('50',0):.3f} {pct.get('75',0):.3f} {pct.get('90',0):.3f} {pct.get('99',0):.3f} {bad.group(1) if bad else 0}")
EOF
}

echo
echo "== session_status with changesSince (5 events per answer)"
printf "%-26s %10s %9s %9s %9s %9s %7s\n" "wrk" "req/s" "p50 ms" "p75 ms" "p90 ms" "p99 ms" "errors"
for conf in "1 16" "2 32"; do
  set -- $conf
  wrk -t"$1" -c"$2" -d"${DURATION}s" --latency -s "$WORK/status.lua" "$URL/v1/tools/session_status" >"$WORK/wrk.txt"
  read -r rps p50 p75 p90 p99 bad < <(wrk_summary "$WORK/wrk.txt")
  printf "%-26s %10s %9s %9s %9s %9s %7s\n" "-t$1 -c$2" "$rps" "$p50" "$p75" "$p90" "$p99" "$bad"
done

# ---- 2. batched POST /v1/events ------------------------------------------------------------
python3 - >"$WORK/batch.json" <<'EOF'
import json
print(json.dumps([{"sessionKey": f"agent:main:bench:{i}", "kind": "human_direct_message",
                   "actorType": "human", "summary": "human message via telegram",
                   "payload": {"channel": "telegram"}} for i in range(100)]))
EOF
python3 - "$WORK/batch.json" >"$WORK/events.lua" <<'EOF'
import sys
body = open(sys.argv[1]).read().strip().replace("\\", "\\\\").replace("'", "\\'")
print('wrk.method = "POST"')
print("wrk.body = '" + body + "'")
print('wrk.headers["Content-Type"] = "application/json"')
EOF
echo
echo "== batched POST /v1/events (100 events per request, durability $DURABILITY)"
printf "%-26s %10s %12s %9s %9s %7s\n" "wrk" "req/s" "events/s" "p50 ms" "p99 ms" "errors"
for conf in "1 1" "2 8"; do
  set -- $conf
  wrk -t"$1" -c"$2" -d"${DURATION}s" --latency -s "$WORK/events.lua" "$URL/v1/events" >"$WORK/wrk.txt"
  read -r rps p50 p75 p90 p99 bad < <(wrk_summary "$WORK/wrk.txt")
  printf "%-26s %10s %12s %9s %9s %7s\n" "-t$1 -c$2" "$rps" "$((rps * 100))" "$p50" "$p99" "$bad"
done
if [ -x "$BENCH_BIN" ]; then
  "$BENCH_BIN" --benchmark_filter="^record/batch100/$DURABILITY/sessions:1000/" \
    --benchmark_min_time=2 --benchmark_format=json 2>/dev/null >"$WORK/inproc.json" || true
  python3 - "$WORK/inproc.json" <<'EOF' || echo "in-process: (benchmark output unreadable)"
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"][0]
print(f"{'in-process RecordMany':26s} {'':>10s} {b['statewatch_per_s']:12.0f}   (bench/record_bench.cc, one caller)")
EOF
else
  echo "in-process: build the benchmarks (make build-release) for the RecordMany rate beside it"
fi

# ---- 3. wake delivery latency --------------------------------------------------------------
echo
echo "== wake delivery latency: POST /v1/events (notice opens) -> WebSocket message"
/usr/bin/python3 - "$PORT" <<'EOF'
import http.client, json, sys, time
try:
    import websocket
except ImportError:
    print("skipped: /usr/bin/python3 has no websocket module (apt-get install python3-websocket)")
    sys.exit(0)
port = int(sys.argv[1])
ws = websocket.create_connection(f"ws://127.0.0.1:{port}/v1/wakes", timeout=5)
http = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
def post(path, body):
    http.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = http.getresponse(); data = r.read()
    assert r.status == 200, data
samples = []
for i in range(300):
    # A fresh watcher per sample: its first wake fires at once (no 20 s merge window).
    watcher, target = f"agent:lat:w{i}", f"agent:lat:subagent:t{i}"
    post("/v1/watches", {"watcher": watcher, "target": target})
    body = json.dumps({"sessionKey": target, "kind": "human_direct_message", "actorType": "human",
                       "summary": "human message via telegram"})
    t0 = time.perf_counter()
    http.request("POST", "/v1/events", body=body, headers={"Content-Type": "application/json"})
    msg = json.loads(ws.recv())
    t1 = time.perf_counter()
    r = http.getresponse(); r.read()
    assert msg["watcher"] == watcher, msg
    samples.append((t1 - t0) * 1000)
samples.sort()
q = lambda p: samples[min(len(samples) - 1, int(p * len(samples)))]
print(f"samples {len(samples)}  p50 {q(0.5):.3f} ms  p90 {q(0.9):.3f} ms  p99 {q(0.99):.3f} ms  max {samples[-1]:.3f} ms")
EOF

#!/usr/bin/env bash
# HTTP benchmarks of `statewatch serve` on loopback, in one run:
#   1. status: session_status with changesSince answering a 200-event page (the reconcile
#      of a watcher that fell 200 events behind; truncated, as the session has more):
#      requests/s and latency percentiles (wrk --latency), RUNS runs of each wrk
#      configuration, the configurations alternating;
#   2. events: batched POST /v1/events (100 events per request): events/s, one connection
#      (each batch waits for its own group commit) and 8 connections (batches share
#      commits), beside the in-process RecordMany rate when the benchmark binary is built;
#   3. wakes: wake delivery latency, from sending the POST that opens a notice to the wake
#      message on a WebSocket client (the record's fsync included).
#
# Usage: bench/http_bench.sh [BUILD_DIR]   (default build; BENCH_BUILD for the in-process
#        benchmark, default build-release). Env: DURATION (s per wrk run, default 10),
#        DURABILITY (sync|buffered, default sync), THREADS (server threads, default: the
#        server's), SECTIONS (default "status events wakes"), RUNS (runs of each
#        session_status configuration, default 1), JSON_OUT (a file: section 1's runs as
#        JSON, for bench/report.py; scripts/bench.sh sets it).
# Needs wrk and /usr/bin/python3 with python3-websocket (scripts/install-deps.sh installs
# both). Everything stays on 127.0.0.1 and stops by itself. Every request body goes with
# Content-Type: application/json.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=bench/status_page_seed.sh
source "$(dirname "$0")/status_page_seed.sh"

BUILD_DIR="${1:-build}"
BIN="$BUILD_DIR/statewatch"
BENCH_BIN="${BENCH_BUILD:-build-release}/bench/statewatch_bench"
DURATION="${DURATION:-10}"
DURABILITY="${DURABILITY:-sync}"
SECTIONS="${SECTIONS:-status events wakes}"
RUNS="${RUNS:-1}"
JSON_OUT="${JSON_OUT:-}"
PAGE=200
require_built "$BIN"
require_command wrk

make_scratch_dir statewatch-http-bench

section() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }

THREAD_ARGS=()
[ -n "${THREADS:-}" ] && THREAD_ARGS=(--threads "$THREADS")
"$BIN" --data "$WORK/data" --durability "$DURABILITY" serve --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --log-level warn "${THREAD_ARGS[@]}" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
wait_for_port 100 0.05
echo "statewatch serve on $URL (durability $DURABILITY), wrk ${DURATION}s per run"

wrk_summary() {  # FILE -> "req/s p50 p75 p90 p99 non2xx"
  python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
def ms(v, unit): return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
pct = {p: ms(v, u) for p, v, u in re.findall(r"^\s+(\d+)%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)}
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
print(f"{rps:.0f} {pct.get('50',0):.3f} {pct.get('75',0):.3f} {pct.get('90',0):.3f} {pct.get('99',0):.3f} {bad.group(1) if bad else 0}")
PY
}

# ---- 1. session_status with changesSince: a 200-event page ---------------------------------
if section status; then
  seed_status_page  # bench/status_page_seed.sh: sets PARENT, CHILD and BODY
  post /v1/tools/session_status "$BODY" -H "X-Session-Key: $PARENT" >"$WORK/page.json"
  python3 - "$WORK/page.json" "$PAGE" <<'PY' || { echo "http_bench: session_status answered unexpectedly" >&2; exit 1; }
import json, sys
c = json.load(open(sys.argv[1]))["stateChanges"]
assert len(c["events"]) == int(sys.argv[2]) and c["truncated"], (len(c["events"]), c["truncated"])
PY
  PAGE_BYTES="$(wc -c <"$WORK/page.json")"
  write_status_wrk_script "$WORK/status.lua" "$BODY" "$PARENT"
  echo
  echo "== session_status with changesSince ($PAGE events per answer, $PAGE_BYTES bytes)"
  printf "%-26s %10s %9s %9s %9s %9s %7s\n" "wrk" "req/s" "p50 ms" "p75 ms" "p90 ms" "p99 ms" "errors"
  : >"$WORK/status_runs.txt"
  for _ in $(seq 1 "$RUNS"); do
    for conf in "1 16" "2 32"; do
      set -- $conf
      wrk -t"$1" -c"$2" -d"${DURATION}s" --latency -s "$WORK/status.lua" "$URL/v1/tools/session_status" >"$WORK/wrk.txt"
      read -r rps p50 p75 p90 p99 bad < <(wrk_summary "$WORK/wrk.txt")
      printf "%-26s %10s %9s %9s %9s %9s %7s\n" "-t$1 -c$2" "$rps" "$p50" "$p75" "$p90" "$p99" "$bad"
      echo "$1 $2 $rps $p50 $p99 $bad" >>"$WORK/status_runs.txt"
    done
  done
  if [ -n "$JSON_OUT" ]; then
    python3 - "$WORK/status_runs.txt" "$PAGE" "$PAGE_BYTES" "$DURATION" "$DURABILITY" >"$JSON_OUT" <<'PY'
import json, sys
keys = ("wrk_threads", "connections", "requests_per_s", "p50_ms", "p99_ms", "errors")
kinds = (int, int, float, float, float, int)
runs = [{k: t(v) for k, t, v in zip(keys, kinds, line.split())}
        for line in open(sys.argv[1]) if line.strip()]
print(json.dumps({"figure": "session_status with changesSince, one page",
                  "page_events": int(sys.argv[2]), "page_bytes": int(sys.argv[3]),
                  "duration_s": float(sys.argv[4]), "durability": sys.argv[5], "runs": runs},
                 indent=2))
PY
  fi
fi

# ---- 2. batched POST /v1/events ------------------------------------------------------------
if section events; then
  python3 - >"$WORK/batch.json" <<'PY'
import json
print(json.dumps([{"sessionKey": f"agent:main:bench:{i}", "kind": "human_direct_message",
                   "actorType": "human", "summary": "human message via telegram",
                   "payload": {"channel": "telegram"}} for i in range(100)]))
PY
  python3 - "$WORK/batch.json" >"$WORK/events.lua" <<'PY'
import sys
body = open(sys.argv[1]).read().strip().replace("\\", "\\\\").replace("'", "\\'")
print('wrk.method = "POST"')
print("wrk.body = '" + body + "'")
print('wrk.headers["Content-Type"] = "application/json"')
PY
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
    # record/batch100 at a tenth of its length (40,000 events per system); its one-session
    # lane is the same work per event as one caller's batches here.
    BENCH_SCALE=0.1 "$BENCH_BIN" --benchmark_filter="^record/batch100/$DURABILITY/" \
      --benchmark_format=json 2>/dev/null >"$WORK/inproc.json" || true
    python3 - "$WORK/inproc.json" <<'PY' || echo "in-process: (benchmark output unreadable)"
import json, sys
b = json.load(open(sys.argv[1]))["benchmarks"][0]
print(f"{'in-process RecordMany':26s} {'':>10s} {b['statewatch_1_per_s']:12.0f}   (record/batch100, one caller)")
PY
  else
    echo "in-process: build the benchmarks (make build-release) for the RecordMany rate beside it"
  fi
fi

# ---- 3. wake delivery latency --------------------------------------------------------------
if section wakes; then
  echo
  echo "== wake delivery latency: POST /v1/events (notice opens) -> WebSocket message"
  /usr/bin/python3 - "$PORT" <<'PY'
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
PY
fi

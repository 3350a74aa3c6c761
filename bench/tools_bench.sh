#!/usr/bin/env bash
# Session tools benchmark of `statewatch serve` on loopback: messages per second through
# sessions_send -> delivery (WebSocket feed) -> POST /v1/runs/{runId}/reply -> the parked
# send answered, with N concurrent simulated agents, and the latency percentiles of the
# whole round trip as the sender sees it.
#
# Each simulated agent i is a pair: a sender (session agent:req<i>:main) calling
# sessions_send with timeoutSeconds 30 in a loop on its own kept-alive connection, and a
# responder (agent tgt<i>) on its own delivery feed (GET /v1/deliveries?agentId=tgt<i>)
# that replies REPLY_SKIP (which also ends the reply-back loop) and acknowledges. Every
# step is durable (the run, the delivery, its ack) unless DURABILITY=buffered.
#
# Usage: bench/tools_bench.sh [BUILD_DIR]   (default build). Env: AGENTS (default 8),
#        DURATION (s, default 10), DURABILITY (sync|buffered, default sync).
# Needs /usr/bin/python3 with python3-websocket (scripts/install-deps.sh).
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"

BUILD_DIR="${1:-build}"
BIN="$BUILD_DIR/statewatch"
AGENTS="${AGENTS:-8}"
DURATION="${DURATION:-10}"
DURABILITY="${DURABILITY:-sync}"
require_built "$BIN"

make_scratch_dir statewatch-tools-bench

"$BIN" --data "$WORK/data" --durability "$DURABILITY" serve --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --log-level warn --visibility all --agent-to-agent \
  >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
wait_for_port 100 0.05

echo "tools_bench: agents=$AGENTS duration=${DURATION}s durability=$DURABILITY port=$PORT"
/usr/bin/python3 - "$PORT" "$AGENTS" "$DURATION" <<'PY'
import http.client, json, sys, threading, time
import websocket

port, agents, duration = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def conn():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=60)

def call(c, method, path, body=None, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = c.getresponse()
    data = r.read()
    if r.status != 200:
        raise RuntimeError(f"{method} {path}: {r.status} {data[:200]!r}")
    return json.loads(data)

setup = conn()
for i in range(agents):
    call(setup, "PUT", f"/v1/sessions/agent:req{i}:main", {"kind": "main"})
    call(setup, "PUT", f"/v1/sessions/agent:tgt{i}:main", {"kind": "main"})

stop = threading.Event()
latencies = [[] for _ in range(agents)]
errors = []

def responder(i, ready):
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/v1/deliveries?agentId=tgt{i}",
                                     timeout=2)
    ready.set()
    c = conn()
    while not stop.is_set():
        try:
            d = json.loads(ws.recv())
        except websocket.WebSocketTimeoutException:
            continue
        except Exception:
            break
        if d.get("type") == "message":
            call(c, "POST", f"/v1/runs/{d['runId']}/reply", {"text": "REPLY_SKIP"})
        call(c, "POST", f"/v1/deliveries/{d['deliveryId']}/ack", None)
    ws.close()

def sender(i, deadline):
    c = conn()
    params = {"sessionKey": f"agent:tgt{i}:main", "message": "ping", "timeoutSeconds": 30}
    headers = {"X-Session-Key": f"agent:req{i}:main"}
    while time.monotonic() < deadline:
        t0 = time.perf_counter()
        try:
            r = call(c, "POST", "/v1/tools/sessions_send", params, headers)
        except Exception as e:
            errors.append(str(e)); return
        if r.get("status") != "ok":
            errors.append(json.dumps(r)); return
        latencies[i].append(time.perf_counter() - t0)

readies = [threading.Event() for _ in range(agents)]
responders = [threading.Thread(target=responder, args=(i, readies[i]), daemon=True) for i in range(agents)]
for t in responders: t.start()
for r in readies: r.wait(10)
start = time.monotonic()
deadline = start + duration
senders = [threading.Thread(target=sender, args=(i, deadline)) for i in range(agents)]
for t in senders: t.start()
for t in senders: t.join()
elapsed = time.monotonic() - start
stop.set()

all_l = sorted(x for l in latencies for x in l)
if errors:
    print("errors:", errors[:3]); sys.exit(1)
if not all_l:
    print("no completed round trips"); sys.exit(1)
def pct(p): return all_l[min(len(all_l) - 1, int(p / 100 * len(all_l)))] * 1000
print(f"round trips: {len(all_l)} in {elapsed:.1f} s = {len(all_l) / elapsed:.0f} messages/s")
print(f"latency ms: p50 {pct(50):.2f}  p90 {pct(90):.2f}  p99 {pct(99):.2f}  max {all_l[-1]*1000:.2f}")
PY

#!/usr/bin/env bash
# Webhook deliveries per second to a local receiver (docs/webhooks.md): a daemon on a fresh
# data directory (default durability: an fsync per commit group) and
# scripts/webhook-receiver.py answering 200 at once. WATCHERS watchers each follow TARGETS
# targets; one human message per target opens WATCHERS x TARGETS notices at once; the time
# is from the last write's answer to the moment /metrics counts every delivery. Each
# delivery is an outbox write, one signed HTTP call and an outbox delete.
#
# Usage: scripts/bench-webhooks.sh PATH/TO/statewatch   (WATCHERS=50 TARGETS=40 CONCURRENCY=8)
set -euo pipefail

BIN="${1:?usage: scripts/bench-webhooks.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "bench-webhooks: $BIN is not built" >&2; exit 1; }
HERE="$(cd "$(dirname "$0")" && pwd)"
WATCHERS="${WATCHERS:-50}"
TARGETS="${TARGETS:-40}"
CONCURRENCY="${CONCURRENCY:-8}"
TOTAL=$((WATCHERS * TARGETS))

TMP="$(mktemp -d)"
PID=""
RPID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  if [ -n "$RPID" ]; then kill "$RPID" 2>/dev/null || true; wait "$RPID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
fail() { echo "bench-webhooks: $*" >&2; exit 1; }

python3 "$HERE/webhook-receiver.py" --port-file "$TMP/rport" --log "$TMP/calls.jsonl" \
  --quiet-log 2>"$TMP/receiver.err" &
RPID=$!
for _ in $(seq 1 100); do [ -s "$TMP/rport" ] && break; sleep 0.1; done
[ -s "$TMP/rport" ] || fail "the receiver did not start"
HOOK="http://127.0.0.1:$(cat "$TMP/rport")"
cat >"$TMP/config.json" <<JSON
{"webhooks": {"scanIntervalMs": 100, "concurrency": $CONCURRENCY, "maxOutbox": $((TOTAL + 100))}}
JSON
"$BIN" serve --data "$TMP/data" --listen 127.0.0.1:0 --port-file "$TMP/port" \
  --config "$TMP/config.json" >"$TMP/serve.out" 2>"$TMP/serve.err" &
PID=$!
for _ in $(seq 1 200); do [ -s "$TMP/port" ] && break; sleep 0.1; done
[ -s "$TMP/port" ] || fail "the daemon did not start"
URL="http://127.0.0.1:$(cat "$TMP/port")"

python3 - "$URL" "$HOOK" "$WATCHERS" "$TARGETS" "$TOTAL" "$CONCURRENCY" <<'PY'
import json, sys, time, urllib.request
url, hook, watchers, targets, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
def post(path, body):
    req = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)
def delivered():
    with urllib.request.urlopen(url + "/metrics", timeout=30) as r:
        for line in r.read().decode().splitlines():
            if line.startswith('statewatch_webhook_attempts_total{outcome="delivered"}'):
                return int(float(line.split()[1]))
    return 0
for w in range(watchers):
    key = "agent:w%d:main" % w
    post("/v1/webhooks", {"watcher": key, "url": "%s/fast/w%d" % (hook, w), "secret": "secret-w%d" % w})
    for t in range(targets):
        post("/v1/watches", {"watcher": key, "target": "agent:t%d:main" % t})
events = [{"sessionKey": "agent:t%d:main" % t, "kind": "human_direct_message",
           "actorType": "human", "summary": "bench"} for t in range(targets)]
post("/v1/events", events)
start = time.monotonic()
deadline = start + 300
n = 0
while time.monotonic() < deadline:
    n = delivered()
    if n >= total:
        break
    time.sleep(0.05)
elapsed = time.monotonic() - start
if n < total:
    sys.exit("bench-webhooks: only %d of %d delivered in 300 s" % (n, total))
print("bench-webhooks: %d deliveries in %.2f s = %.0f deliveries/s (%d watchers x %d targets, concurrency %s)"
      % (total, elapsed, total / elapsed, watchers, targets, sys.argv[6]))
PY

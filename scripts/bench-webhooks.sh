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

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
. "$HERE/../bench/lib.sh"
statewatch_argument "$@"
WATCHERS="${WATCHERS:-50}"
TARGETS="${TARGETS:-40}"
CONCURRENCY="${CONCURRENCY:-8}"
TOTAL=$((WATCHERS * TARGETS))

make_scratch_dir statewatch-bench-webhooks
start_webhook_receiver --quiet-log
cat >"$WORK/config.json" <<JSON
{"webhooks": {"scanIntervalMs": 100, "concurrency": $CONCURRENCY, "maxOutbox": $((TOTAL + 100))}}
JSON
start_server --data "$WORK/data" --config "$WORK/config.json"

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

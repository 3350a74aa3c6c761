#!/usr/bin/env bash
# The notice webhooks end to end (docs/webhooks.md): a real daemon delivers notices to a
# real receiver process (scripts/webhook-receiver.py) that fails, times out and answers 500
# on a seeded schedule; one call is held in flight while the daemon is killed with SIGKILL
# and restarted on the same data. Then, with bounded waits and no timing assertion:
#   - every notice of a healthy watcher was answered 200 at least once (at-least-once),
#   - no Idempotency-Key was delivered with two different bodies,
#   - every call's Statewatch-Signature verified, and each body is the notice's text,
#   - the watcher whose receiver always answers 500 ends in GET /v1/webhooks/dead (and only
#     it), and a retry of that dead letter is attempted again with the same body,
#   - the URL policy refuses a private-network and a plain-http registration, GET
#     /v1/webhooks never shows a secret, and /metrics counts the deliveries.
#
# Usage: scripts/test-webhooks.sh PATH/TO/statewatch
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
. "$HERE/../bench/lib.sh"
statewatch_argument "$@"
SEED="${WEBHOOK_SEED:-7}"

make_scratch_dir statewatch-test-webhooks
fail() {
  echo "test-webhooks: $*" >&2
  [ -f "$WORK/stderr" ] && tail -n 20 "$WORK/stderr" >&2
  exit 1
}

start_webhook_receiver --seed "$SEED" --max-failures 3 --hold-ms 1500 --slow-ms 4000 \
  --inflight-file "$WORK/inflight"

cat >"$WORK/config.json" <<JSON
{"webhooks": {"maxRetryMs": 15000, "attemptTimeoutMs": 1000, "initialBackoffMs": 100,
              "maxBackoffMs": 400, "jitterSeed": $SEED, "scanIntervalMs": 300,
              "concurrency": 4}}
JSON

post() {  # post PATH BODY -> prints the HTTP status
  curl -s -o "$WORK/answer" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "$2" "$URL$1"
}
must_post() { [ "$(post "$1" "$2")" = 200 ] || fail "POST $1 $2: $(cat "$WORK/answer")"; }
register() {  # register WATCHER PATH NAME
  must_post /v1/webhooks "{\"watcher\":\"$1\",\"url\":\"$HOOK/$2/$3\",\"secret\":\"secret-$3\"}"
}
watch() { must_post /v1/watches "{\"watcher\":\"$1\",\"target\":\"$2\"}"; }
touch_target() {
  must_post /v1/events "{\"sessionKey\":\"$1\",\"kind\":\"human_direct_message\",\"actorType\":\"human\",\"summary\":\"hi\"}"
}
# The keys of the watcher's pending notices, appended to expected.txt (or dead.txt).
remember() {  # remember WATCHER FILE
  curl -sf "$URL/v1/notices?watcher=$1" | python3 -c '
import json, re, sys
w = sys.argv[1]
for n in json.load(sys.stdin)["notices"]:
    since = re.search(r"changesSince (\d+)\.$", n["text"]).group(1)
    print("%s:%s:%s\t%s" % (w, n["targetSessionKey"], since, n["text"]))
' "$1" >>"$WORK/$2"
}

start_server --data "$WORK/data" --config "$WORK/config.json"
# The URL policy at registration.
[ "$(post /v1/webhooks '{"watcher":"agent:x:main","url":"https://169.254.169.254/latest","secret":"s"}')" = 400 ] ||
  fail "a link-local (metadata) URL was not refused"
[ "$(post /v1/webhooks '{"watcher":"agent:x:main","url":"http://example.com/hook","secret":"s"}')" = 400 ] ||
  fail "a plain-http URL to a non-loopback host was not refused"

HEALTHY="agent:w1:main agent:w2:main agent:w3:main agent:w4:main agent:w1:subagent:s1"
TARGETS="agent:t1:main agent:t2:main agent:t3:main agent:t4:main agent:t5:main"
for w in $HEALTHY; do
  name="${w//:/-}"
  register "$w" ok "$name"
  for t in $TARGETS; do watch "$w" "$t"; done
done
register agent:dead:main always500 dead
watch agent:dead:main agent:t1:main
register agent:slow:main slow slow
watch agent:slow:main agent:t1:main
curl -sf "$URL/v1/webhooks" | grep -q 'secret' && fail "GET /v1/webhooks shows a secret"

for t in $TARGETS; do touch_target "$t"; done
for w in $HEALTHY agent:slow:main; do remember "$w" expected.txt; done
remember agent:dead:main dead.txt
[ "$(wc -l <"$WORK/expected.txt")" = 26 ] || fail "expected 26 notices, got $(wc -l <"$WORK/expected.txt")"

# Every notice is in the outbox (or delivered) before the kill: the restart must lose none.
for _ in $(seq 1 200); do
  n="$(curl -sf "$URL/metrics" | awk '$1 == "statewatch_webhook_enqueued_total" { print $2 }')"
  [ "${n:-0}" -ge 27 ] && break
  sleep 0.1
done
[ "${n:-0}" -ge 27 ] || fail "only ${n:-0} of 27 notices were enqueued"
# Kill -9 while the slow receiver holds its first call.
for _ in $(seq 1 300); do [ -f "$WORK/inflight" ] && break; sleep 0.1; done
[ -f "$WORK/inflight" ] || fail "the held call never arrived"
kill -9 "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
start_server --data "$WORK/data" --config "$WORK/config.json"

# More notices after the restart: a drained watcher gets a new one, and new targets.
must_post /v1/notices/drain '{"watcher":"agent:w1:main"}'
touch_target agent:t1:main
for w in agent:w2:main agent:w3:main; do watch "$w" agent:t6:main; done
touch_target agent:t6:main
for w in agent:w1:main agent:w2:main agent:w3:main; do remember "$w" expected.txt; done

# Bounded wait: every expected key answered 200, the dead watcher's key dead-lettered.
check() {
  python3 - "$WORK" <<'PY'
import json, sys
tmp = sys.argv[1]
expected = {}
for line in open(tmp + "/expected.txt"):
    key, text = line.rstrip("\n").split("\t", 1)
    expected[key] = text
dead = {line.split("\t", 1)[0] for line in open(tmp + "/dead.txt")}
calls = [json.loads(l) for l in open(tmp + "/calls.jsonl")]
ok = {c["key"] for c in calls if c["outcome"] == "200"}
missing = sorted(set(expected) - ok)
bodies = {}
for c in calls:
    bodies.setdefault(c["key"], set()).add(c["body"])
two = sorted(k for k, b in bodies.items() if len(b) > 1)
bad_sig = [c["key"] for c in calls if not c["signatureValid"]]
wrong_text = [k for k, t in expected.items() if k in bodies and
              any(json.loads(b)["text"] != t for b in bodies[k])]
delivered_dead = sorted(dead & ok)
print(json.dumps({"missing": missing, "twoBodies": two, "badSignatures": bad_sig,
                  "wrongText": wrong_text, "deliveredDead": delivered_dead,
                  "calls": len(calls), "keys": len(bodies)}))
PY
}
for _ in $(seq 1 60); do
  state="$(check)"
  dead_now="$(curl -sf "$URL/v1/webhooks/dead")"
  if echo "$state" | grep -q '"missing": \[\]' && echo "$dead_now" | grep -q 'agent:dead:main'; then
    break
  fi
  sleep 1
done
echo "test-webhooks: $state" >&2
echo "$state" | grep -q '"missing": \[\]' || fail "notices never delivered (above)"
echo "$state" | grep -q '"twoBodies": \[\]' || fail "a key was delivered with two bodies"
echo "$state" | grep -q '"badSignatures": \[\]' || fail "a signature did not verify"
echo "$state" | grep -q '"wrongText": \[\]' || fail "a body's text differs from the notice's"
echo "$state" | grep -q '"deliveredDead": \[\]' || fail "the always-500 watcher was delivered"
# The seeded schedule did fail, time out and answer 500 (it is keyed by key and attempt).
for outcome in fail timeout 500; do
  grep -q "\"outcome\": \"$outcome\"" "$WORK/calls.jsonl" || fail "the receiver never chose $outcome"
done

# Dead letters: exactly the always-500 watcher's notice.
python3 - "$WORK" "$dead_now" <<'PY' || fail "dead letters are not as configured: $dead_now"
import json, sys
tmp, dead = sys.argv[1], json.loads(sys.argv[2])["deadLetters"]
want = {line.split("\t", 1)[0] for line in open(tmp + "/dead.txt")}
got = {d["idempotencyKey"] for d in dead}
assert got == want, (got, want)
assert all(d["attempts"] >= 2 and d["lastError"] for d in dead), dead
PY
# The slow call was repeated after the restart with its key and body.
grep -q '"path": "/slow/slow", "attempt": 2' "$WORK/calls.jsonl" || fail "the call held at the kill was not repeated"

# A dead letter retried is attempted again, with the same body.
key="$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["deadLetters"][0]["idempotencyKey"])' "$dead_now")"
before="$(grep -c '"path": "/always500/dead"' "$WORK/calls.jsonl")"
must_post /v1/webhooks/dead/retry "{\"idempotencyKey\":\"$key\"}"
for _ in $(seq 1 100); do
  [ "$(grep -c '"path": "/always500/dead"' "$WORK/calls.jsonl")" -gt "$before" ] && break
  sleep 0.1
done
[ "$(grep -c '"path": "/always500/dead"' "$WORK/calls.jsonl")" -gt "$before" ] || fail "a retried dead letter was not attempted"
[ "$(post /v1/webhooks/dead/drop '{"idempotencyKey":"no:such:1"}')" = 404 ] || fail "dropping an unknown dead letter was not 404"

curl -sf "$URL/metrics" >"$WORK/metrics" || fail "GET /metrics failed"
grep -q '^statewatch_webhook_attempts_total{outcome="delivered"} [1-9]' "$WORK/metrics" || fail "no delivered count in /metrics"
grep -q '^statewatch_webhook_dead_letters ' "$WORK/metrics" || fail "no dead-letter gauge in /metrics"
grep -q '^statewatch_webhook_outbox_depth ' "$WORK/metrics" || fail "no outbox gauge in /metrics"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "$URL/v1/webhooks/agent:w4:main")" = 200 ] || fail "DELETE /v1/webhooks/{watcher}"
echo "test-webhooks: ok ($(wc -l <"$WORK/calls.jsonl") calls, $(sort -u "$WORK/expected.txt" | wc -l) notices delivered, a kill -9 mid-delivery)"

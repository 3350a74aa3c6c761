#!/usr/bin/env bash
# Lints GET /metrics of the real daemon: starts `statewatch serve` on a fresh data directory
# and a free loopback port, records a few events and sends one refused write, scrapes
# /metrics (no token: the daemon runs without one) and runs `promtool check metrics` on it,
# failing on any problem it prints. Also checks that the scrape shows the writes (commit
# histogram, group sizes), the refused write by reason and the process_* family.
#
# Usage: scripts/test-metrics.sh PATH/TO/statewatch
set -euo pipefail

BIN="${1:?usage: scripts/test-metrics.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-metrics: $BIN is not built" >&2; exit 1; }
command -v promtool >/dev/null || { echo "test-metrics: promtool missing (scripts/install-deps.sh installs prometheus)" >&2; exit 1; }

TMP="$(mktemp -d)"
PID=""
cleanup() {
  if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT

"$BIN" serve --data "$TMP/data" --listen 127.0.0.1:0 --port-file "$TMP/port" \
  >"$TMP/serve.out" 2>"$TMP/serve.err" &
PID=$!
for _ in $(seq 1 200); do  # at most ~20 s for the daemon to listen
  [ -s "$TMP/port" ] && break
  kill -0 "$PID" 2>/dev/null || { cat "$TMP/serve.err" >&2; echo "test-metrics: serve exited" >&2; exit 1; }
  sleep 0.1
done
[ -s "$TMP/port" ] || { echo "test-metrics: no port file after 20 s" >&2; exit 1; }
URL="http://127.0.0.1:$(cat "$TMP/port")"

post() {  # post PATH BODY -> prints the HTTP status
  curl -s -o "$TMP/answer" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "$2" "$URL$1"
}
fail() { echo "test-metrics: $*" >&2; exit 1; }

event='{"sessionKey":"agent:main:subagent:a1","kind":"human_direct_message","actorType":"human","summary":"hi"}'
for _ in 1 2 3; do
  [ "$(post /v1/events "$event")" = 200 ] || fail "recording an event: $(cat "$TMP/answer")"
done
[ "$(post /v1/events "[$event,$event]")" = 200 ] || fail "recording a batch: $(cat "$TMP/answer")"
[ "$(post /v1/events '{not json')" = 400 ] || fail "a malformed write was not refused with 400"

curl -sf "$URL/metrics" >"$TMP/metrics" || fail "GET /metrics failed"
if ! promtool check metrics <"$TMP/metrics" >"$TMP/lint" 2>&1 || [ -s "$TMP/lint" ]; then
  cat "$TMP/lint" >&2
  fail "promtool check metrics found problems (above)"
fi

value() { awk -v s="$1" '$1 == s { print $2 }' "$TMP/metrics"; }
expect_at_least() {  # expect_at_least SERIES MIN
  local v
  v="$(value "$1")"
  [ -n "$v" ] || fail "$1 is missing"
  awk -v v="$v" -v m="$2" 'BEGIN { exit !(v + 0 >= m + 0) }' || fail "$1 is $v, expected >= $2"
}
expect_at_least statewatch_commit_duration_seconds_count 4
expect_at_least statewatch_commit_group_events_sum 5
expect_at_least statewatch_commit_group_writes_count 4
expect_at_least 'statewatch_writes_refused_total{reason="bad_request"}' 1
expect_at_least process_start_time_seconds 1
expect_at_least process_resident_memory_bytes 1
expect_at_least process_open_fds 1
expect_at_least process_max_fds 1
value process_cpu_seconds_total | grep -q . || fail "process_cpu_seconds_total is missing"
echo "test-metrics: $(grep -c '^# TYPE' "$TMP/metrics") metric families, promtool: no problems"

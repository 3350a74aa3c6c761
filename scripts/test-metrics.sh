#!/usr/bin/env bash
# Lints GET /metrics of the real daemon: starts `statewatch serve` on a fresh data directory
# and a free loopback port, records a few events and sends one refused write, scrapes
# /metrics (no token: the daemon runs without one) and runs `promtool check metrics` on it,
# failing on any problem it prints. Also checks that the scrape shows the writes (commit
# histogram, group sizes), the refused write by reason and the process_* family.
#
# Usage: scripts/test-metrics.sh PATH/TO/statewatch
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=bench/lib.sh
. "$HERE/../bench/lib.sh"
statewatch_argument "$@"
require_command promtool prometheus

make_scratch_dir statewatch-test-metrics
start_server --data "$WORK/data"

post() {  # post PATH BODY -> prints the HTTP status
  curl -s -o "$WORK/answer" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
    --data-binary "$2" "$URL$1"
}
fail() { echo "test-metrics: $*" >&2; exit 1; }

event='{"sessionKey":"agent:main:subagent:a1","kind":"human_direct_message","actorType":"human","summary":"hi"}'
for _ in 1 2 3; do
  [ "$(post /v1/events "$event")" = 200 ] || fail "recording an event: $(cat "$WORK/answer")"
done
[ "$(post /v1/events "[$event,$event]")" = 200 ] || fail "recording a batch: $(cat "$WORK/answer")"
[ "$(post /v1/events '{not json')" = 400 ] || fail "a malformed write was not refused with 400"

curl -sf "$URL/metrics" >"$WORK/metrics" || fail "GET /metrics failed"
if ! promtool check metrics <"$WORK/metrics" >"$WORK/lint" 2>&1 || [ -s "$WORK/lint" ]; then
  cat "$WORK/lint" >&2
  fail "promtool check metrics found problems (above)"
fi

value() { awk -v s="$1" '$1 == s { print $2 }' "$WORK/metrics"; }
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
echo "test-metrics: $(grep -c '^# TYPE' "$WORK/metrics") metric families, promtool: no problems"

#!/usr/bin/env bash
# Where the daemon's instructions go when it answers bench/http_bench.sh's status request
# (session_status with a 200-event changesSince page), as callgrind counts: repeatable on a
# shared machine where wall-clock profiles are not. Backs docs/design.md's HTTP note.
#
# Usage: bench/profile_http.sh [BUILD_DIR]   (default build-release)
#   Starts BUILD_DIR/statewatch serve under valgrind --tool=callgrind, records the same
#   300-event session as http_bench.sh, sends REQUESTS (default 400) requests one after
#   another with curl, and prints the functions with the most inclusive instructions. Only
#   HttpSession::OnRead is collected (parsing a request, handling it, starting the answer's
#   write), so the setup's writes show as HandleRecordEvents and can be told apart; divide
#   by REQUESTS for a cost per request.
#   Env: TOP (rows, default 40), KEEP (a file to keep the callgrind output in).
# Needs valgrind and curl. Everything stays on 127.0.0.1 and stops by itself.
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=bench/status_page_seed.sh
source "$(dirname "$0")/status_page_seed.sh"

BUILD_DIR="${1:-build-release}"
BIN="$BUILD_DIR/statewatch"
REQUESTS="${REQUESTS:-400}"
require_built "$BIN" "make build-release"
require_command valgrind

make_scratch_dir statewatch-profile-http

valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" --collect-atstart=no \
  --toggle-collect='*HttpSession::OnRead*' \
  "$BIN" --data "$WORK/data" --durability sync serve --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --log-level warn >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
wait_for_port 300 0.1
seed_status_page  # bench/status_page_seed.sh: sets PARENT, CHILD and BODY
for _ in $(seq 1 "$REQUESTS"); do
  post /v1/tools/session_status "$BODY" -H "X-Session-Key: $PARENT" -o /dev/null
done
kill "$SERVER_PID"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=""
echo "callgrind: $REQUESTS session_status requests (200-event page), OnRead collected" >&2
[ -n "${KEEP:-}" ] && cp "$WORK/callgrind.out" "$KEEP"
callgrind_annotate --inclusive=yes "$WORK/callgrind.out" 2>/dev/null | head -n "$((${TOP:-40} + 20))"

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
# shellcheck source=bench/status_page_seed.sh
source "$(dirname "$0")/status_page_seed.sh"

BUILD_DIR="${1:-build-release}"
BIN="$BUILD_DIR/statewatch"
REQUESTS="${REQUESTS:-400}"
[ -x "$BIN" ] || { echo "profile_http: $BIN is not built (make build-release)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "profile_http: valgrind is missing (apt-get install valgrind)" >&2; exit 1; }

WORK="$(mktemp -d /tmp/statewatch-profile-http-XXXXXX)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" --collect-atstart=no \
  --toggle-collect='*HttpSession::OnRead*' \
  "$BIN" --data "$WORK/data" --durability sync serve --listen 127.0.0.1:0 \
  --port-file "$WORK/port" --log-level warn >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!
for _ in $(seq 1 300); do [ -s "$WORK/port" ] && break; sleep 0.1; done
[ -s "$WORK/port" ] || { echo "profile_http: the server did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }
URL="http://127.0.0.1:$(cat "$WORK/port")"

post() {  # PATH BODY [curl args...]
  local path="$1" body="$2"; shift 2
  curl -sf -H 'Content-Type: application/json' "$@" "$URL$path" -d "$body"
}
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

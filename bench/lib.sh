# shellcheck shell=bash
# Sourced by the bench scripts: the checks before a run, the scratch directory, and the one
# `statewatch serve` on loopback that most of them start. Messages name the script that
# sourced this file (BENCH_NAME, default its file name without .sh).
BENCH_NAME="${BENCH_NAME:-$(basename "$0" .sh)}"

# statewatch_argument "$@": BIN is the script's first argument, PATH/TO/statewatch, made
# absolute; exits 1 with the usage without one, or when it is not built.
statewatch_argument() {
  [ -n "${1:-}" ] || { echo "usage: $0 PATH/TO/statewatch" >&2; exit 1; }
  case "$1" in /*) BIN="$1" ;; *) BIN="$PWD/$1" ;; esac
  require_built "$BIN"
}

require_built() {  # FILE [HINT]: exits 1 unless FILE is an executable
  [ -x "$1" ] || { echo "$BENCH_NAME: $1 is not built${2:+ ($2)}" >&2; exit 1; }
}

require_command() {  # COMMAND [PACKAGE]: exits 1 unless COMMAND is on PATH
  command -v "$1" >/dev/null ||
    { echo "$BENCH_NAME: $1 is missing (apt-get install ${2:-$1})" >&2; exit 1; }
}

# make_scratch_dir PREFIX: sets WORK, a fresh directory /tmp/PREFIX-XXXXXX, SERVER_PID and
# RECEIVER_PID (""); on exit the daemon and the webhook receiver in them, if any, are stopped
# and WORK removed.
make_scratch_dir() {
  WORK="$(mktemp -d "/tmp/$1-XXXXXX")"
  SERVER_PID=""
  RECEIVER_PID=""
  trap stop_server_and_remove_scratch EXIT
}
stop_server_and_remove_scratch() {
  local pid
  for pid in "$SERVER_PID" "$RECEIVER_PID"; do
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  done
  rm -rf "$WORK"
}

# wait_for_port TRIES SECONDS: waits until the daemon started with --port-file "$WORK/port"
# has written it (at most TRIES checks, SECONDS apart), then sets PORT and URL; exits 1 with
# the daemon's stderr ("$WORK/stderr") when it never does.
# When SERVER_PID is set, it stops waiting as soon as that process has exited.
wait_for_port() {
  for _ in $(seq 1 "$1"); do
    [ -s "$WORK/port" ] && break
    [ -z "$SERVER_PID" ] || kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep "$2"
  done
  [ -s "$WORK/port" ] || { echo "$BENCH_NAME: the server did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }
  PORT="$(cat "$WORK/port")"
  URL="http://127.0.0.1:$PORT"
}

# start_server ARGS...: starts "$BIN" serve ARGS on a free loopback port, its output appended
# to "$WORK/stdout" and "$WORK/stderr", sets SERVER_PID and waits (at most ~20 s) until it
# listens (PORT, URL). Again after a kill, it restarts the daemon on the same data.
start_server() {
  rm -f "$WORK/port"
  "$BIN" serve --listen 127.0.0.1:0 --port-file "$WORK/port" "$@" \
    >>"$WORK/stdout" 2>>"$WORK/stderr" &
  SERVER_PID=$!
  wait_for_port 200 0.1
}

# start_webhook_receiver ARGS...: starts scripts/webhook-receiver.py with ARGS, its calls
# logged to "$WORK/calls.jsonl"; sets RECEIVER_PID and HOOK (its base URL); exits 1 when it
# does not listen within ~10 s.
start_webhook_receiver() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/../scripts/webhook-receiver.py" \
    --port-file "$WORK/rport" --log "$WORK/calls.jsonl" "$@" 2>"$WORK/receiver.err" &
  RECEIVER_PID=$!
  for _ in $(seq 1 100); do [ -s "$WORK/rport" ] && break; sleep 0.1; done
  [ -s "$WORK/rport" ] ||
    { echo "$BENCH_NAME: the webhook receiver did not start" >&2; cat "$WORK/receiver.err" >&2; exit 1; }
  # shellcheck disable=SC2034  # HOOK is the caller's
  HOOK="http://127.0.0.1:$(cat "$WORK/rport")"
}

post() {  # PATH BODY [curl args...] -> the answer on stdout; fails on an HTTP error
  local path="$1" body="$2"; shift 2
  curl -sf -H 'Content-Type: application/json' "$@" "$URL$path" -d "$body"
}

# write_wrk_post_script FILE BODY [NAME VALUE]...: a wrk script that POSTs BODY (JSON, written
# between single quotes: it holds none) with Content-Type application/json and the headers
# given as name and value pairs.
write_wrk_post_script() {
  local file="$1" body="$2"
  shift 2
  {
    echo 'wrk.method = "POST"'
    echo "wrk.body = '$body'"
    echo 'wrk.headers["Content-Type"] = "application/json"'
    while [ $# -ge 2 ]; do
      echo "wrk.headers[\"$1\"] = \"$2\""
      shift 2
    done
  } >"$file"
}

# write_status_wrk_script FILE BODY CALLER: a wrk script that POSTs BODY (a session_status
# request) as the session CALLER.
write_status_wrk_script() { write_wrk_post_script "$1" "$2" X-Session-Key "$3"; }

# shellcheck shell=bash
# Sourced by the bench scripts: the checks before a run, the scratch directory, and the one
# `statewatch serve` on loopback that most of them start. Messages name the script that
# sourced this file (BENCH_NAME, default its file name without .sh).
BENCH_NAME="${BENCH_NAME:-$(basename "$0" .sh)}"

require_built() {  # FILE [HINT]: exits 1 unless FILE is an executable
  [ -x "$1" ] || { echo "$BENCH_NAME: $1 is not built${2:+ ($2)}" >&2; exit 1; }
}

require_command() {  # COMMAND [PACKAGE]: exits 1 unless COMMAND is on PATH
  command -v "$1" >/dev/null ||
    { echo "$BENCH_NAME: $1 is missing (apt-get install ${2:-$1})" >&2; exit 1; }
}

# make_scratch_dir PREFIX: sets WORK, a fresh directory /tmp/PREFIX-XXXXXX, and SERVER_PID
# (""); on exit the daemon in SERVER_PID, if any, is stopped and WORK removed.
make_scratch_dir() {
  WORK="$(mktemp -d "/tmp/$1-XXXXXX")"
  SERVER_PID=""
  trap stop_server_and_remove_scratch EXIT
}
stop_server_and_remove_scratch() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}

# wait_for_port TRIES SECONDS: waits until the daemon started with --port-file "$WORK/port"
# has written it (at most TRIES checks, SECONDS apart), then sets PORT and URL; exits 1 with
# the daemon's stderr ("$WORK/stderr") when it never does.
wait_for_port() {
  for _ in $(seq 1 "$1"); do [ -s "$WORK/port" ] && break; sleep "$2"; done
  [ -s "$WORK/port" ] || { echo "$BENCH_NAME: the server did not start" >&2; cat "$WORK/stderr" >&2; exit 1; }
  PORT="$(cat "$WORK/port")"
  URL="http://127.0.0.1:$PORT"
}

post() {  # PATH BODY [curl args...] -> the answer on stdout; fails on an HTTP error
  local path="$1" body="$2"; shift 2
  curl -sf -H 'Content-Type: application/json' "$@" "$URL$path" -d "$body"
}

# write_status_wrk_script FILE BODY CALLER: a wrk script that POSTs BODY (a session_status
# request) as the session CALLER.
write_status_wrk_script() {
  cat >"$1" <<LUA
wrk.method = "POST"
wrk.body = '$2'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Session-Key"] = "$3"
LUA
}

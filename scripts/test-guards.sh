#!/usr/bin/env bash
# The loop guards and trace context of the real daemon, end to end: two sessions ping-pong
# sessions_send as fast as they can (each reads its message from the delivery feed and
# answers at once) and are stopped within the configured budget, with 429 loop_guard, the
# guard_refused events on each caller's journal and statewatch_guard_refusals_total in
# /metrics; the traceparent of each call arrives with its delivery (scripts/test-guards.py).
#
# Usage: scripts/test-guards.sh PATH/TO/statewatch
set -euo pipefail

BIN="${1:?usage: scripts/test-guards.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-guards: $BIN is not built" >&2; exit 1; }
# Debian's interpreter, which has the Debian packages (python3-websocket), before any other
# python3 on the PATH.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" -c 'import websocket' 2>/dev/null ||
  { echo "test-guards: python3-websocket missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
exec "$PY" -B "$(dirname "$0")/test-guards.py" "$BIN"

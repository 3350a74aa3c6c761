#!/usr/bin/env bash
# `make run`: starts the statewatch daemon (`statewatch serve`) on ./data in the foreground,
# listening on 127.0.0.1:7411. Ctrl-C (SIGINT) or SIGTERM stops it gracefully: in-flight
# requests finish and the database closes cleanly.
#
# Usage: scripts/run.sh BUILD_DIR [extra serve options...]
# Env:   STATEWATCH_DATA (default ./data), STATEWATCH_LISTEN (default 127.0.0.1:7411).
#
# Then, from another terminal (see docs/daemon.md for more):
#   curl -s http://127.0.0.1:7411/healthz
#   curl -s http://127.0.0.1:7411/v1/tools/session_status -H 'Content-Type: application/json' \
#     -H 'X-Session-Key: agent:main:main' -d '{}'
set -euo pipefail

BUILD_DIR="${1:?usage: scripts/run.sh BUILD_DIR [serve options...]}"
shift
BIN="$BUILD_DIR/statewatch"
DATA="${STATEWATCH_DATA:-./data}"
LISTEN="${STATEWATCH_LISTEN:-127.0.0.1:7411}"
[ -x "$BIN" ] || { echo "run.sh: $BIN is not built" >&2; exit 1; }

echo "statewatch: serving $DATA on http://$LISTEN — Ctrl-C stops it" >&2
echo "  try: curl -s http://$LISTEN/healthz" >&2
exec "$BIN" --data "$DATA" serve --listen "$LISTEN" "$@"

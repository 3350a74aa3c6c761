#!/usr/bin/env bash
# `make run`: until the daemon (`statewatch serve`) exists, a short scripted demonstration of
# the command line against ./data. A coordinator spawns a sub-agent (which seeds its cursor
# on the child), a human then writes to the child twice; the coordinator gets exactly one
# notice, reconciles with changesSince, and drains it.
#
# Usage: scripts/run.sh BUILD_DIR
set -euo pipefail

BUILD_DIR="${1:?usage: scripts/run.sh BUILD_DIR}"
BIN="$BUILD_DIR/statewatch"
DATA="${STATEWATCH_DATA:-./data}"
[ -x "$BIN" ] || { echo "run.sh: $BIN is not built" >&2; exit 1; }

# Each run gets its own child session, so that re-running on the same ./data shows the same
# story instead of deduplicated records.
RUN_ID="demo-$(date +%s)-$$"
PARENT="agent:main:main"
CHILD="agent:main:subagent:$RUN_ID"

run() {
  echo "\$ statewatch --data $DATA $*"
  "$BIN" --data "$DATA" "$@"
  echo
}

# The first number after `changesSince ` in a notice: the position to reconcile from.
since_of() { sed -n 's/.*changesSince \([0-9][0-9]*\).*/\1/p' | head -n 1; }

run record --session "$CHILD" --kind child_spawned --actor-type agent --actor-id "$PARENT" \
  --run-id "$RUN_ID" --summary "child session spawned" --dedupe "child-spawned:$RUN_ID" \
  --watcher "$PARENT"
run record --session "$CHILD" --kind human_direct_message --actor-type human \
  --summary "human message via telegram" --payload '{"channel": "telegram"}'
run record --session "$CHILD" --kind human_direct_message --actor-type human \
  --summary "human message via telegram" --payload '{"channel": "telegram"}'
run status --session "$CHILD"
run notices --watcher "$PARENT"

SINCE="$("$BIN" --data "$DATA" notices --watcher "$PARENT" | since_of)"
run status --session "$CHILD" --changes-since "${SINCE:-0}"
run drain --watcher "$PARENT"
run notices --watcher "$PARENT"
run cursor --watcher "$PARENT" --target "$CHILD"
run stats

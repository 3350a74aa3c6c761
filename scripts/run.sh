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

# Echoes the command (shell-quoted, so it can be pasted back), then runs it.
run() {
  printf '$ statewatch --data %q' "$DATA"
  printf ' %q' "$@"
  printf '\n'
  "$BIN" --data "$DATA" "$@"
  echo
}

say() { printf '# %s\n' "$*"; }

# The first number after `changesSince ` in a notice: the position to reconcile from.
since_of() { sed -n 's/.*changesSince \([0-9][0-9]*\).*/\1/p' | head -n 1; }

say "$PARENT spawns $CHILD: its cursor on the child is seeded, no notice."
run record --session "$CHILD" --kind child_spawned --actor-type agent --actor-id "$PARENT" \
  --run-id "$RUN_ID" --summary "child session spawned" --dedupe "child-spawned:$RUN_ID" \
  --watcher "$PARENT"
say "A human writes to the child twice."
run record --session "$CHILD" --kind human_direct_message --actor-type human \
  --summary "human message via telegram" --payload '{"channel": "telegram"}'
run record --session "$CHILD" --kind human_direct_message --actor-type human \
  --summary "human message via telegram" --payload '{"channel": "telegram"}'
run status --session "$CHILD"
say "One coalesced notice for the coordinator, not two."
run notices --watcher "$PARENT"

SINCE="$("$BIN" --data "$DATA" notices --watcher "$PARENT" | since_of)"
say "The coordinator reconciles from the notice's position."
run status --session "$CHILD" --changes-since "${SINCE:-0}"
say "Draining acknowledges up to the frozen mark; the second message opens one new notice."
run drain --watcher "$PARENT"
run notices --watcher "$PARENT"
run cursor --watcher "$PARENT" --target "$CHILD"
say "Draining again leaves nothing pending."
run drain --watcher "$PARENT"
run stats

#!/usr/bin/env bash
# Runs the TypeScript client's tests (clients/typescript, node's own test runner) against the
# statewatch binary given: each test file starts its own `statewatch serve --manual-clock` on
# a free loopback port.
#
# Usage: scripts/test-client.sh PATH/TO/statewatch
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:?usage: scripts/test-client.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-client: $BIN is not built" >&2; exit 1; }

cd "$ROOT/clients/typescript"
# npm ci installs exactly the committed lockfile; skip it when node_modules already matches.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.lockfile-stamp; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.lockfile-stamp
fi
STATEWATCH_BIN="$BIN" npm test --silent

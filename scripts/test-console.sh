#!/usr/bin/env bash
# The operator console in a real browser (tests/console/console.test.mjs): Debian's Chromium
# driven by playwright-core (pinned in tests/console/package-lock.json; Playwright's own
# browser download is not used) against the statewatch binary given, which it starts with a
# token and seeds. With SCREENSHOT=PATH (make console-screenshot: docs/console.png) it saves
# the page as a PNG there; a plain `make test` leaves the tree unchanged.
#
# Usage: scripts/test-console.sh PATH/TO/statewatch
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${1:?usage: scripts/test-console.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-console: $BIN is not built" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "test-console: /usr/bin/chromium is missing (scripts/install-deps.sh installs Debian's chromium)" >&2; exit 1; }

cd "$ROOT/tests/console"
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.lockfile-stamp; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.lockfile-stamp
fi
STATEWATCH_BIN="$BIN" SCREENSHOT="${SCREENSHOT:-}" npm test --silent

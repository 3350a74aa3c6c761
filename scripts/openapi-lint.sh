#!/usr/bin/env bash
# Lints docs/openapi.json with the two OpenAPI linters, each on its recommended ruleset:
# Redocly CLI (redocly.yaml) and Spectral (.spectral.yaml, spectral:oas). Fails when either
# reports an error; warnings are printed. The linters are the exact versions of
# scripts/openapi-lint/package-lock.json, installed there with npm ci (only when
# node_modules does not match the lockfile yet); the lint itself needs no network.
#
# Usage: scripts/openapi-lint.sh [DOCUMENT]   (default docs/openapi.json)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOC="${1:-docs/openapi.json}"
case "$DOC" in /*) ;; *) DOC="$PWD/$DOC" ;; esac
[ -f "$DOC" ] || { echo "openapi-lint: $DOC does not exist" >&2; exit 1; }

TOOLS="$ROOT/scripts/openapi-lint"
if [ ! -f "$TOOLS/node_modules/.package-lock.json" ] ||
   ! cmp -s "$TOOLS/package-lock.json" "$TOOLS/node_modules/.lockfile-stamp"; then
  (cd "$TOOLS" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$TOOLS/package-lock.json" "$TOOLS/node_modules/.lockfile-stamp"
fi
BIN="$TOOLS/node_modules/.bin"

cd "$ROOT"
status=0
echo "openapi-lint: redocly (recommended, redocly.yaml)"
# No usage telemetry, no update check: the lint works offline.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$BIN/redocly" lint "$DOC" --config redocly.yaml --format=stylish || status=1
echo "openapi-lint: spectral (spectral:oas, .spectral.yaml)"
"$BIN/spectral" lint "$DOC" --ruleset .spectral.yaml --fail-severity error || status=1
if [ "$status" -ne 0 ]; then
  echo "openapi-lint: $DOC has errors (see above)" >&2
fi
exit "$status"

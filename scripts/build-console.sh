#!/usr/bin/env bash
# Builds the operator console's files (console/) into OUT_DIR: npm ci when console/node_modules
# does not match the committed lockfile, tsc (console/tsconfig.json), then the static files.
# The CMake build runs it (cmake/ConsoleAssets.cmake) and embeds OUT_DIR into the binary.
#
# Usage: scripts/build-console.sh OUT_DIR
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="${1:?usage: scripts/build-console.sh OUT_DIR}"

cd "$ROOT/console"
# npm ci installs exactly the committed lockfile (TypeScript, the version the client uses);
# skipped when node_modules already matches it.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.lockfile-stamp; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.lockfile-stamp
fi
rm -rf "$OUT"
mkdir -p "$OUT"
# The sources import the daemon's answer types from the TypeScript client's generated
# schemas (types only: nothing of them is emitted that the page loads), so tsc's root is the
# repository: the console's own files land in $OUT/tsc/console/src, and only they are kept.
node_modules/.bin/tsc -p tsconfig.json --outDir "$OUT/tsc"
cp "$OUT"/tsc/console/src/*.js "$OUT/"
rm -rf "$OUT/tsc"
cp static/* "$OUT/"

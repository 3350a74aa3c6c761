#!/usr/bin/env bash
# make bench-node: a Node gateway's choice, measured (bench/node/gateway_bench.mjs). Builds the
# TypeScript client (clients/typescript, npm ci + tsc) and installs better-sqlite3 in
# bench/node from its committed lockfile, compiled from source against this machine's Node
# headers (no prebuilt binary is downloaded), then runs the benchmark: it prints a table and
# its ratios and writes bench/results/node.json.
#
# Usage: bench/node/run.sh PATH/TO/statewatch [--seconds S] [--rounds R]
set -euo pipefail
BENCH_NAME=bench-node
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/../lib.sh"
statewatch_argument "${1:-}"
shift
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
require_command node nodejs
require_command npm
# better-sqlite3 12 supports Node.js 20 and later.
[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ] ||
  { echo "$BENCH_NAME: better-sqlite3 12 needs Node.js 20 or later (this is $(node --version))" >&2
    exit 1; }
# node-gyp builds the addon against the headers of the Node that runs it: Debian's nodejs
# ships them in libnode-dev (an image's own Node build carries them in its prefix).
NODEDIR="$(node -p 'require("path").resolve(process.execPath, "../..")')"
[ -f "$NODEDIR/include/node/node.h" ] ||
  { echo "$BENCH_NAME: no Node headers under $NODEDIR/include/node (apt-get install libnode-dev)" >&2
    exit 1; }

install_locked() {  # DIR [ENV...]: npm ci in DIR unless node_modules matches its lockfile
  local dir="$1"
  shift
  if [ ! -f "$dir/node_modules/.lockfile-stamp" ] ||
     ! cmp -s "$dir/package-lock.json" "$dir/node_modules/.lockfile-stamp"; then
    (cd "$dir" && env "$@" npm ci --no-audit --no-fund --loglevel=error)
    cp "$dir/package-lock.json" "$dir/node_modules/.lockfile-stamp"
  fi
}
install_locked "$ROOT/clients/typescript"
(cd "$ROOT/clients/typescript" && npm run --silent build)
install_locked "$ROOT/bench/node" npm_config_nodedir="$NODEDIR" npm_config_build_from_source=true

mkdir -p "$ROOT/bench/results"
node "$ROOT/bench/node/gateway_bench.mjs" --statewatch "$BIN" --out "$ROOT/bench/results/node.json" "$@"

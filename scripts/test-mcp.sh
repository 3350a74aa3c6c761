#!/usr/bin/env bash
# MCP conformance: the official TypeScript SDK client (@modelcontextprotocol/sdk, pinned in
# tests/mcp/package-lock.json) against a real `statewatch serve` (manual clock, a token) —
# over Streamable HTTP at /mcp and through `statewatch mcp` spawned as a stdio MCP server:
# initialize, tools/list compared with docs/openapi.json, tools/call, a resource
# subscription notified after an event recorded over plain HTTP, a request without the
# token refused. See tests/mcp/mcp_conformance.mjs.
#
# Usage: scripts/test-mcp.sh PATH/TO/statewatch
set -euo pipefail

BIN="${1:?usage: scripts/test-mcp.sh PATH/TO/statewatch}"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
[ -x "$BIN" ] || { echo "test-mcp: $BIN is not built" >&2; exit 1; }
command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "test-mcp: node and npm missing (scripts/install-deps.sh installs them)" >&2; exit 1; }

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT/tests/mcp"
npm ci --no-audit --no-fund --loglevel=error >/dev/null
node mcp_conformance.mjs "$BIN" "$ROOT/docs/openapi.json"

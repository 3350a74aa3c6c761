#!/usr/bin/env bash
# MCP tools/call against the same tool over plain HTTP: one daemon, one run, alternating wrk
# runs of
#   POST /v1/tools/session_status        {} as agent:main:main (X-Session-Key)
#   POST /mcp  tools/call session_status  in an MCP session initialized as agent:main:main
# so the ratio is what the MCP envelope costs per call (JSON-RPC parse, the session lookup,
# the inner dispatch through the same Api, the result wrapping). The best run of each is
# reported; bench/results/mcp.json gets the figures.
#
# Usage: bench/mcp_bench.sh PATH/TO/statewatch
# Env: DURATION (s per wrk run, default 5), CONNECTIONS (default 8), RUNS (default 3).
# Needs wrk and curl (scripts/install-deps.sh installs them).
set -euo pipefail

DURATION="${DURATION:-5}"
CONNECTIONS="${CONNECTIONS:-8}"
RUNS="${RUNS:-3}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"
statewatch_argument "$@"
require_command wrk
require_command curl

make_scratch_dir statewatch-mcp-bench
TOKEN="mcp-bench-token-0123456789abcdef"
printf '%s' "$TOKEN" >"$WORK/token"
chmod 600 "$WORK/token"
start_server --data "$WORK/data" --create --token-file "$WORK/token" --durability buffered

SESSION="$(curl -sf -D - -o /dev/null -X POST "$URL/mcp" -H "Authorization: Bearer $TOKEN" \
  -H 'Content-Type: application/json' -H 'X-Session-Key: agent:main:main' \
  -H 'Accept: application/json, text/event-stream' \
  --data '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}' |
  tr -d '\r' | awk -F': ' 'tolower($1) == "mcp-session-id" { print $2 }')"
[ -n "$SESSION" ] || { echo "mcp_bench: initialize gave no Mcp-Session-Id" >&2; exit 1; }

write_wrk_post_script "$WORK/http.lua" '{}' \
  Authorization "Bearer $TOKEN" X-Session-Key agent:main:main
write_wrk_post_script "$WORK/mcp.lua" \
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_status","arguments":{}}}' \
  Accept "application/json, text/event-stream" Authorization "Bearer $TOKEN" \
  Mcp-Session-Id "$SESSION" MCP-Protocol-Version 2025-11-25
# One answer of each, checked, before measuring.
curl -sf -X POST "$URL/mcp" -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
  -H "Mcp-Session-Id: $SESSION" --data '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"session_status","arguments":{}}}' |
  grep -q '"isError":false' || { echo "mcp_bench: tools/call failed" >&2; exit 1; }

run() {  # run SCRIPT PATH -> req/s (fails on any non-2xx answer)
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/$1" "$URL$2" >"$WORK/wrk.out"
  if grep -q "Non-2xx" "$WORK/wrk.out"; then cat "$WORK/wrk.out" >&2; exit 1; fi
  awk '/^Requests\/sec:/ { print $2 }' "$WORK/wrk.out"
}
best_http=0
best_mcp=0
for _ in $(seq 1 "$RUNS"); do
  h="$(run http.lua /v1/tools/session_status)"
  m="$(run mcp.lua /mcp)"
  best_http="$(awk -v a="$best_http" -v b="$h" 'BEGIN { print (b > a ? b : a) }')"
  best_mcp="$(awk -v a="$best_mcp" -v b="$m" 'BEGIN { print (b > a ? b : a) }')"
done
ratio="$(awk -v m="$best_mcp" -v h="$best_http" 'BEGIN { printf "%.2f", m / h }')"
printf '| figure | req/s |\n| --- | --- |\n'
printf '| POST /v1/tools/session_status (plain HTTP) | %.0f |\n' "$best_http"
printf '| MCP tools/call session_status (POST /mcp) | %.0f |\n' "$best_mcp"
printf '| ratio MCP / HTTP | %s |\n' "$ratio"
echo "(wrk, $CONNECTIONS connections, best of $RUNS runs of ${DURATION}s each)"
mkdir -p "$ROOT/bench/results"
printf '{"http_req_per_s": %s, "mcp_req_per_s": %s, "ratio": %s, "connections": %s, "duration_s": %s, "runs": %s}\n' \
  "$best_http" "$best_mcp" "$ratio" "$CONNECTIONS" "$DURATION" "$RUNS" >"$ROOT/bench/results/mcp.json"

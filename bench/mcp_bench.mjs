// MCP tools/call against the same tool over plain HTTP, same daemon, same run: how much the
// MCP envelope (JSON-RPC parse, session lookup, the inner dispatch, the result wrapping)
// costs per call. Both loops call session_status as agent:main:main with CONCURRENCY
// requests in flight over kept-alive connections (Node's fetch), alternating ROUNDS times;
// the best round of each is reported, with the ratio MCP / HTTP.
//
// Usage: node bench/mcp_bench.mjs PATH/TO/statewatch [REQUESTS_PER_ROUND] [CONCURRENCY]
// Writes bench/results/mcp.json.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const [bin, perRoundArg, concurrencyArg] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node bench/mcp_bench.mjs PATH/TO/statewatch [REQUESTS] [CONCURRENCY]');
  process.exit(2);
}
const PER_ROUND = Number(perRoundArg || 4000);
const CONCURRENCY = Number(concurrencyArg || 8);
const ROUNDS = 3;
const TOKEN = 'mcp-bench-token-0123456789abcdef';
const CALLER = 'agent:main:main';
const dir = mkdtempSync(join(tmpdir(), 'statewatch-mcp-bench-'));
writeFileSync(join(dir, 'token'), TOKEN, { mode: 0o600 });

async function start() {
  const portFile = join(dir, 'port');
  const daemon = spawn(bin, ['serve', '--data', join(dir, 'data'), '--create', '--listen',
    '127.0.0.1:0', '--port-file', portFile, '--token-file', join(dir, 'token'),
    '--durability', 'buffered'], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 200 && !existsSync(portFile); i++) await new Promise((r) => setTimeout(r, 100));
  if (!existsSync(portFile)) throw new Error('the daemon did not start');
  return { daemon, base: `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}` };
}

const auth = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };

async function run(n, call) {
  let next = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (next < n) {
      next++;
      await call();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return n / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function main() {
  const { daemon, base } = await start();
  try {
    const init = await fetch(`${base}/mcp`, { method: 'POST',
      headers: { ...auth, 'X-Session-Key': CALLER, Accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
    await init.text();
    const session = init.headers.get('mcp-session-id');
    if (!session) throw new Error(`initialize answered ${init.status}`);
    const mcpHeaders = { ...auth, Accept: 'application/json, text/event-stream',
      'Mcp-Session-Id': session, 'MCP-Protocol-Version': '2025-11-25' };
    const mcpBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
      params: { name: 'session_status', arguments: {} } });
    const httpHeaders = { ...auth, 'X-Session-Key': CALLER };
    const http = async () => {
      const r = await fetch(`${base}/v1/tools/session_status`, { method: 'POST', headers: httpHeaders, body: '{}' });
      await r.text();
      if (r.status !== 200) throw new Error(`HTTP answered ${r.status}`);
    };
    const mcp = async () => {
      const r = await fetch(`${base}/mcp`, { method: 'POST', headers: mcpHeaders, body: mcpBody });
      const text = await r.text();
      if (r.status !== 200 || text.includes('"isError":true')) throw new Error(`MCP answered ${r.status} ${text}`);
    };
    await run(500, http);  // warm-up: connections, caches
    await run(500, mcp);
    const best = { http: 0, mcp: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      best.http = Math.max(best.http, await run(PER_ROUND, http));
      best.mcp = Math.max(best.mcp, await run(PER_ROUND, mcp));
    }
    const ratio = best.mcp / best.http;
    console.log('| figure | req/s |');
    console.log('| --- | --- |');
    console.log(`| POST /v1/tools/session_status (plain HTTP) | ${best.http.toFixed(0)} |`);
    console.log(`| MCP tools/call session_status (POST /mcp) | ${best.mcp.toFixed(0)} |`);
    console.log(`| ratio MCP / HTTP | ${ratio.toFixed(2)} |`);
    console.log(`(${CONCURRENCY} in flight, best of ${ROUNDS} rounds of ${PER_ROUND} each)`);
    const results = join(dirname(fileURLToPath(import.meta.url)), 'results');
    mkdirSync(results, { recursive: true });
    writeFileSync(join(results, 'mcp.json'), JSON.stringify({
      http_req_per_s: best.http, mcp_req_per_s: best.mcp, ratio, concurrency: CONCURRENCY,
      requests_per_round: PER_ROUND, rounds: ROUNDS }, null, 2) + '\n');
  } finally {
    daemon.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

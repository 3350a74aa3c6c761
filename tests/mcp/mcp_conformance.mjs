// MCP conformance of statewatch serve's /mcp endpoint and of `statewatch mcp` (the stdio
// bridge), with the official TypeScript SDK client against a real daemon (manual clock, a
// bearer token). Every wait is bounded; the engine's clock is moved over HTTP, never slept on.
//
// Usage: node tests/mcp/mcp_conformance.mjs PATH/TO/statewatch PATH/TO/docs/openapi.json
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const [bin, openapiPath] = process.argv.slice(2);
if (!bin || !openapiPath) {
  console.error('usage: node mcp_conformance.mjs PATH/TO/statewatch PATH/TO/openapi.json');
  process.exit(2);
}
const TOKEN = 'mcp-conformance-token-0123456789';
const CALLER = 'agent:main:main';
const WAIT_MS = 20000;  // the bound of every wait (a failure, never a timing)

const dir = mkdtempSync(join(tmpdir(), 'statewatch-mcp-'));
const tokenFile = join(dir, 'token');
writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
let daemon;

function log(line) { console.log(`test-mcp: ${line}`); }

async function within(promise, what) {
  let timer;
  const bound = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${WAIT_MS} ms`)), WAIT_MS);
  });
  try { return await Promise.race([promise, bound]); } finally { clearTimeout(timer); }
}

async function startDaemon() {
  const portFile = join(dir, 'port');
  daemon = spawn(bin, ['serve', '--data', join(dir, 'data'), '--create', '--listen', '127.0.0.1:0',
    '--port-file', portFile, '--manual-clock', '--token-file', tokenFile],
  { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  daemon.stderr.on('data', (d) => { stderr += d; });
  for (let i = 0; i < 200 && !existsSync(portFile); i++) {
    if (daemon.exitCode !== null) throw new Error(`serve exited: ${stderr}`);
    await new Promise((r) => setTimeout(r, 100));  // polling for the file, bounded
  }
  if (!existsSync(portFile)) throw new Error(`no port file after 20 s: ${stderr}`);
  return `http://127.0.0.1:${readFileSync(portFile, 'utf8').trim()}`;
}

async function http(base, method, path, body, token = TOKEN) {
  const headers = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(base + path, { method, headers, body: body && JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

// The OpenAPI request schema with its $refs inlined as the server inlines them.
function inline(value, components, depth = 0) {
  if (Array.isArray(value)) return value.map((v) => inline(v, components, depth + 1));
  if (value === null || typeof value !== 'object') return value;
  let out = {};
  const ref = value.$ref;
  const prefix = '#/components/schemas/';
  if (typeof ref === 'string' && ref.startsWith(prefix) && components[ref.slice(prefix.length)]) {
    out = inline(components[ref.slice(prefix.length)], components, depth + 1);
  }
  for (const [k, v] of Object.entries(value)) {
    if (k === '$ref' && Object.keys(out).length > 0) continue;
    out[k] = inline(v, components, depth + 1);
  }
  return out;
}

function expectedTools() {
  const doc = JSON.parse(readFileSync(openapiPath, 'utf8'));
  const tools = new Map();
  for (const [path, item] of Object.entries(doc.paths)) {
    const op = item.post;
    if (!op || !op.tags.includes('tools')) continue;
    const schema = op.requestBody.content['application/json'].schema;
    tools.set(path.replace('/v1/tools/', ''), inline(schema, doc.components.schemas));
  }
  return tools;
}

// A child of the caller (visibility tree) that the caller may watch.
async function makeChild(base, key) {
  const r = await http(base, 'PUT', `/v1/sessions/${key}`, { parentSessionKey: CALLER });
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

// Records a human message on `key` over plain HTTP, then moves the manual clock past the
// 20 s wake window (POST /v1/clock runs the due wakes), so a merged wake fires too.
async function recordAndTick(base, key) {
  const e = await http(base, 'POST', '/v1/events',
    { sessionKey: key, kind: 'human_direct_message', actorType: 'human', summary: 'hi' });
  assert.equal(e.status, 200, JSON.stringify(e.body));
  const clock = await http(base, 'GET', '/v1/clock');
  const tick = await http(base, 'POST', '/v1/clock', { now: clock.body.now + 21000 });
  assert.equal(tick.status, 200, JSON.stringify(tick.body));
}

function waitForUpdate(client, uri) {
  return new Promise((resolve) => {
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      if (n.params.uri === uri) resolve(n);
    });
  });
}

// The checks both transports pass.
async function exercise(client, base, label, child) {
  const expected = expectedTools();
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...expected.keys()].sort(),
    `${label}: tools/list names = the OpenAPI document's tools`);
  for (const t of tools) {
    assert.deepEqual(t.inputSchema, expected.get(t.name), `${label}: inputSchema of ${t.name}`);
  }
  log(`${label}: tools/list: ${tools.length} tools, schemas equal to docs/openapi.json`);

  const status = await client.callTool({ name: 'session_status', arguments: {} });
  assert.equal(status.isError, false, JSON.stringify(status));
  assert.equal(status.structuredContent.sessionKey, CALLER);
  const refused = await client.callTool({ name: 'session_status', arguments: { changesSince: -1 } });
  assert.equal(refused.isError, true, JSON.stringify(refused));
  assert.equal(refused.structuredContent.status, 400);
  assert.match(refused.structuredContent.error.message, /changesSince/);
  const sent = await client.callTool({ name: 'sessions_send',
    arguments: { sessionKey: child, message: `hello from ${label}`, timeoutSeconds: 0 } });
  assert.equal(sent.isError, false, JSON.stringify(sent));
  assert.ok(sent.structuredContent.runId, JSON.stringify(sent));
  log(`${label}: tools/call session_status, sessions_send (run ${sent.structuredContent.runId}), an error as isError`);

  const { resourceTemplates } = await client.listResourceTemplates();
  assert.deepEqual(resourceTemplates.map((t) => t.uriTemplate).sort(),
    ['statewatch://sessions/{key}', 'statewatch://sessions/{key}/history']);
  const watched = `${child}-watched`;
  await makeChild(base, watched);
  const uri = `statewatch://sessions/${watched}`;
  const updated = waitForUpdate(client, uri);
  await client.subscribeResource({ uri });
  await recordAndTick(base, watched);
  await within(updated, `${label}: notifications/resources/updated for ${uri}`);
  const read = await client.readResource({ uri });
  assert.equal(JSON.parse(read.contents[0].text).sessionKey, watched);
  const history = await client.readResource({ uri: `${uri}/history` });
  assert.equal(JSON.parse(history.contents[0].text).sessionKey, watched);
  // Read, the notice is acknowledged: the next change notifies again.
  const again = waitForUpdate(client, uri);
  await recordAndTick(base, watched);
  await within(again, `${label}: a second notifications/resources/updated`);
  await client.unsubscribeResource({ uri });
  log(`${label}: resources/subscribe, an event over HTTP -> notifications/resources/updated (twice), resources/read`);
}

async function main() {
  const base = await startDaemon();
  log(`daemon at ${base}`);
  await makeChild(base, 'agent:main:http-child');
  await makeChild(base, 'agent:main:stdio-child');

  // Without the token: the HTTP answer and the SDK's connect are refused.
  const bare = await fetch(`${base}/mcp`, { method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '0' } } }) });
  assert.equal(bare.status, 401);
  const noToken = new Client({ name: 'no-token', version: '0' });
  await assert.rejects(noToken.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`))),
    /401|nauthorized/);
  log('without the token: 401, and the SDK client does not connect');

  const client = new Client({ name: 'statewatch-conformance', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}`, 'X-Session-Key': CALLER } } });
  await client.connect(transport);
  assert.ok(transport.sessionId, 'an Mcp-Session-Id');
  log(`Streamable HTTP: initialized, protocol ${transport.protocolVersion}, session ${transport.sessionId}`);
  await exercise(client, base, 'http', 'agent:main:http-child');
  await transport.terminateSession();
  await client.close();

  const stdio = new Client({ name: 'statewatch-conformance-stdio', version: '1.0.0' });
  const bridge = new StdioClientTransport({ command: bin, stderr: 'inherit',
    args: ['mcp', '--server', base, '--token-file', tokenFile, '--session-key', CALLER] });
  await stdio.connect(bridge);
  log('stdio: statewatch mcp spawned and initialized');
  await exercise(stdio, base, 'stdio', 'agent:main:stdio-child');
  await stdio.close();
  log('ok');
}

try {
  await main();
} catch (e) {
  console.error(`test-mcp: FAILED: ${e.stack || e}`);
  process.exitCode = 1;
} finally {
  if (daemon && daemon.exitCode === null) daemon.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}

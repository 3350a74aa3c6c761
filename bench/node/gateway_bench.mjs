// A Node gateway's choice (README "Benchmarks", docs/benchmarks.md "A Node gateway"): the
// reference design's tables on better-sqlite3 inside the gateway (bench/node/reference_sqlite.mjs)
// against the statewatch daemon on loopback through the TypeScript client, in one Node process,
// lanes taking turns within every round, the median of the rounds reported.
//
// It starts two daemons of its own (`statewatch serve`, each on a fresh data directory): one
// with `--durability sync` (every acknowledged write fsynced, as SQLite's synchronous=FULL) and
// one with `buffered` (as NORMAL, the reference's setting). The cases:
//
//   durable-single    one awaited durable event at a time (FULL / sync), plus a raw lane (below)
//   durable-8         8 durable events in flight (better-sqlite3's API is synchronous, so its
//                     8 callers take turns on the event loop)
//   buffered-single   one awaited buffered event, plus a raw lane: the same request on a
//                     kept-alive node:http socket, built by hand — what the client costs —
//                     and the same on undici's pool (npm undici), the other transport
//   buffered-batch100 a batch of 100 events a call (NORMAL / buffered)
//   fanout-1000       an event on a target 1,000 watchers watch with no notice pending: it
//                     opens 1,000 notices (buffered; the registrations are made untimed
//                     before each turn, a fresh target for every event)
//   watch             registering new (watcher, target) pairs: one a call, and 500 a call
//
// Every daemon lane goes through StatewatchClient (clients/typescript, built), which sends a
// fresh X-Request-Id with each write; the raw lanes send the same bytes. Every lane also
// reports this Node process's CPU time a unit (an event or a watch). Prints a table (rates,
// CPU in parentheses) and writes the figures as JSON to --out.
//
// Usage: node bench/node/gateway_bench.mjs --statewatch build/statewatch
//        [--seconds 3] [--rounds 3] [--out bench/results/node.json]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { Pool } from "undici";
import { StatewatchClient } from "../../clients/typescript/dist/esm/index.js";
import { clientHeaders, eventMaker, median, rawPoster, takeTurns } from "./lanes.mjs";
import { checkReference, ReferenceSqlite } from "./reference_sqlite.mjs";

const { values: args } = parseArgs({
  options: {
    statewatch: { type: "string" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    out: { type: "string" },
  },
});
if (!args.statewatch) throw new Error("--statewatch PATH/TO/statewatch is required");
const ms = Number(args.seconds) * 1000;
const rounds = Number(args.rounds);
// better-sqlite3 is installed in bench/node (package.json; built from source by make bench-node).
const Database = createRequire(import.meta.url)("better-sqlite3");

const scratch = mkdtempSync(join(tmpdir(), "statewatch-node-bench-"));
const daemons = [];
// On the way out (also after an error) the daemons are killed and the scratch removed; rmSync
// retries while a dying daemon still has files open in it.
process.on("exit", () => {
  for (const d of daemons) if (d.exitCode === null) d.kill("SIGKILL");
  rmSync(scratch, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
});
// Stops the daemons gracefully (SIGTERM: the databases close cleanly), each within 10 s.
const stopDaemons = () => Promise.all(daemons.map((d) => new Promise((done) => {
  if (d.exitCode !== null) return done();
  const timer = setTimeout(() => d.kill("SIGKILL"), 10000);
  d.on("exit", () => (clearTimeout(timer), done()));
  d.kill("SIGTERM");
})));

// Starts `statewatch serve` on a free loopback port; resolves to its URL once it listens
// (its port file written), rejects when it exits first or after 20 s.
async function startDaemon(durability) {
  const dir = join(scratch, durability);
  const portFile = join(scratch, `${durability}.port`);
  const child = spawn(resolve(args.statewatch), ["serve", "--listen", "127.0.0.1:0",
    "--port-file", portFile, "--data", join(dir, "data"), "--durability", durability,
    "--log-level", "warn"], { stdio: ["ignore", "ignore", "inherit"] });
  daemons.push(child);
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`statewatch serve exited (${child.exitCode})`);
    try {
      const port = readFileSync(portFile, "utf8").trim();
      if (port) return `http://127.0.0.1:${port}`;
    } catch { /* not written yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`statewatch serve (${durability}) did not listen within 20 s`);
}

checkReference(Database, join(scratch, "check.db"));
const syncUrl = await startDaemon("sync");
const bufferedUrl = await startDaemon("buffered");
const clients = {
  sync1: new StatewatchClient({ url: syncUrl, maxConnections: 1 }),
  sync8: new StatewatchClient({ url: syncUrl, maxConnections: 8 }),
  buffered: new StatewatchClient({ url: bufferedUrl, maxConnections: 1 }),
};
const full = new ReferenceSqlite(Database, join(scratch, "full.db"), "FULL");
const normal = new ReferenceSqlite(Database, join(scratch, "normal.db"), "NORMAL");

// The same event on both sides: a human message to one of 100 sessions nobody watches.
const event = eventMaker();
const batch100 = () => Array.from({ length: 100 }, event);

// The raw lanes: the request the client sends, by hand, on one kept-alive socket.
const raw = rawPoster(bufferedUrl, "/v1/events");
// undici's pool (npm undici), one connection, the same request: the other keep-alive
// transport a client could be built on.
const undiciPool = new Pool(bufferedUrl, { connections: 1 });
async function undiciPost(body) {
  const { statusCode, body: answer } = await undiciPool.request({ path: "/v1/events",
    method: "POST", body, headers: clientHeaders() });
  const text = await answer.text();
  if (statusCode !== 200) throw new Error(`undici: HTTP ${statusCode} ${text}`);
  return JSON.parse(text);
}
const rawSync = rawPoster(syncUrl, "/v1/events");

// Runs `call` (resolving to how many units it did) from `inFlight` concurrent callers for
// `turnMs`: { rate: units a second, cpuUs: this process's CPU time (user + system) a unit }.
async function timed(call, turnMs, inFlight = 1) {
  const end = performance.now() + turnMs;
  let units = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async () => {
    while (performance.now() < end) {
      const done = await call();  // not `units += await call()`: that reads `units` before
      units += done;              // the await, and concurrent callers lose each other's counts
    }
  }));
  const rate = units / ((performance.now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  return { rate, cpuUs: (cpu.user + cpu.system) / units };
}

// fanout-1000: targets each watched by 1,000 watchers, registered untimed before a turn.
const kFanout = 1000;
const kFanoutEvents = 12;  // events a turn (each on a fresh target)
let fanoutTarget = 0;
const fanoutPairs = (target) =>
  Array.from({ length: kFanout }, (_, i) => ({ watcher: `agent:f${i}:main`, target }));
async function fanoutTurn(lane, events) {
  const targets = Array.from({ length: events }, () => `agent:fan:t${fanoutTarget++}`);
  for (const target of targets) {
    if (lane === "sqlite") normal.watch(fanoutPairs(target));
    else {
      const pairs = fanoutPairs(target);
      for (let i = 0; i < pairs.length; i += 500) {
        await clients.buffered.watchMany(pairs.slice(i, i + 500));
      }
    }
  }
  const queued = normal.queuedNotices();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (const sessionKey of targets) {
    const e = { sessionKey, kind: "human_direct_message", actorType: "human", summary: "bench" };
    if (lane === "sqlite") normal.record(e);
    else await clients.buffered.recordEvents(e);
  }
  const rate = events / ((performance.now() - t0) / 1000);
  const cpu = process.cpuUsage(cpu0);
  if (lane === "sqlite" && normal.queuedNotices() - queued !== events * kFanout) {
    throw new Error(`fanout: sqlite queued ${normal.queuedNotices() - queued} notices`);
  }
  return { rate, cpuUs: (cpu.user + cpu.system) / events };
}

// watch: new pairs every call, 64 targets.
let pair = 0;
const newPair = () => {
  const n = pair++;
  return { watcher: `agent:w${Math.floor(n / 64)}:main`, target: `agent:bench:t${n % 64}` };
};
const expectCreated = (answer, n) => {
  if (answer.created !== n) throw new Error(`watch: created ${answer.created} of ${n}`);
  return n;
};

const cases = {
  "durable-single": {
    unit: "events/s",
    lanes: {
      sqlite: (t) => timed(async () => (full.record(event()), 1), t),
      daemon: (t) => timed(async () => (await clients.sync1.recordEvents(event()), 1), t),
      raw: (t) => timed(async () => (await rawSync.post(JSON.stringify(event())), 1), t),
    },
  },
  "durable-8": {
    unit: "events/s",
    lanes: {
      sqlite: (t) => timed(async () => (full.record(event()), 1), t, 8),
      daemon: (t) => timed(async () => (await clients.sync8.recordEvents(event()), 1), t, 8),
    },
  },
  "buffered-single": {
    unit: "events/s",
    lanes: {
      sqlite: (t) => timed(async () => (normal.record(event()), 1), t),
      daemon: (t) => timed(async () => (await clients.buffered.recordEvents(event()), 1), t),
      raw: (t) => timed(async () => (await raw.post(JSON.stringify(event())), 1), t),
      undici: (t) => timed(async () => (await undiciPost(JSON.stringify(event())), 1), t),
    },
  },
  "buffered-batch100": {
    unit: "events/s",
    lanes: {
      sqlite: (t) => timed(async () => normal.record(batch100()).length, t),
      daemon: (t) => timed(async () => (await clients.buffered.recordEvents(batch100())).events
        .length, t),
    },
  },
  "fanout-1000": {
    unit: "events/s",
    count: true,
    lanes: {
      sqlite: (n) => fanoutTurn("sqlite", n),
      daemon: (n) => fanoutTurn("daemon", n),
    },
  },
  watch: {
    unit: "watches/s",
    lanes: {
      sqlite: (t) => timed(async () => normal.watch(newPair()).length, t),
      "sqlite-500": (t) => timed(async () => normal.watch(Array.from({ length: 500 }, newPair))
        .length, t),
      daemon: (t) => timed(async () => {
        const w = newPair();
        const answer = await clients.buffered.watch(w.watcher, w.target);
        if (!answer.watched) throw new Error(`watch: refused ${JSON.stringify(w)}`);
        return 1;
      }, t),
      "daemon-500": (t) => timed(async () => expectCreated(
        await clients.buffered.watchMany(Array.from({ length: 500 }, newPair)), 500), t),
    },
  },
};

const results = {};
for (const [name, c] of Object.entries(cases)) {
  const turn = c.count ? kFanoutEvents : ms;
  const runs = await takeTurns(Object.keys(c.lanes), (lane, t) => c.lanes[lane](t),
    { rounds, ms: turn, warmupMs: c.count ? 2 : 1000 });
  results[name] = { unit: c.unit, lanes: {} };
  for (const [lane, xs] of Object.entries(runs)) {
    results[name].lanes[lane] = {
      median: Math.round(median(xs.map((x) => x.rate))),
      nodeCpuUsPerUnit: Math.round(median(xs.map((x) => x.cpuUs))),
      rounds: xs.map((x) => Math.round(x.rate)),
    };
  }
  process.stderr.write(`gateway_bench: ${name} done\n`);
}

// The daemon's fan-out opened its notices: the last target's watchers each hold one.
const lastTarget = `agent:fan:t${fanoutTarget - 1}`;
const peek = await clients.buffered.peekNotices("agent:f0:main");
const noticesOf = JSON.stringify(peek);
if (!noticesOf.includes(lastTarget)) throw new Error(`fanout: no notice of ${lastTarget}`);

const ratio = (c, a, b) => Number((results[c].lanes[a].median / results[c].lanes[b].median)
  .toFixed(2));
const ratios = {
  durableSingleVsSqliteFull: ratio("durable-single", "daemon", "sqlite"),
  durableSingleClientVsRaw: ratio("durable-single", "daemon", "raw"),
  durable8VsSqliteFull: ratio("durable-8", "daemon", "sqlite"),
  bufferedSingleClientVsRaw: ratio("buffered-single", "daemon", "raw"),
  bufferedSingleUndiciVsRaw: ratio("buffered-single", "undici", "raw"),
  bufferedSingleVsSqliteNormal: ratio("buffered-single", "daemon", "sqlite"),
  batch100VsSqliteNormal: ratio("buffered-batch100", "daemon", "sqlite"),
  fanout1000VsSqliteNormal: ratio("fanout-1000", "daemon", "sqlite"),
  watchOneVsSqlite: ratio("watch", "daemon", "sqlite"),
  watch500VsSqlite500: ratio("watch", "daemon-500", "sqlite-500"),
};
const report = { node: process.version, seconds: ms / 1000, rounds, cases: results, ratios };
for (const [name, r] of Object.entries(results)) {
  const lanes = Object.entries(r.lanes)
    .map(([l, x]) => `${l} ${x.median} (${x.nodeCpuUsPerUnit} us)`).join(", ");
  console.log(`${name.padEnd(18)} ${r.unit.padEnd(10)} ${lanes}`);
}
console.log(JSON.stringify(ratios, null, 2));
if (args.out) writeFileSync(args.out, `${JSON.stringify(report, null, 2)}\n`);
for (const c of Object.values(clients)) c.close();
raw.close();
rawSync.close();
await undiciPool.close();
full.close();
normal.close();
await stopDaemons();
process.exit(0);

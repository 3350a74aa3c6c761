// Watch registration and removal through the TypeScript client, as a gateway restoring its
// watches after a restart and dropping them as sub-agents finish: in lanes that take turns in
// this one process against a running daemon:
//
//   one         StatewatchClient.watch, one request per new (watcher, target) pair, awaited
//   bulk        StatewatchClient.watchMany with --batch new pairs per request (one atomic step)
//   unwatchOne  StatewatchClient.unwatch of one watched pair per request, awaited
//   unwatchBulk StatewatchClient.unwatchMany of --batch watched pairs per request
//
// A lane counts a watch only when the daemon's answer says its cursor was created (removed),
// so a lane that changed nothing measures nothing. The removal lanes take pairs the other
// lanes registered; when too few are left they register more with watchMany, off the clock.
// Each lane runs `--seconds` per round, rounds take turns, the median of the rounds is
// reported; a warm-up round first. Prints one JSON object.
//
// Usage: node bench/node/watch_lanes.mjs --url http://127.0.0.1:7411 [--seconds 3]
//        [--rounds 3] [--batch 500]
import { parseArgs } from "node:util";
import { StatewatchClient } from "../../clients/typescript/dist/esm/index.js";
import { median, takeTurns } from "./lanes.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
    batch: { type: "string", default: "500" },
  },
});
if (!args.url) throw new Error("--url is required (the daemon, e.g. http://127.0.0.1:7411)");
const seconds = Number(args.seconds);
const rounds = Number(args.rounds);
const batch = Number(args.batch);

const client = new StatewatchClient({ url: args.url, maxConnections: 1 });
const run = Date.now().toString(36);  // a rerun against the same daemon makes new pairs too
let pair = 0;
const watch = () => {
  const n = pair++;
  return { watcher: `agent:w${run}x${Math.floor(n / 64)}:main`, target: `agent:bench:t${n % 64}` };
};

// Watched pairs the removal lanes take, newest first.
const watched = [];
let offClockMs = 0;  // time a lane spent registering pairs for removal in this measurement

async function take(n) {
  if (watched.length < n) {
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) {
      const watches = Array.from({ length: batch }, watch);
      await client.watchMany(watches);
      watched.push(...watches);
    }
    offClockMs += performance.now() - t0;
  }
  return watched.splice(watched.length - n, n);  // from the end: O(n), not O(pool)
}

const lanes = {
  one: async () => {
    const w = watch();
    const answer = await client.watch(w.watcher, w.target);
    if (!answer.watched) throw new Error(`one: refused ${JSON.stringify(w)}`);
    watched.push(w);
    return 1;
  },
  bulk: async () => {
    const watches = Array.from({ length: batch }, watch);
    const answer = await client.watchMany(watches);
    if (answer.created !== batch) throw new Error(`bulk: created ${answer.created} of ${batch}`);
    watched.push(...watches);
    return batch;
  },
  unwatchOne: async () => {
    const [w] = await take(1);
    const answer = await client.unwatch(w.watcher, w.target);
    if (answer.removed !== 1) throw new Error(`unwatchOne: removed nothing of ${JSON.stringify(w)}`);
    return 1;
  },
  unwatchBulk: async () => {
    const watches = await take(batch);
    const answer = await client.unwatchMany(watches);
    if (answer.removed !== batch) {
      throw new Error(`unwatchBulk: removed ${answer.removed} of ${batch}`);
    }
    return batch;
  },
};

async function timed(call, ms) {
  offClockMs = 0;
  let watches = 0;
  const t0 = performance.now();
  while (performance.now() - offClockMs < t0 + ms) watches += await call();
  return watches / ((performance.now() - t0 - offClockMs) / 1000);
}

const results = await takeTurns(Object.keys(lanes), (lane, ms) => timed(lanes[lane], ms),
                                { rounds, ms: seconds * 1000, warmupMs: 1000 });
const summary = {};
for (const [lane, runs] of Object.entries(results)) {
  summary[lane] = { watchesPerSecond: Math.round(median(runs)), rounds: runs.map(Math.round) };
}
console.log(JSON.stringify({
  case: "watches registered (new pairs) and removed through the client, each call awaited",
  seconds, rounds, batch, lanes: summary,
  ratios: {
    bulkVsOne: Number((summary.bulk.watchesPerSecond / summary.one.watchesPerSecond).toFixed(2)),
    unwatchBulkVsOne: Number((summary.unwatchBulk.watchesPerSecond /
                              summary.unwatchOne.watchesPerSecond).toFixed(2)),
  },
}, null, 2));
client.close();

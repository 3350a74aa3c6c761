// Watch registration through the TypeScript client, as a gateway restoring its watches after
// a restart: new (watcher, target) pairs, each a new cursor, in lanes that take turns in this
// one process against a running daemon:
//
//   one   StatewatchClient.watch, one request per watch, each awaited
//   bulk  StatewatchClient.watchMany with --batch watches per request (one atomic step each)
//
// A lane counts a watch only when the daemon's answer says its cursor was created, so a lane
// that registered nothing measures nothing. Each lane runs `--seconds` per round, rounds take
// turns, the median of the rounds is reported; a warm-up round first. Prints one JSON object.
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

const lanes = {
  one: async () => {
    const w = watch();
    const answer = await client.watch(w.watcher, w.target);
    if (!answer.watched) throw new Error(`one: refused ${JSON.stringify(w)}`);
    return 1;
  },
  bulk: async () => {
    const watches = Array.from({ length: batch }, watch);
    const answer = await client.watchMany(watches);
    if (answer.created !== batch) throw new Error(`bulk: created ${answer.created} of ${batch}`);
    return batch;
  },
};

async function timed(call, ms) {
  const end = performance.now() + ms;
  let watches = 0;
  const t0 = performance.now();
  while (performance.now() < end) watches += await call();
  return watches / ((performance.now() - t0) / 1000);
}

const results = await takeTurns(Object.keys(lanes), (lane, ms) => timed(lanes[lane], ms),
                                { rounds, ms: seconds * 1000, warmupMs: 1000 });
const summary = {};
for (const [lane, runs] of Object.entries(results)) {
  summary[lane] = { watchesPerSecond: Math.round(median(runs)), rounds: runs.map(Math.round) };
}
console.log(JSON.stringify({
  case: "new watches registered through the client, each awaited",
  seconds, rounds, batch, lanes: summary,
  ratios: {
    bulkVsOne: Number((summary.bulk.watchesPerSecond / summary.one.watchesPerSecond).toFixed(2)),
  },
}, null, 2));
client.close();

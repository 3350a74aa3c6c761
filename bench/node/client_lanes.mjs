// What the TypeScript client costs a Node gateway: single events recorded one at a time
// (each awaited) against a running daemon, in lanes that take turns in this one process:
//
//   raw     node:http on one kept-alive socket, the request built by hand — the wire's speed
//   client  StatewatchClient.recordEvents (clients/typescript, built: npm run build)
//   fetch   global fetch with the same request (the client's first transport)
//
// Every lane sends the same bytes the client sends (the JSON body, Content-Type, Accept and a
// fresh X-Request-Id per event), so the ratios are the client's own cost, not the daemon's.
// Each lane runs `--seconds` per round, rounds take turns, and the median of the rounds is
// reported; a warm-up round first. Prints one JSON object.
//
// Usage: node bench/node/client_lanes.mjs --url http://127.0.0.1:7411 [--seconds 3] [--rounds 3]
import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";
import { StatewatchClient } from "../../clients/typescript/dist/esm/index.js";
import { eventMaker, median, rawPoster, takeTurns } from "./lanes.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    seconds: { type: "string", default: "3" },
    rounds: { type: "string", default: "3" },
  },
});
if (!args.url) throw new Error("--url is required (the daemon, e.g. http://127.0.0.1:7411)");
const url = args.url.replace(/\/+$/, "");
const seconds = Number(args.seconds);
const rounds = Number(args.rounds);

const event = eventMaker();
const headers = () => ({
  Accept: "application/json",
  "Content-Type": "application/json",
  "X-Request-Id": randomUUID(),
});

const raw = rawPoster(url, "/v1/events");

const client = new StatewatchClient({ url, maxConnections: 1 });
const lanes = {
  raw: () => raw.post(JSON.stringify(event())),
  client: () => client.recordEvents(event()),
  fetch: async () => {
    const response = await fetch(`${url}/v1/events`, {
      method: "POST", headers: headers(), body: JSON.stringify(event()),
    });
    if (response.status !== 200) throw new Error(`fetch: HTTP ${response.status}`);
    return response.json();
  },
};

async function run(call, ms) {
  const end = performance.now() + ms;
  let n = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  while (performance.now() < end) {
    await call();
    n++;
  }
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  return { perSecond: n / wall, nodeCpuUsPerCall: (cpu.user + cpu.system) / n };
}

const results = await takeTurns(Object.keys(lanes), (lane, ms) => run(lanes[lane], ms),
                                { rounds, ms: seconds * 1000, warmupMs: 2000 });
const summary = {};
for (const [lane, runs] of Object.entries(results)) {
  summary[lane] = {
    eventsPerSecond: Math.round(median(runs.map((x) => x.perSecond))),
    nodeCpuUsPerCall: Math.round(median(runs.map((x) => x.nodeCpuUsPerCall))),
    rounds: runs.map((x) => Math.round(x.perSecond)),
  };
}
const ratio = (a, b) => Number((summary[a].eventsPerSecond / summary[b].eventsPerSecond).toFixed(3));
console.log(JSON.stringify({
  case: "single buffered event, awaited, one at a time",
  seconds, rounds, lanes: summary,
  ratios: { clientVsRaw: ratio("client", "raw"), fetchVsRaw: ratio("fetch", "raw") },
}, null, 2));
client.close();
raw.close();

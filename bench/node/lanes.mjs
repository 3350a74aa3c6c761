// What the Node benchmarks share: lanes that take turns in one process, so that a lane is
// never measured only while the machine is busy or quiet, and the median of the rounds.
import { randomUUID } from "node:crypto";
import { Agent, request } from "node:http";

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Runs `measure(lane, ms)` for every lane once for `warmupMs` (not kept), then `rounds` times
// for `ms`, the lanes taking turns within each round. Returns { lane: [result per round] }.
export async function takeTurns(lanes, measure, { rounds, ms, warmupMs }) {
  const results = Object.fromEntries(lanes.map((lane) => [lane, []]));
  for (const lane of lanes) await measure(lane, warmupMs);
  for (let r = 0; r < rounds; r++) {
    for (const lane of lanes) results[lane].push(await measure(lane, ms));
  }
  return results;
}

// The headers the TypeScript client sends with a POST: Accept, Content-Type and a fresh
// X-Request-Id (its retries' key).
export function clientHeaders() {
  return { Accept: "application/json", "Content-Type": "application/json",
    "X-Request-Id": randomUUID() };
}

// The wire's speed: POSTs of `path` built by hand, on one kept-alive node:http socket, with
// the headers the TypeScript client sends (Accept, Content-Type, a fresh X-Request-Id).
// `post(body)` resolves to the parsed answer and rejects on any status but 200.
export function rawPoster(url, path) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const post = (body) => new Promise((resolve, reject) => {
    const headers = clientHeaders();
    const req = request(`${url}${path}`, { method: "POST", headers, agent }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        if (res.statusCode !== 200) reject(new Error(`raw: HTTP ${res.statusCode} ${text}`));
        else resolve(JSON.parse(text));
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
  return { post, close: () => agent.destroy() };
}

// The benchmarks' event, the C++ benchmarks' too: a human message, to one of 100 sessions in
// turn (nobody watches them). Returns a function that makes the next one.
export function eventMaker() {
  let sequence = 0;
  return () => ({
    sessionKey: `agent:bench:s${sequence++ % 100}`,
    kind: "human_direct_message",
    actorType: "human",
    summary: "bench",
  });
}

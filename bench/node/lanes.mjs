// What the Node benchmarks share: lanes that take turns in one process, so that a lane is
// never measured only while the machine is busy or quiet, and the median of the rounds.

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

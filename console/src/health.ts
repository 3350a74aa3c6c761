// Health: GET /healthz, a few figures of GET /metrics, and in cluster mode this node's
// partition (GET /v1/cluster/status: role, epoch, stream position, checkpoint lag).
import { ApiError, get } from "./api.js";
import type { ClusterStatus, Health, Pulse } from "./api.js";
import { byId, el, fill, table } from "./dom.js";

const FIGURES: Array<[string, string]> = [
  ["statewatch_sessions", "sessions"],
  ["statewatch_journal_rows", "journal rows"],
  ["statewatch_cursors", "cursors"],
  ["statewatch_pending_notices", "pending notices"],
  ["statewatch_events_recorded_total", "events recorded"],
  ["statewatch_wakes_sent_total", "wakes sent"],
  ["statewatch_runs_active", "runs active"],
  ["statewatch_websocket_clients", "WebSocket clients"],
  ["statewatch_writes_refused_total", "writes refused"],
  ["statewatch_rocksdb_bytes_on_disk", "bytes on disk"],
];

// The sum of every sample of `name` (labels summed), or undefined when absent.
function metric(text: string, name: string): number | undefined {
  let sum: number | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!Number.isNaN(value)) sum = (sum ?? 0) + value;
  }
  return sum;
}

export async function refreshHealth(pulse: Pulse | null): Promise<void> {
  const health = await get<Health>("/healthz");
  const badge = byId("health-badge");
  badge.className = `badge health-${health.status}`;
  fill(badge, health.status);
  const metrics = await get<string>("/metrics", { text: true });
  fill(
    byId("health"),
    el(
      "dl",
      {},
      el("dt", {}, "status"),
      el("dd", {}, health.status + (health.writes ? ` (writes ${health.writes})` : "")),
      health.writeError ? el("dt", {}, "write error") : null,
      health.writeError ? el("dd", {}, health.writeError) : null,
      el("dt", {}, "version"),
      el("dd", {}, health.version),
      el("dt", {}, "last sequence"),
      el("dd", {}, pulse ? String(pulse.lastSequence) : "—"),
      ...FIGURES.flatMap(([name, label]) => {
        const v = metric(metrics, name);
        return v === undefined ? [] : [el("dt", {}, label), el("dd", {}, String(v))];
      }),
    ),
  );
  await refreshCluster(pulse);
}

async function refreshCluster(pulse: Pulse | null): Promise<void> {
  const box = byId("cluster");
  if (!pulse || !pulse.cluster) {
    fill(box, el("p", { className: "muted" }, "Single node (not serve --cluster)."));
    return;
  }
  try {
    const s = await get<ClusterStatus>("/v1/cluster/status");
    fill(
      box,
      table(
        ["partition", "role", "epoch", "position", "checkpoint lag"],
        [[s.partition, s.role + (s.movedReason ? ` (${s.movedReason})` : ""), s.epoch, s.position, s.position - s.checkpointPosition]],
      ),
    );
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      fill(box, el("p", { className: "muted" }, "The cluster status needs a token with the admin scope."));
      return;
    }
    throw e;
  }
}

// The session tree: agents, then sessions, then the children each spawned (the registry's
// parentSessionKey), to any depth. A session whose parent is not registered is a root.
import type { ConsoleSession } from "./api.js";
import { age, el, fill, time } from "./dom.js";

export interface TreeHandlers {
  select(session: ConsoleSession): void;
}

function nodeId(agentId: string, key: string): string {
  return `${agentId}\u0000${key}`;
}

// The parent of `s` among `byKey`: an agent-scoped parent key names its own agent; a bare
// one is looked for in the child's agent first.
function parentOf(s: ConsoleSession, byId: Map<string, ConsoleSession>): ConsoleSession | undefined {
  const parent = s.parentSessionKey;
  if (parent === undefined || parent === s.sessionKey) return undefined;
  const scoped = /^agent:([^:]+):/i.exec(parent);
  const agent = scoped ? scoped[1].toLowerCase() : s.agentId;
  return byId.get(nodeId(agent, parent));
}

function row(s: ConsoleSession, selected: string | null, now: number, h: TreeHandlers): HTMLElement {
  const id = nodeId(s.agentId, s.sessionKey);
  const button = el(
    "button",
    { className: "session" + (id === selected ? " selected" : ""), type: "button", title: s.sessionKey },
    s.displayName ?? s.label ?? s.sessionKey,
  );
  button.addEventListener("click", () => h.select(s));
  const last = s.lastEvent;
  return el(
    "div",
    { className: "row" },
    button,
    el("span", { className: "badge version", title: "state version" }, `v${s.stateVersion}`),
    last
      ? el(
          "span",
          { className: "last", title: `#${last.sequence} at ${time(last.occurredAt)}` },
          `${last.kind} · ${age(last.occurredAt, now)}`,
        )
      : el("span", { className: "last muted" }, "no retained event"),
    s.run
      ? el("span", { className: `badge run run-${s.run.status}`, title: `${s.run.kind} run ${s.run.runId}` }, s.run.status)
      : null,
    el(
      "span",
      { className: "badge visibility", title: "what its session tools may see" },
      s.visibility + (s.sandboxed ? " · sandboxed" : ""),
    ),
    s.displayName || s.label ? el("span", { className: "key muted" }, s.sessionKey) : null,
  );
}

export function renderTree(
  container: HTMLElement,
  sessions: ConsoleSession[],
  truncated: boolean,
  selected: string | null,
  now: number,
  h: TreeHandlers,
): void {
  const byId = new Map<string, ConsoleSession>();
  for (const s of sessions) byId.set(nodeId(s.agentId, s.sessionKey), s);
  const children = new Map<string, ConsoleSession[]>();
  const roots = new Map<string, ConsoleSession[]>(); // by agent
  for (const s of sessions) {
    const parent = parentOf(s, byId);
    if (parent) {
      const id = nodeId(parent.agentId, parent.sessionKey);
      children.set(id, [...(children.get(id) ?? []), s]);
    } else {
      roots.set(s.agentId, [...(roots.get(s.agentId) ?? []), s]);
    }
  }
  // A cycle in parent keys would hide its sessions from every root: `seen` shows each once.
  const seen = new Set<string>();
  const branch = (list: ConsoleSession[]): HTMLElement =>
    el(
      "ul",
      {},
      ...list.map((s) => {
        const id = nodeId(s.agentId, s.sessionKey);
        seen.add(id);
        const kids = (children.get(id) ?? []).filter((c) => !seen.has(nodeId(c.agentId, c.sessionKey)));
        return el(
          "li",
          { data: { sessionKey: s.sessionKey, agentId: s.agentId } },
          row(s, selected, now, h),
          kids.length > 0 ? branch(kids) : null,
        );
      }),
    );
  const agents = [...roots.keys()].sort();
  const tree = el(
    "ul",
    { className: "agents" },
    ...agents.map((agent) =>
      el("li", { className: "agent" }, el("div", { className: "agent-name" }, `agent ${agent}`), branch(roots.get(agent) ?? [])),
    ),
  );
  const orphans = sessions.filter((s) => !seen.has(nodeId(s.agentId, s.sessionKey)));
  fill(
    container,
    sessions.length === 0 ? el("p", { className: "muted" }, "No registered session yet (PUT /v1/sessions/{key}).") : tree,
    orphans.length > 0 ? el("p", { className: "muted" }, `${orphans.length} sessions in a parent cycle:`) : null,
    orphans.length > 0 ? branch(orphans) : null,
    truncated ? el("p", { className: "muted" }, "More sessions exist than the listing's limit.") : null,
  );
}

export { nodeId };

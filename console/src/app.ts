// The operator console's entry point (docs/console.md): the token form, the poll that keeps
// every view live, and the session selection.
//
// Live updates poll GET /v1/console/pulse once a second (the engine's last sequence and its
// wake and notice counters: one read, a few dozen bytes) and re-read the views only when it
// moved. A browser cannot put a bearer token on a WebSocket or an EventSource, and a token in
// a URL ends up in logs and history; polling one cheap route keeps the token in a header and
// needs no long-lived connection per tab.
import { ApiError, get, saveToken, savedToken } from "./api.js";
import type { ConsoleSession, Pulse } from "./api.js";
import { Detail } from "./detail.js";
import { byId, fill } from "./dom.js";
import { refreshHealth } from "./health.js";
import { nodeId, renderTree } from "./tree.js";

const POLL_MS = 1000;
const HEALTH_EVERY = 5; // polls

let pulse: Pulse | null = null;
let polls = 0;
let running = false;
let timer: number | undefined;
let selected: string | null = null;
let sessions: ConsoleSession[] = [];
let truncated = false;

function status(text: string, error = false): void {
  const line = byId("status");
  line.className = error ? "error" : "";
  fill(line, text);
}

function report(e: unknown): void {
  if (e instanceof ApiError && e.status === 401) {
    const none = savedToken() === "";
    stop();
    saveToken(null);
    showTokenForm(true);
    status(none ? "This daemon requires a token." : `The daemon refused the token: ${e.message}`, !none);
    return;
  }
  status(e instanceof Error ? e.message : String(e), true);
}

const detail = new Detail(report);

function drawTree(): void {
  renderTree(byId("tree"), sessions, truncated, selected, Date.now(), {
    select(s) {
      selected = nodeId(s.agentId, s.sessionKey);
      drawTree();
      void detail.show(s.sessionKey, s.agentId).catch(report);
    },
  });
}

async function refreshTree(): Promise<void> {
  const answer = await get<{ sessions: ConsoleSession[]; truncated: boolean }>("/v1/console/sessions");
  sessions = answer.sessions;
  truncated = answer.truncated;
  drawTree();
}

async function poll(): Promise<void> {
  const next = await get<Pulse>("/v1/console/pulse");
  const moved =
    pulse === null ||
    next.lastSequence !== pulse.lastSequence ||
    next.wakesSent !== pulse.wakesSent ||
    next.noticesOpened !== pulse.noticesOpened ||
    next.pendingNotices !== pulse.pendingNotices;
  const first = pulse === null;
  pulse = next;
  if (moved) {
    await refreshTree();
    if (!first) await detail.refresh();
  }
  if (polls++ % HEALTH_EVERY === 0 || moved) await refreshHealth(pulse);
  fill(byId("live"), `live · sequence ${next.lastSequence} · updated ${new Date().toISOString().slice(11, 19)}Z`);
  status("");
}

// One poll at a time: the next is scheduled when this one has finished.
async function tick(): Promise<void> {
  if (!running) return;
  try {
    await poll();
  } catch (e) {
    report(e);
  }
  if (running) timer = window.setTimeout(() => void tick(), POLL_MS);
}

function start(): void {
  stop();
  showTokenForm(false);
  running = true;
  pulse = null;
  polls = 0;
  void tick();
}

function stop(): void {
  running = false;
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
}

function showTokenForm(show: boolean): void {
  byId("token-form").hidden = !show;
  byId("signed-in").hidden = show;
  byId("main").hidden = show;
}

function init(): void {
  byId("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>("token");
    saveToken(input.value.trim()); // "" connects to a daemon that needs no token
    input.value = "";
    start();
  });
  byId("forget").addEventListener("click", () => {
    stop();
    saveToken(null);
    showTokenForm(true);
    status("Token forgotten.");
  });
  if (savedToken() !== null) return start();
  // A daemon started without a token (loopback) is connected to at once: no form to click
  // through. One that requires a token shows the form.
  get<{ tokenRequired: boolean }>("/v1/console/access")
    .then((access) => {
      if (access.tokenRequired) return showTokenForm(true);
      saveToken("");
      start();
    })
    .catch((e: unknown) => {
      showTokenForm(true);
      report(e);
    });
}

init();

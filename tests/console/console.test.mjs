// The operator console (GET /console) in Debian's Chromium, driven by playwright-core,
// against a real `statewatch serve` with a token and seeded data: the tree renders the spawned
// children; a watcher's pending notice shows its exact text; an event recorded through the
// API appears within 2 s without a reload; the time slider at an earlier sequence shows the
// earlier state; a summary holding <script> renders as text; a request without the token is
// refused; a pruned history shows as a gap (a second daemon, without a token, with a row cap);
// the page logs no console error. Saves the screenshot docs/console.png.
//
// Env: STATEWATCH_BIN (the binary), SCREENSHOT (where the PNG goes; unset: none).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { chromium } from "playwright-core";

const BIN = process.env.STATEWATCH_BIN;
const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "console-test-token-8c41";
const WAIT_MS = 10000; // the bound of every wait but the 2 s live one

const COORDINATOR = "agent:main:main";
const RESEARCHER = "agent:main:subagent:researcher";
const FETCHER = "agent:main:subagent:researcher:subagent:fetcher";
const OPS = "agent:ops:main";
const XSS = "<script>window.__pwned = 1</script> summary with markup";

const dir = mkdtempSync(join(tmpdir(), "statewatch-console-test-"));
let daemon;
let base = "";
let small; // the second daemon: no token, a row cap of 3
let context;
let page;
const consoleErrors = [];

// ---- the daemon ----------------------------------------------------------------------------

// Starts `statewatch serve` on a free loopback port with `args`; resolves with the process
// and its base URL.
async function serve(dataDir, args) {
  assert.ok(BIN, "STATEWATCH_BIN names the statewatch binary");
  const child = spawn(
    BIN,
    ["--data", dataDir, "--durability", "buffered", ...args],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout });
  const first = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${BIN} did not start within 10 s`)), WAIT_MS);
    lines.once("line", (line) => { clearTimeout(timer); resolve(line); });
    child.once("exit", (code) => { clearTimeout(timer); reject(new Error(`${BIN} exited with ${code}`)); });
    child.once("error", (e) => { clearTimeout(timer); reject(new Error(`${BIN} could not start: ${e.message}`)); });
  });
  return { child, base: `http://127.0.0.1:${JSON.parse(first).port}` };
}

async function stop(child) {
  if (!child || child.exitCode !== null) return;
  await new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), WAIT_MS);
    child.once("exit", () => { clearTimeout(timer); resolve(); });
    child.kill("SIGTERM");
  });
}

async function startDaemon() {
  writeFileSync(join(dir, "token"), TOKEN + "\n", { mode: 0o600 });
  ({ child: daemon, base } = await serve(join(dir, "data"), [
    "--token-file", join(dir, "token"), "serve", "--listen", "127.0.0.1:0", "--log-level", "warn"]));
}

async function stopDaemon() {
  await stop(daemon);
}

async function api(method, path, body, headers = {}) {
  const response = await fetch(base + path, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT_MS),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `${method} ${path}: ${text}`);
  return JSON.parse(text);
}

const event = (sessionKey, kind, actorType, extra = {}) =>
  api("POST", "/v1/events", { sessionKey, kind, actorType, ...extra }).then((r) => r.events[0].sequence);

// A coordinator with a researcher child and its fetcher grandchild, a run spawned with the
// tool, and a watcher of another agent (ops) with a pending notice on the researcher.
async function seed() {
  await api("PUT", `/v1/sessions/${COORDINATOR}`, { kind: "main", label: "coordinator", channel: "telegram" });
  await api("PUT", `/v1/sessions/${RESEARCHER}`, { parentSessionKey: COORDINATOR, label: "researcher" });
  await api("PUT", `/v1/sessions/${FETCHER}`, { parentSessionKey: RESEARCHER, sandboxed: true });
  await api("PUT", `/v1/sessions/${OPS}`, { kind: "main", label: "ops on-call" });
  await api("POST", "/v1/watches", { watcher: OPS, target: RESEARCHER });
  const first = await event(RESEARCHER, "child_spawned", "agent", {
    actorId: COORDINATOR, runId: "r1", summary: "spawned by the coordinator", watchers: [COORDINATOR],
  });
  await event(FETCHER, "child_spawned", "agent", { actorId: RESEARCHER, runId: "f1", summary: "fetching sources" });
  await event(RESEARCHER, "human_direct_message", "human", { summary: XSS, payload: { channel: "telegram" } });
  const spawned = await api("POST", "/v1/tools/sessions_spawn", { task: "summarize the findings", label: "writer" },
                            { "X-Session-Key": COORDINATOR });
  return { first, spawnedChild: spawned.childSessionKey };
}

async function noticeFor(watcher, target) {
  const { notices } = await api("GET", `/v1/notices?watcher=${encodeURIComponent(watcher)}`);
  const notice = notices.find((n) => n.targetSessionKey === target);
  assert.ok(notice, `${watcher} has a pending notice on ${target}`);
  return notice.text;
}

// ---- the browser ---------------------------------------------------------------------------

before(async () => {
  await startDaemon();
  context = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), "statewatch-chromium-")), {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: { width: 1360, height: 820 },
    timeout: WAIT_MS,
  });
  context.setDefaultTimeout(WAIT_MS);
  page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
});

after(async () => {
  if (context) await context.close();
  await stopDaemon();
  await stop(small);
  rmSync(dir, { recursive: true, force: true });
});

test("the console, live, against a real daemon", async (t) => {
  const { first, spawnedChild } = await seed();

  await t.test("a request without the token is refused; the page itself is public", async () => {
    const refused = await fetch(`${base}/v1/console/sessions`, { signal: AbortSignal.timeout(WAIT_MS) });
    assert.equal(refused.status, 401);
    assert.equal((await refused.json()).error.code, "unauthorized");
    const response = await page.goto(`${base}/console`);
    assert.equal(response.status(), 200);
    const csp = response.headers()["content-security-policy"];
    assert.match(csp, /script-src 'self'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(response.headers()["x-content-type-options"], "nosniff");
  });

  await t.test("the token typed in the page is kept in sessionStorage, never in the URL", async () => {
    await page.fill("#token", TOKEN);
    await page.click("#connect");
    await page.locator(`li[data-session-key="${COORDINATOR}"]`).first().waitFor();
    assert.equal(new URL(page.url()).search, "");
    assert.equal(await page.evaluate(() => sessionStorage.getItem("statewatch.console.token")), TOKEN);
  });

  await t.test("the tree renders the spawned children, recursively", async () => {
    const nested = page.locator(
      `li[data-session-key="${COORDINATOR}"] li[data-session-key="${RESEARCHER}"] li[data-session-key="${FETCHER}"]`);
    await nested.waitFor();
    await page.locator(`li[data-session-key="${COORDINATOR}"] li[data-session-key="${spawnedChild}"]`).waitFor();
    const run = page.locator(`li[data-session-key="${spawnedChild}"] .run`);
    assert.equal(await run.textContent(), "running");
    const ops = page.locator(`li.agent li[data-session-key="${OPS}"]`);
    await ops.waitFor();
  });

  await t.test("a watcher's pending notice shows its exact text", async () => {
    const expected = await noticeFor(OPS, RESEARCHER);
    await page.locator(`li[data-session-key="${RESEARCHER}"] > .row button.session`).click();
    const cell = page.locator("#watchers tr", { hasText: OPS }).locator("pre.notice-text");
    await cell.waitFor();
    assert.equal(await cell.textContent(), expected);
  });

  await t.test("a summary holding <script> renders as text", async () => {
    const cell = page.locator("#timeline td.summary", { hasText: "summary with markup" });
    await cell.waitFor();
    assert.equal(await cell.textContent(), XSS);
    assert.equal(await page.locator("#timeline script").count(), 0);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
  });

  await t.test("an event recorded through the API appears within 2 s, without a reload", async () => {
    await page.evaluate(() => { window.__sameDocument = true; });
    await api("POST", "/v1/notices/drain", { watcher: OPS });
    const seq = await event(RESEARCHER, "human_direct_message", "human", { summary: "live: a new message" });
    const expected = await noticeFor(OPS, RESEARCHER); // reopened since the drain
    await page.locator(`#timeline tr[data-sequence="${seq}"]`).waitFor({ timeout: 2000 });
    await page.locator("#watchers pre.notice-text", { hasText: expected }).waitFor({ timeout: 2000 });
    assert.equal(await page.evaluate(() => window.__sameDocument), true);
  });

  await t.test("the slider at an earlier sequence shows the earlier state", async () => {
    await page.locator("#asof .asof-version").waitFor();
    await page.evaluate(() => {
      const slider = document.getElementById("slider");
      slider.value = "0";
      slider.dispatchEvent(new Event("input"));
    });
    await page.locator("#asof .asof-head", { hasText: `As of #${first}:` }).waitFor();
    assert.equal(await page.locator("#asof .asof-version").textContent(), `state version ${first}`);
    await page.evaluate(() => {
      const slider = document.getElementById("slider");
      slider.value = slider.max;
      slider.dispatchEvent(new Event("input"));
    });
    await page.locator("#asof .asof-head", { hasText: `As of #${first}:` }).waitFor({ state: "detached" });
  });

  await t.test("health shows /healthz and the metrics", async () => {
    await page.locator("#health-badge", { hasText: "ok" }).waitFor();
    await page.locator("#health dt", { hasText: "events recorded" }).waitFor();
  });

  if (process.env.SCREENSHOT) {
    await page.locator(`li[data-session-key="${RESEARCHER}"] > .row button.session`).click();
    await page.locator("#watchers pre.notice-text").first().waitFor();
    await page.locator("#asof .asof-version").waitFor();
    await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
  }

  await t.test("a pruned history shows as a gap; a daemon without a token needs none", async () => {
    let smallBase;
    ({ child: small, base: smallBase } = await serve(join(dir, "small"), [
      "serve", "--listen", "127.0.0.1:0", "--max-rows", "3", "--log-level", "warn"]));
    const chatty = "agent:main:chatty";
    const put = await fetch(`${smallBase}/v1/sessions/${chatty}`, {
      method: "PUT", headers: { "Content-Type": "application/json" }, body: "{}", signal: AbortSignal.timeout(WAIT_MS) });
    assert.equal(put.status, 200);
    const events = [1, 2, 3, 4, 5, 6].map((i) => ({ sessionKey: chatty, kind: "human_direct_message", actorType: "human", summary: `message ${i}` }));
    const recorded = await fetch(`${smallBase}/v1/events`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(events), signal: AbortSignal.timeout(WAIT_MS) });
    assert.equal(recorded.status, 200);
    await page.goto(`${smallBase}/console`);
    // No form: the page connects at once to a daemon that needs no token.
    await page.locator(`li[data-session-key="${chatty}"]`).first().waitFor();
    assert.equal(await page.locator("#token-form").isHidden(), true);
    await page.locator(`li[data-session-key="${chatty}"] > .row button.session`).click();
    const gap = page.locator("#timeline .history-gap");
    await gap.waitFor();
    assert.match(await gap.textContent(), /^History gap: events before #\d+ were pruned/);
    await page.locator("#timeline td.summary", { hasText: "message 6" }).waitFor();
    assert.equal(await page.locator("#timeline td.summary", { hasText: "message 1" }).count(), 0);
  });

  await t.test("the page logged no console error", () => {
    assert.deepEqual(consoleErrors, []);
  });
});

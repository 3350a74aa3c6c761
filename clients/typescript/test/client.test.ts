// statewatch-client against a real daemon: typed calls for every operation of the OpenAPI
// document, the error class, the session tools, and the wake and delivery streams across a
// daemon restart.
import assert from "node:assert/strict";
import { createServer, type Server } from "node:http";
import { type AddressInfo } from "node:net";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { StatewatchClient, StatewatchError, type Delivery, type EventInput, type Wake } from "../src/index.js";
import { Daemon, START_MS, next, nextMatching } from "./daemon.js";

const PARENT = "agent:main:main";
const CHILD = "agent:main:subagent:a1";

describe("statewatch-client", () => {
  const daemon = new Daemon();
  let sw: StatewatchClient;

  before(async () => {
    await daemon.start();
    sw = new StatewatchClient({ url: daemon.url });
  });
  after(async () => daemon.close());

  test("health carries the version", async () => {
    const health = await sw.health();
    assert.equal(health.status, "ok");
    assert.match(health.version, /^\d+\.\d+\.\d+/);
  });

  test("a daemon whose storage takes writes is ready", async () => {
    const ready = await sw.ready();
    assert.equal(ready.status, "ready");
    assert.equal(ready.version, (await sw.health()).version);
  });

  test("a spawned child's human message becomes one notice, drained once", async () => {
    await sw.upsertSession(PARENT, { kind: "main", channel: "telegram" });
    await sw.upsertSession(CHILD, { parentSessionKey: PARENT });
    const spawned = await sw.recordEvents({
      sessionKey: CHILD, kind: "child_spawned", actorType: "agent", actorId: PARENT,
      runId: "a1", dedupeKey: "child-spawned:a1", watchers: [PARENT],
    });
    const seed = spawned.events[0].sequence;
    await sw.recordEvents([
      { sessionKey: CHILD, kind: "human_direct_message", actorType: "human", summary: "human message via telegram" },
      { sessionKey: CHILD, kind: "human_direct_message", actorType: "human", summary: "human message via telegram" },
    ]);
    const { notices } = await sw.peekNotices(PARENT);
    assert.equal(notices.length, 1);
    assert.equal(
      notices[0].text,
      `Session "${CHILD}" changed (other actor). Reconcile before acting: session_status sessionKey "${CHILD}" changesSince ${seed}.`,
    );
    // The first drain acknowledges up to the pinned mark (the first message); the second
    // message arrived after it, so exactly one notice reopens for it; then nothing is left.
    assert.equal((await sw.drainNotices(PARENT)).notices.length, 1);
    assert.equal((await sw.drainNotices(PARENT)).notices.length, 1);
    assert.equal((await sw.drainNotices(PARENT)).notices.length, 0);
    const cursor = await sw.cursor(PARENT, CHILD);
    assert.ok(cursor.lastSeen > seed);
    const state = await sw.sessionState(CHILD, { changesSince: seed });
    assert.equal(state.stateChanges?.events.length, 2);
    assert.equal(state.stateChanges?.historyGap, false);
    const status = await sw.as(PARENT).sessionStatus({ sessionKey: CHILD, changesSince: seed });
    assert.equal(status.stateVersion, state.stateVersion);
    const dup = await sw.recordEvents({ sessionKey: CHILD, kind: "child_spawned", actorType: "agent", dedupeKey: "child-spawned:a1" });
    assert.equal(dup.events[0].deduplicated, true);
  });

  test("errors are one class with code, message and HTTP status", async () => {
    await assert.rejects(
      sw.recordEvents({ sessionKey: PARENT, kind: "agent_message", actorType: "human" }),
      (e: unknown) => e instanceof StatewatchError && e.status === 400 && e.code === "invalid_argument" &&
        e.message.includes("valid kinds: human_direct_message"),
    );
    await assert.rejects(
      sw.as(PARENT).sessionStatus({ changesSince: -1 }),
      (e: unknown) => e instanceof StatewatchError && e.status === 400 &&
        e.message === "changesSince must be a non-negative integer",
    );
    await assert.rejects(
      sw.as(PARENT).sessionStatus({ sessionKey: "agent:main:nope" }),
      (e: unknown) => e instanceof StatewatchError && e.status === 403 && e.code === "forbidden" &&
        e.message === "Session status visibility is restricted to the current session tree (tools.sessions.visibility=tree).",
    );
    await assert.rejects(
      new StatewatchClient({ url: "http://127.0.0.1:1" }).health(),
      (e: unknown) => e instanceof StatewatchError && e.code === "network" && e.status === 0,
    );
  });

  test("sessions_send waits for the reply and stops waiting on abort", async () => {
    const deliveries = sw.deliveries({ agentId: "main" });
    const controller = new AbortController();
    const waiting = sw.as(PARENT).sessionsSend(
      { sessionKey: CHILD, message: "status?", timeoutSeconds: 30 },
      { signal: controller.signal },
    );
    const delivery = await next(deliveries);
    assert.equal(delivery.type, "message");
    assert.equal(delivery.text.includes("status?"), true);
    assert.equal(delivery.provenance.isUser, false);
    assert.equal(delivery.marker?.includes(`sourceSession=${PARENT}`), true);
    assert.equal(delivery.prompt?.startsWith("[Inter-session message]"), true);
    await sw.ackDelivery(delivery.deliveryId);
    controller.abort();
    await assert.rejects(waiting, (e: unknown) => e instanceof StatewatchError && e.code === "aborted");

    const answered = sw.as(PARENT).sessionsSend({ sessionKey: CHILD, message: "again?", timeoutSeconds: 30 });
    const second = await next(deliveries);
    await sw.ackDelivery(second.deliveryId);
    await sw.replyRun(second.runId, "all good");
    const answer = await answered;
    assert.equal(answer.status, "ok");
    assert.equal(answer.reply, "all good");
    await deliveries.return(undefined);
  });

  test("every tool has a typed call", async () => {
    const me = sw.as(PARENT);
    const listed = await me.sessionsList({ limit: 10 });
    assert.ok(listed.count >= 2);
    assert.equal(listed.hasMore, false);
    assert.equal(listed.limitApplied, 10);
    const card = await me.sessionStatus();
    assert.equal(card.modelOverride, false);
    assert.equal(typeof card.usage.source, "string");
    // Earlier tests' inter-session messages are in the transcript too (with their provenance).
    const before = (await me.sessionsHistory({ sessionKey: PARENT })).messages.length;
    await sw.appendMessages(PARENT, [{ role: "user", content: "hello" }]);
    const history = (await me.sessionsHistory({ sessionKey: PARENT })).messages;
    assert.equal(history.length, before + 1);
    assert.equal(history[history.length - 1].content, "hello");
    const spawned = await me.sessionsSpawn({ task: "look around", label: "scout" });
    assert.equal(spawned.status, "accepted");
    assert.equal((await me.subagents({ action: "list" })).status, "ok");
    assert.equal((await me.sessionsYield()).status, "yielded");
    await sw.finishRun(spawned.runId, "ok", "done");
  });

  test("a wake arrives, and after a daemon restart pending notices wake the watcher again", async () => {
    const controller = new AbortController();
    const wakes = sw.wakes({ watcher: PARENT, signal: controller.signal, initialDelayMs: 50, maxDelayMs: 200 });
    const firstWake = next(wakes);
    await new Promise((r) => setTimeout(r, 200));  // the stream connects
    // Past the 20 s wake window of the earlier tests' wakes, so this one fires at once.
    await sw.setClock((await sw.clock()).now + 60_000);
    await sw.recordEvents({ sessionKey: CHILD, kind: "human_direct_message", actorType: "human" });
    const wake: Wake = await firstWake;
    assert.equal(wake.watcher, PARENT);
    assert.match(wake.reason, /^session-state:/);

    await daemon.stop();
    await daemon.start(START_MS + 120_000);
    const again = await next(wakes);
    assert.equal(again.reason, "reconnected");
    controller.abort();
  });

  test("an unacknowledged delivery is offered again after a reconnect", async () => {
    const controller = new AbortController();
    const deliveries = sw.deliveries({ signal: controller.signal, initialDelayMs: 50, maxDelayMs: 200 });
    const sent = await sw.as(PARENT).sessionsSend({ sessionKey: CHILD, message: "fire and forget", timeoutSeconds: 0 });
    // Earlier tests left other deliveries unacknowledged (the spawned task): skip them.
    const first: Delivery = await nextMatching(deliveries, (d) => d.runId === sent.runId);
    await daemon.stop();
    await daemon.start(START_MS + 180_000);
    const offered = await nextMatching(deliveries, (d) => d.runId === sent.runId);
    assert.equal(offered.deliveryId, first.deliveryId);
    await sw.ackDelivery(offered.deliveryId);
    controller.abort();
  });

  test("the day-2 calls", async () => {
    const exported = await sw.exportEvents();
    assert.ok(exported.some((e) => e.kind === "child_spawned"));
    assert.equal((await sw.verify()).ok, true);
    assert.ok((await sw.backup(`${daemon.dir}/backup`)).path.endsWith("/backup"));
    assert.ok((await sw.stats()).rows >= 3);
    assert.match(await sw.metrics(), /statewatch_build_info\{version=/);
  });

  test("the client has a call for every operation of the OpenAPI document", async () => {
    // operationId -> the client call that covers it.
    const covered: Record<string, string> = {
      session_status: "as().sessionStatus", sessions_list: "as().sessionsList",
      sessions_history: "as().sessionsHistory", sessions_send: "as().sessionsSend",
      sessions_spawn: "as().sessionsSpawn", sessions_yield: "as().sessionsYield",
      subagents: "as().subagents", recordEvents: "recordEvents", upsertSession: "upsertSession",
      deleteSession: "deleteSession", resetWatcher: "resetWatcher", appendMessages: "appendMessages",
      sessionState: "sessionState", versions: "versions", watch: "watch", unwatch: "unwatchMany",
      peekNotices: "peekNotices",
      drainNotices: "drainNotices", cursor: "cursor", sweep: "sweep", wakes: "wakes",
      deliveries: "deliveries", ackDelivery: "ackDelivery", replyRun: "replyRun", finishRun: "finishRun",
      listUpstreamLinks: "upstreamLinks", putUpstreamLink: "putUpstreamLink",
      deleteUpstreamLink: "deleteUpstreamLink", prune: "prune", backup: "backup", verify: "verify",
      rebuild: "rebuild", export: "exportEvents", stats: "stats", getClock: "clock", setClock: "setClock",
      openapi: "openapi", healthz: "health", readyz: "ready", metrics: "metrics",
      sessionStatusAt: "sessionStatusAt", putWebhook: "putWebhook", listWebhooks: "webhooks",
      deleteWebhook: "deleteWebhook", listDeadLetters: "deadLetters",
      retryDeadLetter: "retryDeadLetter", dropDeadLetter: "dropDeadLetter",
    };
    type Operation = { operationId: string; tags?: string[]; "x-statewatch-cluster-only"?: boolean };
    const doc = (await sw.openapi()) as { paths: Record<string, Record<string, Operation>> };
    for (const item of Object.values(doc.paths)) {
      for (const op of Object.values(item)) {
        if (op["x-statewatch-cluster-only"]) continue;  // serve --cluster's operator routes
        if (op.tags?.includes("console")) continue;  // the console page's own reads (docs/console.md)
        if (op.tags?.includes("mcp")) continue;  // JSON-RPC for MCP clients (docs/mcp.md), no REST call
        const call = covered[op.operationId];
        assert.ok(call, `no client call for ${op.operationId}`);
        const target: Record<string, unknown> = call.startsWith("as().")
          ? (sw.as(PARENT) as unknown as Record<string, unknown>)
          : (sw as unknown as Record<string, unknown>);
        assert.equal(typeof target[call.replace("as().", "")], "function", call);
      }
    }
  });

  test("remaining calls answer as typed", async () => {
    assert.equal((await sw.watch("agent:ops:main", CHILD)).watched, true);
    const many = await sw.watchMany([{ watcher: "agent:ops:main", target: CHILD },
                                     { watcher: "agent:ops:second", target: CHILD }]);
    assert.deepEqual(many, { watched: true, watches: 2, created: 1 });
    await assert.rejects(sw.watchMany([{ watcher: "agent:ops:third", target: CHILD },
                                       { watcher: CHILD, target: CHILD }]),
      (e: unknown) => e instanceof StatewatchError && e.status === 400 &&
        e.message.includes(`watches[1]: watcher "${CHILD}" is its own target`));
    assert.equal(typeof (await sw.cursor("agent:ops:second", CHILD)).lastSeen, "number");
    await assert.rejects(sw.cursor("agent:ops:third", CHILD),
      (e: unknown) => e instanceof StatewatchError && e.status === 404);
    assert.deepEqual(await sw.unwatchMany([{ watcher: "agent:ops:second", target: CHILD },
                                           { watcher: "agent:ops:third", target: CHILD }]),
                     { watches: 2, removed: 1 });
    await assert.rejects(sw.cursor("agent:ops:second", CHILD),
      (e: unknown) => e instanceof StatewatchError && e.status === 404);
    await assert.rejects(sw.unwatch(CHILD, CHILD),
      (e: unknown) => e instanceof StatewatchError && e.status === 400 &&
        e.message.includes(`watcher "${CHILD}" is its own target`));
    assert.deepEqual(await sw.unwatch("agent:ops:main", CHILD), { watches: 1, removed: 1 });
    assert.equal((await sw.versions([CHILD, PARENT])).versions.length, 2);
    assert.equal(typeof (await sw.sweep()).pendingNotices, "number");
    assert.equal(typeof (await sw.prune()).rowsDeleted, "number");
    assert.equal((await sw.rebuild()).ok, true);
    assert.equal((await sw.upstreamLinks()).links.length, 0);
    const now = await sw.sessionStatusAt(CHILD);
    assert.equal(now.sessionKey, CHILD);
    const atHead = await sw.sessionStatusAt(CHILD, { asOf: now.lastSequence });
    assert.equal(atHead.stateVersion, now.stateVersion);
    const hook = "http://127.0.0.1:9/statewatch";  // loopback: allowed without configuration
    assert.equal((await sw.putWebhook({ watcher: "agent:ops:main", url: hook, secret: "s" })).webhook.url, hook);
    assert.deepEqual((await sw.webhooks()).webhooks.map((w) => w.watcher), ["agent:ops:main"]);
    assert.equal((await sw.deleteWebhook("agent:ops:main")).deleted, true);
    assert.ok(Array.isArray((await sw.deadLetters()).deadLetters));
    const clock = await sw.clock();
    assert.equal((await sw.setClock(clock.now + 1000)).now, clock.now + 1000);
    assert.equal((await sw.resetWatcher("agent:ops:main")).reset, true);
    assert.equal((await sw.deleteSession(CHILD)).deleted, true);
  });
});

// Several endpoints (a cluster's nodes): a request that did not land moves on to the next
// endpoint; one whose answer was lost is repeated only when that is safe.
describe("statewatch-client connections", () => {
  // A server that counts the connections it accepted and the requests it answered, holding
  // each answer until `hold` requests are waiting (so calls really are in flight together).
  async function counting(hold: number) {
    const seen = { connections: 0, requests: 0, inFlight: 0, mostInFlight: 0 };
    const waiting: Array<() => void> = [];
    const server = createServer((req, res) => {
      seen.requests++;
      seen.mostInFlight = Math.max(seen.mostInFlight, ++seen.inFlight);
      req.resume();
      req.on("end", () => {
        const answer = () => {
          seen.inFlight--;
          res.writeHead(200, { "Content-Type": "application/json" });
          res.end(JSON.stringify({ status: "ok" }));
        };
        waiting.push(answer);
        if (waiting.length >= hold) waiting.splice(0).forEach((a) => a());
      });
    });
    server.on("connection", () => seen.connections++);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { seen, url, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  test("calls one after another reuse kept-alive connections", async () => {
    const server = await counting(1);
    const sw = new StatewatchClient({ url: server.url });
    try {
      for (let i = 0; i < 20; i++) await sw.health();
      assert.equal(server.seen.requests, 20);
      // undici's pool may hand the next call to a second connection while the first is still
      // finishing its answer; it never opens a connection a call.
      assert.ok(server.seen.connections <= 2, `${server.seen.connections} connections`);
    } finally {
      sw.close();
      await server.close();
    }
  });

  test("calls in flight share at most maxConnections connections, and all are answered",
       { timeout: 10_000 }, async () => {
    const server = await counting(4);  // answers in groups of 4: needs 4 calls on the wire at once
    const sw = new StatewatchClient({ url: server.url, maxConnections: 4 });
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => sw.health()));
      assert.equal(answers.length, 40);
      assert.equal(server.seen.requests, 40);
      assert.equal(server.seen.connections, 4);
      assert.equal(server.seen.mostInFlight, 4);
    } finally {
      sw.close();
      await server.close();
    }
  });

  test("maxConnections must be a positive integer", () => {
    assert.throws(() => new StatewatchClient({ url: "http://127.0.0.1:1", maxConnections: 0 }),
                  (e: StatewatchError) => e.code === "invalid_argument" &&
                    /maxConnections.*got 0/.test(e.message));
  });

  test("an endpoint must be an http:// or https:// URL", () => {
    for (const url of ["127.0.0.1:7411", "ftp://127.0.0.1:7411", "http//x"]) {
      assert.throws(() => new StatewatchClient({ url }),
                    (e: StatewatchError) => e.code === "invalid_argument" && e.message.includes(url));
    }
  });

  test("an endpoint's path prefix comes before every call's path", async () => {
    const paths: string[] = [];
    const server = createServer((req, res) => {
      paths.push(req.url ?? "");
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ status: "ok" }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const sw = new StatewatchClient({ url: `http://127.0.0.1:${port}/statewatch/` });
    try {
      await sw.health();
      assert.deepEqual(paths, ["/statewatch/healthz"]);
    } finally {
      sw.close();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe("statewatch-client with several endpoints", () => {
  const daemon = new Daemon();
  const fakes: Server[] = [];
  const hits: Record<string, number> = {};

  // A fake endpoint: `answer` decides what each request gets ("drop": the socket is
  // destroyed once the request has arrived — the answer is lost).
  async function fake(name: string, answer: { status: number; body: unknown } | "drop"): Promise<string> {
    const server = createServer((req, res) => {
      hits[name] = (hits[name] ?? 0) + 1;
      req.resume();
      req.on("end", () => {
        if (answer === "drop") return req.socket.destroy();
        res.writeHead(answer.status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(answer.body));
      });
    });
    fakes.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  // A port nothing listens on.
  async function closedPort(): Promise<string> {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await new Promise<void>((r) => server.close(() => r()));
    return url;
  }

  before(async () => daemon.start());
  after(async () => {
    for (const f of fakes) f.close();
    await daemon.close();
  });

  const event = (dedupeKey?: string): EventInput => ({
    sessionKey: "agent:fo:main", kind: "human_direct_message", actorType: "human", summary: "m",
    ...(dedupeKey ? { dedupeKey } : {}),
  });

  test("a refused or unreachable endpoint hands the request to the next, which then stays current", async () => {
    const standby = await fake("standby", { status: 503, body: { error: { code: "standby", message: "a standby" } } });
    const sw = new StatewatchClient({ urls: [await closedPort(), standby, daemon.url], failover: { waitMs: 0 } });
    const stored = await sw.recordEvents(event());
    assert.equal(stored.events.length, 1);
    assert.equal(sw.url, daemon.url);
    assert.equal(hits.standby, 1);
    await sw.health();
    assert.equal(hits.standby, 1);  // the answering endpoint is kept
  });

  test("a lost answer is repeated elsewhere under the same X-Request-Id", async () => {
    const dropping = await fake("drop", "drop");
    const lost = await fake("lost", { status: 502, body: { error: { code: "answer_lost", message: "lost" } } });
    for (const first of [dropping, lost]) {
      const sw = new StatewatchClient({ urls: [first, daemon.url], failover: { waitMs: 0 } });
      const stored = await sw.recordEvents(event());
      assert.equal(stored.events.length, 1);
      const reader = new StatewatchClient({ urls: [first, daemon.url], failover: { waitMs: 0 } });
      assert.equal((await reader.health()).status, "ok");
    }
  });

  test("a request whose answer was lost after it landed is applied once", async () => {
    // A node that hands the request to the daemon and then drops the connection: the
    // event is written, the client never hears of it, and retries at the daemon itself.
    const ids: string[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        ids.push(String(req.headers["x-request-id"] ?? ""));
        const headers: Record<string, string> = { "Content-Type": "application/json" };
        if (req.headers["x-request-id"]) headers["X-Request-Id"] = String(req.headers["x-request-id"]);
        await fetch(daemon.url + req.url, { method: req.method, headers, body: Buffer.concat(chunks) });
        res.socket?.destroy();
      });
    });
    fakes.push(server);
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const relay = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const key = "agent:once:main";
    const sw = new StatewatchClient({ urls: [relay, daemon.url], failover: { waitMs: 0 } });
    const answer = await sw.recordEvents({ sessionKey: key, kind: "human_direct_message", actorType: "human", summary: "x" });
    assert.equal(answer.events.length, 1);
    assert.equal(ids.length, 1);
    assert.match(ids[0], /^[0-9a-f-]{36}$/);
    const direct = new StatewatchClient({ url: daemon.url });
    const state = await direct.sessionState(key, { changesSince: 0 });
    assert.equal(state.stateChanges?.events.length, 1, "the retry applied nothing");
    // The same id on another body is refused, naming the reuse.
    await assert.rejects(
      direct.request("POST", "/v1/events", event(), { headers: { "X-Request-Id": ids[0] } }),
      (e: StatewatchError) => e.status === 422 && e.code === "request_id_reused");
  });

  test("an engine's own refusal is not retried, and every endpoint down fails after the rounds", async () => {
    const bad = await fake("bad", { status: 400, body: { error: { code: "invalid_argument", message: "no" } } });
    const sw = new StatewatchClient({ urls: [bad, daemon.url], failover: { waitMs: 0 } });
    await assert.rejects(sw.health(), (e: StatewatchError) => e.status === 400);
    assert.equal(hits.bad, 1);
    const down = new StatewatchClient({ urls: [await closedPort(), await closedPort()], failover: { rounds: 2, waitMs: 0 } });
    await assert.rejects(down.health(), (e: StatewatchError) => e.code === "network" && e.notLanded);
  });
});

// A CA made at test time with the openssl command, a server certificate for 127.0.0.1 it
// signs, and a client certificate for mutual TLS.
function makePki(dir: string): { ca: string; serverCert: string; serverKey: string; clientCert: string; clientKey: string } {
  const openssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: "pipe" });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"];
  openssl("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=statewatch test CA",
          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign");
  writeFileSync(join(dir, "server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
  writeFileSync(join(dir, "client.ext"), "extendedKeyUsage=clientAuth\n");
  for (const who of ["server", "client"]) {
    openssl("req", ...ec, "-keyout", `${who}.key`, "-out", `${who}.csr`, "-subj", `/CN=statewatch test ${who}`);
    openssl("x509", "-req", "-in", `${who}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", `${who}.pem`, "-days", "2", "-extfile", `${who}.ext`);
  }
  const at = (f: string) => join(dir, f);
  return { ca: at("ca.pem"), serverCert: at("server.pem"), serverKey: at("server.key"),
           clientCert: at("client.pem"), clientKey: at("client.key") };
}

describe("statewatch-client over TLS", () => {
  const dir = mkdtempSync(join(tmpdir(), "statewatch-client-tls-"));
  const pki = makePki(dir);
  const daemon = new Daemon(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey]);
  const mutual = new Daemon(["--tls-cert", pki.serverCert, "--tls-key", pki.serverKey, "--tls-client-ca", pki.ca]);
  before(async () => {
    await daemon.start();
    await mutual.start();
  });
  after(async () => {
    await daemon.close();
    await mutual.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("https:// calls and a wss:// wake, verified against the ca option", async () => {
    assert.match(daemon.url, /^https:/);
    const sw = new StatewatchClient({ url: daemon.url, ca: readFileSync(pki.ca) });
    assert.equal((await sw.health()).status, "ok");
    const parent = "agent:main:main";
    const child = "agent:main:subagent:tls";
    await sw.upsertSession(parent, { kind: "main" });
    await sw.upsertSession(child, { parentSessionKey: parent });
    const controller = new AbortController();
    const wakes = sw.wakes({ watcher: parent, signal: controller.signal });
    const first = next(wakes);  // connects the stream
    await sw.recordEvents({ sessionKey: child, kind: "child_spawned", actorType: "agent", actorId: parent,
                            runId: "run-tls", summary: "spawned", dedupeKey: "tls:1", watchers: [parent] } as EventInput);
    // The stream may connect after a change's wake: keep moving the clock past the 20 s wake
    // window and changing the child until a wake arrives (bounded by next()'s 10 s).
    const changes = setInterval(() => {
      void (async () => {
        await sw.setClock((await sw.clock()).now + 60_000);
        await sw.recordEvents({ sessionKey: child, kind: "human_direct_message", actorType: "human", summary: "hi" });
      })().catch(() => undefined);
    }, 200);
    try {
      const wake = await first;
      assert.equal(wake.watcher, parent);
    } finally {
      clearInterval(changes);
      controller.abort();
    }
  });

  test("without the CA the certificate is refused", async () => {
    const sw = new StatewatchClient({ url: daemon.url, failover: { rounds: 1 } });
    await assert.rejects(sw.health(), (e: StatewatchError) => e.code === "network" && /certificate/.test(e.message));
  });

  test("mutual TLS: refused without a client certificate, served with one", async () => {
    const without = new StatewatchClient({ url: mutual.url, ca: readFileSync(pki.ca), failover: { rounds: 1 } });
    await assert.rejects(without.health(), (e: StatewatchError) => e.code === "network");
    const withCert = new StatewatchClient({ url: mutual.url, ca: readFileSync(pki.ca),
                                            cert: readFileSync(pki.clientCert), key: readFileSync(pki.clientKey) });
    assert.equal((await withCert.health()).status, "ok");
  });
});

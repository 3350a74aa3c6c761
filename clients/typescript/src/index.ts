// statewatch-client: typed calls for every endpoint of the statewatch daemon and its session
// tools, and the wake and delivery streams as reconnecting async iterators.
//
//   const sw = new StatewatchClient({ url: "http://127.0.0.1:7411" });
//   const cluster = new StatewatchClient({ urls: ["http://node0:7411", "http://node1:7411"] });
//   await sw.recordEvents({ sessionKey, kind: "human_direct_message", actorType: "human" });
//   for await (const wake of sw.wakes({ watcher: "agent:main:main" })) { ... }
//
// Every failure is a StatewatchError carrying the daemon's error code, its message (tool
// refusals are byte-exact) and the HTTP status (0 when the daemon could not be reached).
import { randomUUID } from "node:crypto";
import { Pool, type Dispatcher } from "undici";
import { reconnectingStream, type BackoffOptions, type TlsOptions } from "./stream.js";
import type * as T from "./types.js";

export * from "./types.js";
export type { BackoffOptions, TlsOptions } from "./stream.js";

export class StatewatchError extends Error {
  /** The daemon's error.code (invalid_argument, forbidden, …), or "network" / "aborted". */
  readonly code: string;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  /** True when the request was certainly not sent (the endpoint could not be reached). */
  notLanded = false;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.name = "StatewatchError";
    this.code = code;
    this.status = status;
  }
}

export interface ClientOptions {
  /** The daemon, e.g. http://127.0.0.1:7411. */
  url?: string;
  /** Several endpoints — the nodes of a cluster (any of them answers any session), or a
   * daemon and its standby. Requests go to one until it fails, then to the next (below). */
  urls?: string[];
  /** The bearer token of `statewatch serve --token`. */
  token?: string;
  /** Failing over between endpoints (defaults: 3 rounds over the list, 200 ms between
   * rounds). A request that did not land — the endpoint could not be reached, or answered
   * 503 standby / switching / partition_moved / unavailable / shutting_down — goes to the
   * next endpoint. Every POST, PUT and DELETE carries an `X-Request-Id` (a random UUID, or
   * the one given in RequestOptions.headers) that stays the same on every attempt, so one
   * whose answer was lost (the connection broke after sending, or 502 answer_lost) is sent
   * again too: the daemon applies a request at most once per id (15 minutes) and answers a
   * repeat with the first answer. 409 request_in_progress (the first attempt still runs) is
   * asked again after `waitMs`. */
  failover?: { rounds?: number; waitMs?: number };
  /** For https:// endpoints (`statewatch serve --tls-cert`): the CA (PEM) that the daemon's
   * certificate must be signed by, instead of Node's default trust store; used for the HTTP
   * calls and the wss:// streams alike. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** A client certificate and its key (PEM) for a daemon with --tls-client-ca (mutual TLS). */
  cert?: string | Buffer;
  key?: string | Buffer;
  /** Connections kept open to each endpoint (default 8). Calls reuse them (keep-alive), so a
   * call costs one request on a warm socket; calls in flight beyond this many wait for one to
   * free, rather than each opening a socket of its own. */
  maxConnections?: number;
}

export interface RequestOptions {
  /** Aborts the request: the promise rejects with a StatewatchError of code "aborted". */
  signal?: AbortSignal;
  /** Extra headers (the tool calls' X-Session-Key travels this way). */
  headers?: Record<string, string>;
}

export interface WakeStreamOptions extends BackoffOptions {
  /** Only this watcher's wakes. With it, a reconnect peeks the watcher's notices and yields
   * a wake with reason "reconnected" when some are pending (wakes may have been missed). */
  watcher?: string;
  signal?: AbortSignal;
  onError?: (error: Error) => void;
}

export interface DeliveryStreamOptions extends BackoffOptions {
  /** Only deliveries to this agent's sessions. */
  agentId?: string;
  signal?: AbortSignal;
  onError?: (error: Error) => void;
}

type Query = Record<string, string | number | undefined>;

function queryString(query: Query): string {
  const parts = Object.entries(query)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join("&")}` : "";
}

const key = (k: string) => encodeURIComponent(k);

/** The session tools as one caller (the requester session) calls them. */
export class ToolCaller {
  constructor(
    private readonly client: StatewatchClient,
    readonly sessionKey: string,
    readonly agentId?: string,
  ) {}

  private call<R>(tool: string, params: object, options: RequestOptions = {}): Promise<R> {
    const headers: Record<string, string> = { "X-Session-Key": this.sessionKey };
    if (this.agentId) headers["X-Agent-Id"] = this.agentId;
    return this.client.request<R>("POST", `/v1/tools/${tool}`, params, {
      ...options,
      headers: { ...headers, ...options.headers },
    });
  }

  sessionStatus(params: T.SessionStatusParams = {}, options?: RequestOptions) {
    return this.call<T.SessionStatusAnswer>("session_status", params, options);
  }
  sessionsList(params: T.SessionsListParams = {}, options?: RequestOptions) {
    return this.call<T.SessionsListAnswer>("sessions_list", params, options);
  }
  sessionsHistory(params: T.SessionsHistoryParams, options?: RequestOptions) {
    return this.call<T.SessionsHistoryAnswer>("sessions_history", params, options);
  }
  /** With timeoutSeconds > 0 the answer waits for the reply; `options.signal` stops waiting
   * (the run goes on in the daemon). */
  sessionsSend(params: T.SessionsSendParams, options?: RequestOptions) {
    return this.call<T.SessionsSendAnswer>("sessions_send", params, options);
  }
  sessionsSpawn(params: T.SessionsSpawnParams, options?: RequestOptions) {
    return this.call<T.SessionsSpawnAnswer>("sessions_spawn", params, options);
  }
  sessionsYield(params: T.SessionsYieldParams = {}, options?: RequestOptions) {
    return this.call<T.SessionsYieldAnswer>("sessions_yield", params, options);
  }
  subagents(params: T.SubagentsParams = {}, options?: RequestOptions) {
    return this.call<T.SubagentsAnswer>("subagents", params, options);
  }
}

// 503 codes that mean nothing was written: another endpoint (or the same, later) may take it.
const NOT_LANDED = new Set(["standby", "switching", "partition_moved", "unavailable", "shutting_down", "too_many_connections"]);
// Connection errors that happen before a request is sent.
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

// An HTTP answer, whichever transport carried it; text() reads the body (it may fail: the
// connection broke after the head).
interface Answer {
  status: number;
  contentType: string;
  text(): Promise<string>;
}

// One HTTP exchange through the client's keep-alive pool (undici, the HTTP client Node's own
// fetch is built on, used directly). Measured with `make bench-node`: its pool spent ~23 %
// less Node CPU a call than a kept-alive node:http request, and fetch, the transport before
// those, ~4.5x. It rejects with the connection's error (its `code` says whether the request
// was sent: NOT_SENT).
async function exchange(pool: Pool, path: string, method: string,
                        headers: Record<string, string>, body: string | undefined,
                        signal: AbortSignal | undefined): Promise<Answer> {
  const res = await pool.request({ path, method: method as Dispatcher.HttpMethod, headers, body,
                                   signal });
  const text = res.body.text();
  text.catch(() => undefined);  // read (and reported) by text()
  const type = res.headers["content-type"];
  return {
    status: res.statusCode,
    contentType: String((Array.isArray(type) ? type[0] : type) ?? ""),
    text: () => text,
  };
}

// The methods that change state: each request carries an X-Request-Id.
function mutating(method: string): boolean {
  return method !== "GET" && method !== "HEAD";
}

/** A fresh X-Request-Id (a random UUID). */
export function newRequestId(): string {
  return randomUUID();
}

export class StatewatchClient {
  /** Every endpoint, in the order given. */
  readonly urls: readonly string[];
  private current = 0;
  private readonly token?: string;
  private readonly rounds: number;
  private readonly waitMs: number;
  /** ca/cert/key when given: https:// calls trust and present them, and the streams
   * through `ws` take the same options. */
  private readonly tls?: TlsOptions;
  /** The kept-alive connections of http:// and https:// calls (ClientOptions.maxConnections
   * per endpoint). */
  private pools: Pool[];
  /** Each endpoint's origin (its pool's) and path ("" for a bare origin), which every call's
   * path follows. */
  private readonly origins: string[];
  private readonly prefixes: string[];
  private readonly maxConnections: number;
  /** Deliveries acknowledged through this client, so a re-offer after a reconnect that
   * crossed the ack is not yielded twice. */
  private readonly acked = new Set<number>();

  constructor(options: ClientOptions) {
    const urls = [...(options.urls ?? []), ...(options.url ? [options.url] : [])];
    if (urls.length === 0) throw new StatewatchError("invalid_argument", "a client needs url or urls", 0);
    this.urls = urls.map((u) => u.replace(/\/+$/, ""));
    const parsed = this.urls.map((u) => {
      let url: URL | undefined;
      try {
        url = new URL(u);
      } catch {
        // reported below
      }
      if (url?.protocol !== "http:" && url?.protocol !== "https:") {
        throw new StatewatchError("invalid_argument", `not an http:// or https:// URL: "${u}"`, 0);
      }
      return url;
    });
    this.origins = parsed.map((url) => url.origin);
    this.prefixes = parsed.map((url) => url.pathname.replace(/\/+$/, ""));
    this.token = options.token;
    this.rounds = Math.max(1, options.failover?.rounds ?? 3);
    this.waitMs = Math.max(0, options.failover?.waitMs ?? 200);
    const maxConnections = options.maxConnections ?? 8;
    if (!Number.isInteger(maxConnections) || maxConnections < 1) {
      const why = `maxConnections must be a positive integer (got ${maxConnections})`;
      throw new StatewatchError("invalid_argument", why, 0);
    }
    if (options.ca !== undefined || options.cert !== undefined || options.key !== undefined) {
      this.tls = { ca: options.ca, cert: options.cert, key: options.key };
    }
    this.maxConnections = maxConnections;
    this.pools = this.newPools();
  }

  /** Closes the kept-alive connections. Not needed before a process exits (idle ones do not
   * keep it alive); calls made after close() open new ones. */
  close(): void {
    const closing = this.pools;
    this.pools = this.newPools();  // idle until the next call: they hold no connection
    for (const pool of closing) pool.destroy().catch(() => undefined);
  }

  /** A pool an endpoint, for its origin (a call names the endpoint's path prefix, if any, and
   * its own path). */
  private newPools(): Pool[] {
    const connect = this.tls && { ...this.tls };
    return this.origins.map((origin) => new Pool(origin,
                                                 { connections: this.maxConnections, connect }));
  }

  /** The endpoint requests go to now (the last one that answered). */
  get url(): string {
    return this.urls[this.current];
  }

  private advance(from: number): void {
    if (this.current === from) this.current = (from + 1) % this.urls.length;
  }

  /** The session tools, called as `sessionKey` (plus its agent for a bare key). */
  as(sessionKey: string, agentId?: string): ToolCaller {
    return new ToolCaller(this, sessionKey, agentId);
  }

  /** One HTTP call; the answer parsed as JSON (as text for non-JSON answers). With several
   * endpoints, fails over between them (ClientOptions.failover). */
  async request<R>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<R> {
    const attempts = this.rounds * this.urls.length;
    // One id for every attempt: the daemon applies the request at most once.
    const given = Object.keys(options.headers ?? {}).some((h) => h.toLowerCase() === "x-request-id");
    const once: RequestOptions = mutating(method) && !given
      ? { ...options, headers: { ...options.headers, "X-Request-Id": newRequestId() } }
      : options;
    let last: StatewatchError | undefined;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0 && attempt % this.urls.length === 0) await new Promise((r) => setTimeout(r, this.waitMs));
      const at = this.current;
      try {
        return await this.requestOnce<R>(at, method, path, body, once);
      } catch (error) {
        if (!(error instanceof StatewatchError)) throw error;
        const notLanded = error.notLanded || (error.status === 503 && NOT_LANDED.has(error.code));
        const lost = error.code === "answer_lost" || (error.code === "network" && !error.notLanded);
        const running = error.status === 409 && error.code === "request_in_progress";
        if (running) {
          last = error;
          await new Promise((r) => setTimeout(r, this.waitMs));
          continue;  // the same endpoint: the first attempt runs at the partition's owner
        }
        // A lost answer goes again: a read is safe, a write carries its request id.
        if (!notLanded && !lost) throw error;
        last = error;
        this.advance(at);
      }
    }
    throw last as StatewatchError;
  }

  private async requestOnce<R>(at: number, method: string, path: string, body: unknown,
                               options: RequestOptions): Promise<R> {
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    let response: Answer;
    try {
      response = await exchange(this.pools[at], this.prefixes[at] + path, method, headers, payload,
                                options.signal);
    } catch (error) {
      if (options.signal?.aborted) throw new StatewatchError("aborted", `${method} ${path} was aborted`, 0);
      // The socket's error says why (refused, a certificate not trusted).
      const why = (error as Error).message;
      const e = new StatewatchError("network", `${method} ${this.urls[at]}${path}: ${why}`, 0);
      e.notLanded = NOT_SENT.has((error as { code?: string }).code ?? "");
      throw e;
    }
    const text = await response.text();
    const json = response.contentType.includes("application/json");
    if (response.status < 200 || response.status > 299) {
      let code = "http_error";
      let message = text.trim();
      if (json) {
        try {
          const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
          code = parsed.error?.code ?? code;
          message = parsed.error?.message ?? message;
        } catch {
          // not the error envelope: keep the raw text
        }
      }
      throw new StatewatchError(code, message, response.status);
    }
    return (json ? JSON.parse(text) : text) as R;
  }

  // ---- journal and sessions ------------------------------------------------------------------

  /** One event, or an array recorded in one atomic batch. */
  recordEvents(events: T.EventInput | T.EventInput[], options?: RequestOptions) {
    return this.request<T.Schemas.RecordEventsAnswer>("POST", "/v1/events", events, options);
  }
  upsertSession(sessionKey: string, fields: T.SessionFields = {}, options?: RequestOptions) {
    return this.request<T.Schemas.SessionAnswer>("PUT", `/v1/sessions/${key(sessionKey)}`, fields, options);
  }
  deleteSession(sessionKey: string, agentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.Deleted>("DELETE", `/v1/sessions/${key(sessionKey)}${queryString({ agentId })}`, undefined, options);
  }
  /** Deletes the cursors `watcher` holds. */
  resetWatcher(watcher: string, options?: RequestOptions) {
    return this.request<T.Schemas.Reset>("POST", `/v1/sessions/${key(watcher)}/reset`, undefined, options);
  }
  appendMessages(sessionKey: string, messages: T.TranscriptMessage[], agentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.Appended>(
      "POST", `/v1/sessions/${key(sessionKey)}/messages${queryString({ agentId })}`, { messages }, options);
  }
  sessionState(sessionKey: string, query: { agentId?: string; changesSince?: number; limit?: number } = {}, options?: RequestOptions) {
    return this.request<T.SessionState>("GET", `/v1/sessions/${key(sessionKey)}/state${queryString(query)}`, undefined, options);
  }
  /** The session's status as it was right after sequence `asOf` (now without it): state version,
   *  changes, cursors both ways and pending notices (docs/post-mortem.md). */
  sessionStatusAt(sessionKey: string, query: { asOf?: number; agentId?: string; changesSince?: number; limit?: number } = {}, options?: RequestOptions) {
    return this.request<T.Schemas.SessionStatusAt>("GET", `/v1/sessions/${key(sessionKey)}/status${queryString(query)}`, undefined, options);
  }
  versions(sessions: string[], agentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.VersionsAnswer>("POST", "/v1/versions", { sessions, agentId }, options);
  }

  // ---- watching --------------------------------------------------------------------------------

  watch(watcher: string, target: string, targetAgentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.WatchAnswer>("POST", "/v1/watches", { watcher, target, targetAgentId }, options);
  }
  // Registers many watches in one atomic step: every pair is watched afterwards, or, when one
  // is refused (the watcher is its target, a key is not agent-scoped), the call rejects with
  // invalid_argument naming the item ("watches[i]: ...") and nothing is registered. Answers
  // how many distinct pairs are watched and how many cursors were new.
  watchMany(watches: T.Schemas.WatchRequest[], options?: RequestOptions) {
    return this.request<T.Schemas.WatchAnswer>("POST", "/v1/watches", watches, options);
  }
  // Removes a watch: the pair's cursor and its pending notice go (removed: 1), or there was
  // none (removed: 0). A pair a registration would refuse rejects with invalid_argument.
  unwatch(watcher: string, target: string, targetAgentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.UnwatchAnswer>("POST", "/v1/watches/remove", { watcher, target, targetAgentId }, options);
  }
  // Removes many watches in one atomic step, or, when one item is refused, none (the call
  // rejects with invalid_argument naming it: "watches[i]: ..."). Answers how many distinct
  // pairs were named and how many cursors were removed.
  unwatchMany(watches: T.Schemas.WatchRequest[], options?: RequestOptions) {
    return this.request<T.Schemas.UnwatchAnswer>("POST", "/v1/watches/remove", watches, options);
  }
  peekNotices(watcher: string, options?: RequestOptions) {
    return this.request<T.Schemas.NoticesAnswer>("GET", `/v1/notices${queryString({ watcher })}`, undefined, options);
  }
  drainNotices(watcher: string, options?: RequestOptions) {
    return this.request<T.Schemas.NoticesAnswer>("POST", "/v1/notices/drain", { watcher }, options);
  }
  cursor(watcher: string, target: string, targetAgentId?: string, options?: RequestOptions) {
    return this.request<T.Cursor>("GET", `/v1/cursors${queryString({ watcher, target, targetAgentId })}`, undefined, options);
  }
  sweep(options?: RequestOptions) {
    return this.request<T.Schemas.SweepAnswer>("POST", "/v1/sweep", undefined, options);
  }

  // ---- the gateway side of the session tools -------------------------------------------------

  ackDelivery(deliveryId: number, options?: RequestOptions) {
    const answer = this.request<T.Schemas.AckAnswer>("POST", `/v1/deliveries/${deliveryId}/ack`, undefined, options);
    return answer.then((a) => {
      this.acked.add(deliveryId);
      return a;
    });
  }
  replyRun(runId: string, text: string, options?: RequestOptions) {
    return this.request<T.RunUpdate>("POST", `/v1/runs/${key(runId)}/reply`, { text }, options);
  }
  finishRun(runId: string, status: "ok" | "error" | "timeout" | "cancelled", result?: unknown, options?: RequestOptions) {
    return this.request<T.RunUpdate>("POST", `/v1/runs/${key(runId)}/finish`, { status, result }, options);
  }

  // ---- upstream links ------------------------------------------------------------------------

  upstreamLinks(options?: RequestOptions) {
    return this.request<T.Schemas.UpstreamLinks>("GET", "/v1/upstream-links", undefined, options);
  }
  putUpstreamLink(link: T.UpstreamLinkInput, options?: RequestOptions) {
    return this.request<T.Schemas.UpstreamLinkAnswer>("POST", "/v1/upstream-links", link, options);
  }
  deleteUpstreamLink(sessionKey: string, agentId?: string, options?: RequestOptions) {
    return this.request<T.Schemas.Deleted>("DELETE", `/v1/upstream-links/${key(sessionKey)}${queryString({ agentId })}`, undefined, options);
  }

  // ---- webhooks (docs/webhooks.md) -----------------------------------------------------------

  putWebhook(webhook: T.Schemas.WebhookInput, options?: RequestOptions) {
    return this.request<T.Schemas.WebhookAnswer>("POST", "/v1/webhooks", webhook, options);
  }
  webhooks(options?: RequestOptions) {
    return this.request<T.Schemas.Webhooks>("GET", "/v1/webhooks", undefined, options);
  }
  deleteWebhook(watcher: string, options?: RequestOptions) {
    return this.request<T.Schemas.Deleted>("DELETE", `/v1/webhooks/${key(watcher)}`, undefined, options);
  }
  deadLetters(options?: RequestOptions) {
    return this.request<T.Schemas.DeadLetters>("GET", "/v1/webhooks/dead", undefined, options);
  }
  retryDeadLetter(idempotencyKey: string, options?: RequestOptions) {
    return this.request<T.Schemas.DeadLetterRetried>("POST", "/v1/webhooks/dead/retry", { idempotencyKey }, options);
  }
  dropDeadLetter(idempotencyKey: string, options?: RequestOptions) {
    return this.request<T.Schemas.DeadLetterDropped>("POST", "/v1/webhooks/dead/drop", { idempotencyKey }, options);
  }

  // ---- operations ----------------------------------------------------------------------------

  prune(options?: RequestOptions) {
    return this.request<T.PruneStats>("POST", "/v1/prune", undefined, options);
  }
  /** A consistent copy of the database in `to` (a new directory on the daemon's machine). */
  backup(to: string, options?: RequestOptions) {
    return this.request<T.Schemas.BackupAnswer>("POST", "/v1/backup", { to }, options);
  }
  verify(options?: RequestOptions) {
    return this.request<T.VerifyReport>("GET", "/v1/verify", undefined, options);
  }
  rebuild(options?: RequestOptions) {
    return this.request<T.VerifyReport>("POST", "/v1/rebuild", undefined, options);
  }
  /** Every retained event. */
  async exportEvents(options?: RequestOptions): Promise<T.StoredEvent[]> {
    const text = await this.request<string>("GET", "/v1/export", undefined, options);
    return text.split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line) as T.StoredEvent);
  }
  stats(options?: RequestOptions) {
    return this.request<T.Stats>("GET", "/v1/stats", undefined, options);
  }
  clock(options?: RequestOptions) {
    return this.request<T.Schemas.Clock>("GET", "/v1/clock", undefined, options);
  }
  /** Moves a `serve --manual-clock` daemon's clock forward (tests). */
  setClock(now: number, options?: RequestOptions) {
    return this.request<T.Schemas.Clock>("POST", "/v1/clock", { now }, options);
  }
  openapi(options?: RequestOptions) {
    return this.request<T.Schemas.OpenApiDocument>("GET", "/v1/openapi.json", undefined, options);
  }
  health(options?: RequestOptions) {
    return this.request<T.Health>("GET", "/healthz", undefined, options);
  }
  /** GET /readyz: answers when the daemon should get traffic; when it should not, throws a
   * StatewatchError with status 503 (code not_ready, or in cluster mode standby, switching or
   * partition_moved) whose message names what is not ready. */
  ready(options?: RequestOptions) {
    return this.request<T.Readiness>("GET", "/readyz", undefined, options);
  }
  /** The Prometheus exposition text. */
  metrics(options?: RequestOptions) {
    return this.request<string>("GET", "/metrics", undefined, options);
  }

  // ---- streams -------------------------------------------------------------------------------

  // A stream's URL, asked at every (re)connect; a failed connection moves the client on to
  // the next endpoint, so a stream follows a failover too.
  private wsUrl(path: string, query: Query): () => string {
    let last = -1;
    return () => {
      if (last === this.current) this.advance(last);
      last = this.current;
      return this.url.replace(/^http/, "ws") + path + queryString(query);
    };
  }
  private wsHeaders(): Record<string, string> {
    return this.token ? { Authorization: `Bearer ${this.token}` } : {};
  }

  /** Wakes as they fire, across reconnects, until `options.signal` aborts or the loop ends. */
  wakes(options: WakeStreamOptions = {}): AsyncGenerator<T.Wake> {
    const watcher = options.watcher;
    return reconnectingStream<T.Wake>({
      ...options,
      url: this.wsUrl("/v1/wakes", { watcher }),
      headers: this.wsHeaders(),
      tls: this.tls,
      parse: (text) => JSON.parse(text) as T.Wake,
      onReconnect: watcher
        ? async () => {
            const { notices } = await this.peekNotices(watcher);
            return notices.length ? [{ watcher, reason: "reconnected", at: Date.now() }] : [];
          }
        : undefined,
    });
  }

  /** Deliveries for the gateway. The daemon offers every unacknowledged delivery again on
   * each (re)connect, so one handed out before a crash or a dropped connection comes back
   * until `ackDelivery` acknowledges it. */
  deliveries(options: DeliveryStreamOptions = {}): AsyncGenerator<T.Delivery> {
    return reconnectingStream<T.Delivery>({
      ...options,
      url: this.wsUrl("/v1/deliveries", { agentId: options.agentId }),
      headers: this.wsHeaders(),
      tls: this.tls,
      parse: (text) => {
        const d = JSON.parse(text) as T.Delivery;
        return this.acked.has(d.deliveryId) ? undefined : d;
      },
    });
  }
}

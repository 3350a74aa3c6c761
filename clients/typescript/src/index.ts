// statewatch-client: typed calls for every endpoint of the statewatch daemon and its session
// tools, and the wake and delivery streams as reconnecting async iterators.
//
//   const sw = new StatewatchClient({ url: "http://127.0.0.1:7411" });
//   await sw.recordEvents({ sessionKey, kind: "human_direct_message", actorType: "human" });
//   for await (const wake of sw.wakes({ watcher: "agent:main:main" })) { ... }
//
// Every failure is a StatewatchError carrying the daemon's error code, its message (tool
// refusals are byte-exact) and the HTTP status (0 when the daemon could not be reached).
import { reconnectingStream, type BackoffOptions } from "./stream.js";
import type * as T from "./types.js";

export * from "./types.js";
export type { BackoffOptions } from "./stream.js";

export class StatewatchError extends Error {
  /** The daemon's error.code (invalid_argument, forbidden, …), or "network" / "aborted". */
  readonly code: string;
  /** The HTTP status; 0 when no answer arrived. */
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.name = "StatewatchError";
    this.code = code;
    this.status = status;
  }
}

export interface ClientOptions {
  /** The daemon, e.g. http://127.0.0.1:7411. */
  url: string;
  /** The bearer token of `statewatch serve --token`. */
  token?: string;
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

export class StatewatchClient {
  readonly url: string;
  private readonly token?: string;
  /** Deliveries acknowledged through this client, so a re-offer after a reconnect that
   * crossed the ack is not yielded twice. */
  private readonly acked = new Set<number>();

  constructor(options: ClientOptions) {
    this.url = options.url.replace(/\/+$/, "");
    this.token = options.token;
  }

  /** The session tools, called as `sessionKey` (plus its agent for a bare key). */
  as(sessionKey: string, agentId?: string): ToolCaller {
    return new ToolCaller(this, sessionKey, agentId);
  }

  /** One HTTP call; the answer parsed as JSON (as text for non-JSON answers). */
  async request<R>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<R> {
    const headers: Record<string, string> = { Accept: "application/json", ...options.headers };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    let payload: string | undefined;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      payload = JSON.stringify(body);
    }
    let response: Response;
    try {
      response = await fetch(this.url + path, { method, headers, body: payload, signal: options.signal });
    } catch (error) {
      if (options.signal?.aborted) throw new StatewatchError("aborted", `${method} ${path} was aborted`, 0);
      throw new StatewatchError("network", `${method} ${this.url}${path}: ${(error as Error).message}`, 0);
    }
    const text = await response.text();
    const json = (response.headers.get("content-type") ?? "").includes("application/json");
    if (!response.ok) {
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
    return this.request<{ events: T.StoredEvent[] }>("POST", "/v1/events", events, options);
  }
  upsertSession(sessionKey: string, fields: T.SessionFields = {}, options?: RequestOptions) {
    return this.request<{ session: T.SessionRecord }>("PUT", `/v1/sessions/${key(sessionKey)}`, fields, options);
  }
  deleteSession(sessionKey: string, agentId?: string, options?: RequestOptions) {
    return this.request<{ deleted: true }>("DELETE", `/v1/sessions/${key(sessionKey)}${queryString({ agentId })}`, undefined, options);
  }
  /** Deletes the cursors `watcher` holds. */
  resetWatcher(watcher: string, options?: RequestOptions) {
    return this.request<{ reset: true }>("POST", `/v1/sessions/${key(watcher)}/reset`, undefined, options);
  }
  appendMessages(sessionKey: string, messages: T.TranscriptMessage[], agentId?: string, options?: RequestOptions) {
    return this.request<{ appended: number }>(
      "POST", `/v1/sessions/${key(sessionKey)}/messages${queryString({ agentId })}`, { messages }, options);
  }
  sessionState(sessionKey: string, query: { agentId?: string; changesSince?: number; limit?: number } = {}, options?: RequestOptions) {
    return this.request<T.SessionState>("GET", `/v1/sessions/${key(sessionKey)}/state${queryString(query)}`, undefined, options);
  }
  versions(sessions: string[], agentId?: string, options?: RequestOptions) {
    return this.request<{ versions: T.SessionState[] }>("POST", "/v1/versions", { sessions, agentId }, options);
  }

  // ---- watching --------------------------------------------------------------------------------

  watch(watcher: string, target: string, targetAgentId?: string, options?: RequestOptions) {
    return this.request<{ watched: boolean }>("POST", "/v1/watches", { watcher, target, targetAgentId }, options);
  }
  peekNotices(watcher: string, options?: RequestOptions) {
    return this.request<{ notices: T.Notice[] }>("GET", `/v1/notices${queryString({ watcher })}`, undefined, options);
  }
  drainNotices(watcher: string, options?: RequestOptions) {
    return this.request<{ notices: T.Notice[] }>("POST", "/v1/notices/drain", { watcher }, options);
  }
  cursor(watcher: string, target: string, targetAgentId?: string, options?: RequestOptions) {
    return this.request<T.Cursor>("GET", `/v1/cursors${queryString({ watcher, target, targetAgentId })}`, undefined, options);
  }
  sweep(options?: RequestOptions) {
    return this.request<{ pendingNotices: number }>("POST", "/v1/sweep", undefined, options);
  }

  // ---- the gateway side of the session tools -------------------------------------------------

  ackDelivery(deliveryId: number, options?: RequestOptions) {
    const answer = this.request<{ acked: true; deliveryId: number }>("POST", `/v1/deliveries/${deliveryId}/ack`, undefined, options);
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
    return this.request<{ links: T.UpstreamLink[] }>("GET", "/v1/upstream-links", undefined, options);
  }
  putUpstreamLink(link: T.UpstreamLinkInput, options?: RequestOptions) {
    return this.request<{ link: T.UpstreamLink }>("POST", "/v1/upstream-links", link, options);
  }
  deleteUpstreamLink(sessionKey: string, agentId?: string, options?: RequestOptions) {
    return this.request<{ deleted: true }>("DELETE", `/v1/upstream-links/${key(sessionKey)}${queryString({ agentId })}`, undefined, options);
  }

  // ---- operations ----------------------------------------------------------------------------

  prune(options?: RequestOptions) {
    return this.request<T.PruneStats>("POST", "/v1/prune", undefined, options);
  }
  /** A consistent copy of the database in `to` (a new directory on the daemon's machine). */
  backup(to: string, options?: RequestOptions) {
    return this.request<{ path: string }>("POST", "/v1/backup", { to }, options);
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
    return this.request<{ now: number; manual?: boolean }>("GET", "/v1/clock", undefined, options);
  }
  /** Moves a `serve --manual-clock` daemon's clock forward (tests). */
  setClock(now: number, options?: RequestOptions) {
    return this.request<{ now: number }>("POST", "/v1/clock", { now }, options);
  }
  openapi(options?: RequestOptions) {
    return this.request<Record<string, unknown>>("GET", "/v1/openapi.json", undefined, options);
  }
  health(options?: RequestOptions) {
    return this.request<T.Health>("GET", "/healthz", undefined, options);
  }
  /** The Prometheus exposition text. */
  metrics(options?: RequestOptions) {
    return this.request<string>("GET", "/metrics", undefined, options);
  }

  // ---- streams -------------------------------------------------------------------------------

  private wsUrl(path: string, query: Query): string {
    return this.url.replace(/^http/, "ws") + path + queryString(query);
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
      parse: (text) => {
        const d = JSON.parse(text) as T.Delivery;
        return this.acked.has(d.deliveryId) ? undefined : d;
      },
    });
  }
}

// The shapes of the statewatch daemon's request and answer bodies (docs/openapi.json in the
// statewatch sources is the authority; answers may carry fields added later).

export type ActorType = "human" | "agent" | "system";

export interface EventInput {
  sessionKey: string;
  agentId?: string;
  sessionId?: string;
  /** human_direct_message, upstream_missing, goal_changed, child_spawned, run_completed,
   * run_failed, compacted, adopted, created — or a kind the deployment added. */
  kind: string;
  actorType: ActorType;
  actorId?: string;
  runId?: string;
  occurredAt?: number;
  summary?: string;
  payload?: Record<string, unknown>;
  dedupeKey?: string;
  watchers?: string[];
}

export interface StoredEvent {
  sequence: number;
  sessionKey: string;
  agentId: string;
  sessionId?: string;
  kind: string;
  actorType: ActorType;
  actorId?: string;
  runId?: string;
  occurredAt: number;
  summary: string;
  payload?: Record<string, unknown>;
  dedupeKey?: string;
  /** true when an existing event came back for its dedupeKey. */
  deduplicated?: boolean;
}

export interface ChangeEvent {
  sequence: number;
  kind: string;
  actorType: ActorType;
  occurredAt: number;
  summary: string;
  actorId?: string;
  runId?: string;
  payload?: { outcome?: string; channel?: string; turns?: number };
}

export interface StateChanges {
  events: ChangeEvent[];
  truncated: boolean;
  earliestAvailableSequence: number;
  historyGap: boolean;
}

export interface SessionState {
  sessionKey: string;
  agentId: string;
  stateVersion: number;
  stateChanges?: StateChanges;
}

export type SessionKind = "main" | "group" | "cron" | "hook" | "node" | "other";

export type ThinkingLevel = "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
export type SpawnRuntime = "subagent" | "acp";

/** A registry upsert: a missing field keeps its stored value, null clears it (createdAt and
 * updatedAt: null keeps them); an empty string is refused. */
export interface SessionFields {
  agentId?: string;
  sessionId?: string | null;
  kind?: SessionKind | null;
  channel?: string | null;
  label?: string | null;
  displayName?: string | null;
  model?: string | null;
  /** A per-session override (session_status `model` sets it). */
  modelOverride?: string | null;
  thinking?: ThinkingLevel | null;
  runtime?: SpawnRuntime | null;
  /** The model's context window. */
  contextTokens?: number | null;
  /** Tokens in the context now. */
  totalTokens?: number | null;
  inputTokens?: number | null;
  outputTokens?: number | null;
  cacheReadTokens?: number | null;
  cacheWriteTokens?: number | null;
  parentSessionKey?: string | null;
  sandboxed?: boolean | null;
  createdAt?: number | null;
  updatedAt?: number | null;
  /** The delivery route: where the gateway last posted for this session. */
  lastChannel?: string | null;
  lastTo?: string | null;
  lastAccountId?: string | null;
  /** Set on a thread-bound child: its announcement goes back to this thread. */
  lastThreadId?: string | null;
}

type NonNullFields<T> = { [K in keyof T]?: Exclude<T[K], null> };

export interface SessionRecord extends NonNullFields<Omit<SessionFields, "kind">> {
  sessionKey: string;
  agentId: string;
  kind: string;
  channel: string;
  sandboxed: boolean;
}

export interface TranscriptMessage {
  role: string;
  content: string | Array<Record<string, unknown>>;
  toolName?: string;
  timestamp?: number;
  /** Marks a message another session sent (inter-session data). */
  provenance?: { sourceSessionKey: string; sourceTool?: string; sourceChannel?: string; runId?: string };
  /** Token counts of the model call that produced the message (total defaults to input + output). */
  usage?: { input?: number; output?: number; cacheRead?: number; cacheWrite?: number; total?: number };
}

export interface Notice {
  targetSessionKey: string;
  /** session-state:<lower-case hex of the UTF-8 target key> */
  contextKey: string;
  text: string;
}

export interface Cursor {
  lastSeen: number;
  notified: number;
  material: number;
  updatedAt: number;
}

export interface Wake {
  watcher: string;
  /** session-state:<target>, or "reconnected" for the client's own catch-up wake. */
  reason: string;
  at: number;
}

/** Where a gateway posts: the non-empty fields of a session's delivery route. */
export interface Route {
  channel?: string;
  to?: string;
  accountId?: string;
  threadId?: string;
}

/** How to start a spawned run (a task delivery's options). */
export interface SpawnOptions {
  runtime: SpawnRuntime;
  model?: string;
  thinking?: ThinkingLevel;
  /** Bind the run to a thread; the announcement goes back to it. */
  thread: boolean;
  sandbox: "inherit" | "require";
  /** fork: the child's transcript already holds the requester's. */
  context: "isolated" | "fork";
  label?: string;
  depth: number;
}

export interface Delivery {
  deliveryId: number;
  type: "message" | "task" | "steer" | "announce";
  sessionKey: string;
  agentId: string;
  runId: string;
  text: string;
  provenance: {
    kind: "inter_session";
    sourceSessionKey: string;
    sourceTool: string;
    sourceChannel?: string;
    runId?: string;
    isUser: false;
  };
  /** message and announce: `[Inter-session message] sourceSession=... isUser=false`. */
  marker?: string;
  /** message and announce: marker + newline + text, for a gateway that only forwards text. */
  prompt?: string;
  /** task: the requester's route; announce: where to post it. */
  route?: Route;
  /** task: how to start the run. */
  options?: SpawnOptions;
  createdAt: number;
}

export interface RunUpdate {
  runId: string;
  applied: boolean;
  status: string;
  deliveries: number[];
}

export interface UpstreamLinkInput {
  sessionKey: string;
  agentId?: string;
  catalogId: string;
  hostId: string;
  threadId: string;
  upstreamKind?: "jsonl";
  upstreamRef: { path: string };
  marker?: number;
}

export interface UpstreamLink extends Omit<UpstreamLinkInput, "upstreamKind"> {
  agentId: string;
  upstreamKind: string;
  marker: number;
  lastScannedAt?: number;
  missingCount?: number;
}

export interface PruneStats {
  rowsDeleted: number;
  sessionsTouched: number;
  cursorsExpired: number;
}

export interface VerifyReport {
  ok: boolean;
  recordsReplayed: number;
  headsChecked: number;
  cursorsChecked: number;
  rowsChecked: number;
  differences: string[];
}

export interface Stats {
  rows: number;
  sessions: number;
  cursors: number;
  pendingNotices: number;
  lastSequence: number;
  bytesOnDisk: number;
  /** Since the daemon's engine was opened. */
  eventsRecorded?: number;
  walBytes?: number;
  walBytesPerEvent?: number;
  /** Present while writes are refused: why. */
  writeError?: string;
}

export interface Health {
  status: "ok";
  version: string;
}

// ---- session tools -------------------------------------------------------------------------

export interface SessionStatusParams {
  /** Default (and "current"): the caller; a key or a registry session id. */
  sessionKey?: string;
  changesSince?: number | string;
  /** Sets the session's model override; "default" clears it. */
  model?: string;
}
export interface SessionUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
  contextTokens?: number;
  /** totalTokens as a share of the context window. */
  contextPercent?: number;
  source: "registry" | "transcript" | "registry+transcript" | "none";
}
export interface SessionStatusAnswer extends SessionState {
  sessionId?: string;
  kind: string;
  channel: string;
  label?: string;
  displayName?: string;
  /** The override when one is set, else the registry's model. */
  model?: string;
  modelOverride: boolean;
  /** The registry's model under an override. */
  defaultModel?: string;
  runtime?: string;
  thinking?: string;
  contextTokens?: number;
  totalTokens?: number;
  usage: SessionUsage;
  parentSessionKey?: string;
  sandboxed: boolean;
  createdAt?: number;
  /** The last activity: registry update, journal event or transcript message. */
  updatedAt?: number;
  ageMs?: number;
  activeRun?: { runId?: string; kind?: string; status?: string; startedAt?: number; requesterSessionKey?: string };
  backgroundTasks: Array<{ runId?: string; sessionKey?: string; label?: string; runtime?: string; startedAt?: number }>;
}

export interface SessionsListParams {
  kinds?: SessionKind[] | SessionKind;
  label?: string;
  agentId?: string;
  search?: string;
  /** Any activity within: a registry update, an event, a transcript append, a delivery. */
  activeMinutes?: number;
  /** Default 100; at most 200 are applied. */
  limit?: number;
  offset?: number;
  messageLimit?: number;
  includeDerivedTitles?: boolean;
  includeLastMessage?: boolean;
}
export interface SessionRow {
  key: string;
  agentId: string;
  kind: string;
  channel: string;
  displayName?: string;
  label?: string;
  model?: string;
  contextTokens?: number;
  totalTokens?: number;
  /** The last activity. */
  updatedAt: number;
  parentSessionKey?: string;
  stateVersion?: number;
  /** A spawned child's latest run. */
  status?: "running" | "done" | "failed" | "killed" | "timeout";
  /** Its visible children. */
  childSessions?: string[];
  /** With includeDerivedTitles: the first user message, cleaned, one line, 60 characters. */
  derivedTitle?: string;
  /** With includeLastMessage: the last user or assistant message, cleaned, one line, 120 characters. */
  lastMessagePreview?: string;
  messages?: Array<Record<string, unknown>>;
}
export interface SessionsListAnswer {
  count: number;
  sessions: SessionRow[];
  hasMore: boolean;
  nextOffset?: number;
  limitApplied: number;
  /** Titles, previews and messages were left out to fit 64 KiB. */
  enrichmentOmitted?: true;
  /** Rows were left out to fit 64 KiB; go on at nextOffset. */
  truncationReason?: "byte-limit";
  visibility?: { mode: "self" | "tree" | "agent"; restricted?: true; warning?: string };
}

export interface SessionsHistoryParams {
  sessionKey: string;
  limit?: number;
  includeTools?: boolean;
}
export interface SessionsHistoryAnswer {
  sessionKey: string;
  agentId?: string;
  messages: Array<{ role: string; content: unknown }>;
  truncated: boolean;
  droppedMessages: number;
  contentTruncated: boolean;
  contentRedacted: boolean;
  bytes: number;
}

export interface SessionsSendParams {
  sessionKey?: string;
  label?: string;
  agentId?: string;
  /** At most 80 KiB (bytes). */
  message: string;
  /** Default 30; 0 = fire and forget. */
  timeoutSeconds?: number;
  watch?: boolean;
}
export interface SessionsSendAnswer {
  runId: string;
  status: "accepted" | "ok" | "timeout" | "error" | "forbidden";
  reply?: string;
  error?: string;
  sessionKey?: string;
  watched?: boolean;
}

export interface SessionsSpawnParams {
  /** At most 80 KiB (bytes). */
  task: string;
  label?: string;
  runtime?: SpawnRuntime;
  agentId?: string;
  model?: string;
  thinking?: ThinkingLevel;
  thread?: boolean;
  sandbox?: "inherit" | "require";
  context?: "isolated" | "fork";
}
export interface SessionsSpawnAnswer {
  status: "accepted";
  runId: string;
  childSessionKey: string;
}

export interface SessionsYieldParams {
  message?: string;
}
export interface SessionsYieldAnswer {
  status: "yielded";
  message?: string;
  waitingFor?: number;
}

export interface SubagentsParams {
  action?: "list" | "steer" | "kill";
  target?: string;
  message?: string;
  /** 1..1440 */
  recentMinutes?: number;
}
export interface SubagentsAnswer {
  status: string;
  action?: string;
  text?: string;
  runId?: string;
  sessionKey?: string;
  killed?: number;
  [key: string]: unknown;
}

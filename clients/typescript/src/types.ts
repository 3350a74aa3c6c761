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

export interface SessionFields {
  agentId?: string;
  sessionId?: string;
  kind?: SessionKind;
  channel?: string;
  label?: string;
  model?: string;
  contextTokens?: number;
  totalTokens?: number;
  parentSessionKey?: string;
  sandboxed?: boolean;
  createdAt?: number;
  updatedAt?: number;
}

export interface SessionRecord extends Omit<SessionFields, "kind"> {
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

export interface Delivery {
  deliveryId: number;
  type: "message" | "task" | "steer" | "announce";
  sessionKey: string;
  agentId: string;
  runId: string;
  text: string;
  provenance: { sourceSessionKey: string; sourceTool: string; isUser: false };
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
  sessionKey?: string;
  changesSince?: number | string;
}
export interface SessionStatusAnswer extends SessionState {
  kind: string;
  channel?: string;
  label?: string;
  model?: string;
  sessionId?: string;
  contextTokens?: number;
  totalTokens?: number;
  parentSessionKey?: string;
  sandboxed?: boolean;
  createdAt?: number;
  updatedAt?: number;
}

export interface SessionsListParams {
  kinds?: SessionKind[] | SessionKind;
  label?: string;
  agentId?: string;
  search?: string;
  activeMinutes?: number;
  limit?: number;
  messageLimit?: number;
}
export interface SessionRow {
  key: string;
  agentId: string;
  kind: string;
  channel: string;
  label?: string;
  model?: string;
  contextTokens?: number;
  totalTokens?: number;
  updatedAt: number;
  parentSessionKey?: string;
  stateVersion?: number;
  messages?: Array<Record<string, unknown>>;
}
export interface SessionsListAnswer {
  count: number;
  sessions: SessionRow[];
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
  task: string;
  label?: string;
  runtime?: "subagent" | "acp";
  agentId?: string;
  model?: string;
  thinking?: "off" | "minimal" | "low" | "medium" | "high" | "xhigh";
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

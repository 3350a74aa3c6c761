// The daemon's routes the console reads, with the bearer token the operator typed. The token
// travels only in the Authorization header (never in a URL) and is kept in sessionStorage:
// it is gone when the tab closes. Every request is a same-origin GET, so the browser sends no
// Origin header and the daemon's Origin rule (server/request_guard.h) holds without an
// --allow-origin entry.

const TOKEN_KEY = "statewatch.console.token";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

// The token the operator connected with ("" for a daemon without one), or null before
// they connected.
export function savedToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

// GET `path` as JSON (or text when `text`), bounded by `timeoutMs`.
export async function get<T>(path: string, opts: { text?: boolean; timeoutMs?: number } = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: opts.text ? "text/plain" : "application/json" };
  const token = savedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), opts.timeoutMs ?? 5000);
  try {
    const response = await fetch(path, { headers, cache: "no-store", signal: abort.signal });
    const body = await response.text();
    if (!response.ok) {
      let code = "http_" + response.status;
      let message = body;
      try {
        const parsed = JSON.parse(body) as { error?: { code?: string; message?: string } };
        code = parsed.error?.code ?? code;
        message = parsed.error?.message ?? message;
      } catch {
        // not the JSON error envelope: keep the text
      }
      throw new ApiError(response.status, code, message);
    }
    return (opts.text ? body : JSON.parse(body)) as T;
  } catch (e) {
    if (e instanceof ApiError) throw e;
    throw new ApiError(0, "unreachable", `GET ${path}: ${e instanceof Error ? e.message : String(e)}`);
  } finally {
    clearTimeout(timer);
  }
}

// `${base}/{key}${rest}?query`, with agentId for a bare key.
export function sessionPath(key: string, agentId: string, rest: string, query = "", base = "/v1/sessions"): string {
  const q = new URLSearchParams(query);
  if (!/^agent:/i.test(key)) q.set("agentId", agentId);
  const qs = q.toString();
  return `${base}/${encodeURIComponent(key)}${rest}${qs ? "?" + qs : ""}`;
}

// ---- answer shapes (docs/openapi.json) ----------------------------------------------------

// The daemon's own answer types, generated from the route table with the TypeScript client
// (make openapi): the console does not spell them again.
export type {
  ChangeEvent,
  ClusterStatus,
  ConsoleCursor as CursorRow,
  ConsoleLinks as Links,
  ConsolePulse as Pulse,
  ConsoleSession,
  ConsoleWake as Wake,
  Health,
  SessionState,
} from "../../clients/typescript/src/generated/schemas.js";

// A WebSocket stream of JSON messages as an async iterator that reconnects with exponential
// backoff. Each (re)connection may first yield some catch-up items (`onConnect`), which is
// how wakes missed while disconnected and unacknowledged deliveries reach the consumer.
import WebSocket from "ws";

export interface BackoffOptions {
  /** First reconnect delay in ms (default 100). */
  initialDelayMs?: number;
  /** Largest reconnect delay in ms (default 5000); the delay doubles up to it. */
  maxDelayMs?: number;
}

/** TLS material for wss:// (and https://): PEM strings or Buffers. */
export interface TlsOptions {
  ca?: string | Buffer | Array<string | Buffer>;
  cert?: string | Buffer;
  key?: string | Buffer;
}

export interface StreamOptions<T> extends BackoffOptions {
  /** Asked at every (re)connect: a client with several endpoints moves on after a failure. */
  url: () => string;
  headers: Record<string, string>;
  /** CA and client certificate for wss:// URLs (ClientOptions.ca/cert/key). */
  tls?: TlsOptions;
  signal?: AbortSignal;
  /** Parses one text message; undefined drops it. */
  parse: (text: string) => T | undefined;
  /** Items to yield right after every connection but the first. */
  onReconnect?: () => Promise<T[]>;
  /** Called with every connection error (for logs); the stream reconnects regardless. */
  onError?: (error: Error) => void;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** One connection's messages, ending when the socket closes or `signal` aborts. `opened`
 * runs when the socket opens and may return catch-up items to yield too. */
async function* connection<T>(
  options: StreamOptions<T>,
  opened: () => Promise<T[]> | undefined,
): AsyncGenerator<T> {
  const ws = new WebSocket(options.url(), { headers: options.headers, ...options.tls });
  const queue: T[] = [];
  let wake: (() => void) | undefined;
  let closed = false;
  let catchingUp = false;
  let failure: Error | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  ws.on("open", () => {
    const pending = opened();
    if (!pending) return;
    catchingUp = true;
    pending
      .then((items) => queue.unshift(...items))
      .catch((error: Error) => options.onError?.(error))
      .finally(() => {
        catchingUp = false;
        notify();
      });
  });
  ws.on("message", (data) => {
    const item = options.parse(data.toString());
    if (item !== undefined) queue.push(item);
    notify();
  });
  ws.on("unexpected-response", (_req, res) => {
    failure = new Error(`WebSocket upgrade refused with HTTP ${res.statusCode}`);
    ws.terminate();
  });
  ws.on("error", (error) => {
    failure ??= error;
  });
  ws.on("close", () => {
    closed = true;
    notify();
  });
  const abort = () => ws.terminate();
  options.signal?.addEventListener("abort", abort, { once: true });
  try {
    for (;;) {
      while (queue.length > 0 && !catchingUp) yield queue.shift() as T;
      if ((closed && !catchingUp) || options.signal?.aborted) break;
      await new Promise<void>((resolve) => (wake = resolve));
    }
    if (failure) options.onError?.(failure);
  } finally {
    options.signal?.removeEventListener("abort", abort);
    if (!closed) ws.terminate();
  }
}

/** Messages from `options.url` until `options.signal` aborts or the consumer stops
 * iterating; a dropped connection is opened again after a growing, jittered delay. */
export async function* reconnectingStream<T>(options: StreamOptions<T>): AsyncGenerator<T> {
  const initial = options.initialDelayMs ?? 100;
  const max = options.maxDelayMs ?? 5000;
  let delay = initial;
  let everOpened = false;
  while (!options.signal?.aborted) {
    yield* connection(options, () => {
      delay = initial;
      const reconnect = everOpened;
      everOpened = true;
      return reconnect && options.onReconnect ? options.onReconnect() : undefined;
    });
    if (options.signal?.aborted) break;
    await sleep(delay * (0.5 + Math.random() / 2), options.signal);
    delay = Math.min(delay * 2, max);
  }
}

// A real `statewatch serve --manual-clock` for the tests: a fresh data directory, a free
// loopback port, stopped with SIGTERM (graceful) and restartable on the same port and data.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/** 2025-11-30T00:00:00Z: where the manual clock starts. */
export const START_MS = 1764460800000;

const here = dirname(fileURLToPath(import.meta.url));
// dist/test -> the package -> clients -> the repository root.
const BIN = process.env.STATEWATCH_BIN ?? resolve(here, "../../../../build/statewatch");

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export class Daemon {
  readonly dir = mkdtempSync(join(tmpdir(), "statewatch-client-test-"));
  port = 0;
  private child?: ChildProcess;

  /** `serveArgs` go to `statewatch serve` as given (--tls-cert …: then url is https://). */
  constructor(private readonly serveArgs: string[] = []) {}

  get url(): string {
    const scheme = this.serveArgs.includes("--tls-cert") ? "https" : "http";
    return `${scheme}://127.0.0.1:${this.port}`;
  }

  async start(clockMs = START_MS): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    const child = spawn(
      BIN,
      ["--data", join(this.dir, "data"), "--durability", "buffered", "serve", "--listen",
       `127.0.0.1:${this.port}`, "--manual-clock", String(clockMs), "--log-level", "warn", ...this.serveArgs],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    this.child = child;
    // The first stdout line ({"listening", "port"}) says it accepts connections.
    const lines = createInterface({ input: child.stdout! });
    await new Promise<void>((resolveStart, reject) => {
      const timer = setTimeout(() => reject(new Error(`${BIN} did not start within 10 s`)), 10000);
      lines.once("line", () => {
        clearTimeout(timer);
        resolveStart();
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`${BIN} exited with ${code} before listening`));
      });
    });
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    this.child = undefined;
    await new Promise<void>((resolveStop) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), 10000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolveStop();
      });
      child.kill("SIGTERM");
    });
  }

  async close(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Resolves with the iterator's next value, failing after `ms`. */
export async function next<V>(it: AsyncIterator<V>, ms = 10000): Promise<V> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no value within ${ms} ms`)), ms);
  });
  try {
    const result = await Promise.race([it.next(), timeout]);
    if (result.done) throw new Error("the stream ended");
    return result.value;
  } finally {
    clearTimeout(timer);
  }
}

/** The first value satisfying `match`, skipping others; fails after `ms` in all. */
export async function nextMatching<V>(it: AsyncIterator<V>, match: (v: V) => boolean, ms = 10000): Promise<V> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await next(it, Math.max(1, deadline - Date.now()));
    if (match(value)) return value;
  }
}

#!/usr/bin/env python3
"""Restart of `statewatch serve` after kill -9, at growing journals (make bench, step 2b).

The daemon (durability sync, a row cap above the journal) is filled over HTTP with the
standard mix — 1,000 sessions, 100 watchers on 10 targets each (1,000 cursors) — up to each
size in --rows. At each size, --trials times: a writer keeps recording batches of 100 events,
the daemon is killed with SIGKILL mid-load, and the time from the kill to the new daemon's
first `/healthz` 200 is measured (it includes the process start, RocksDB's WAL recovery, the
engine's open and replay, the restart sweep and binding the port). The resident memory of the
restarted daemon (VmRSS) is read once its healthz answers. Then a read-only
`statewatch --data DIR stats` runs beside the daemon: its wall time and peak memory (maxrss).

Sessions and cursors stay the same from size to size, so the ratio of two sizes shows what
the journal's length alone costs a restart. Prints one JSON object (also to --json):
  {"sizes": [{"rows": N, "restart_s": [...], "median_s": X, "rss_bytes": [...],
              "stats_s": [...], "stats_maxrss_bytes": [...]}], ...}
and a last line `rows N: restart median X s (max Y s), RSS Z MB, stats S s / M MB` per size.

Usage: restart_bench.py --bin build-release/statewatch [--rows 100000,1000000] [--trials 3]
       [--json OUT]
"""
import argparse
import http.client
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SESSIONS = 1000
WATCHERS = 100
TARGETS_PER_WATCHER = 10
FILL_BATCH = 1000
START_TIMEOUT_S = 120  # bounded wait for a restart


def session_key(i):
    return f"agent:main:subagent:s{i:08d}"


def start(binary, data):
    cmd = [binary, "--data", data, "--durability", "sync", "serve", "--listen", "127.0.0.1:0",
           "--max-rows", "100000000", "--log-level", "warn"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()  # {"listening": ..., "port": N} once bound
    if not line:
        raise RuntimeError(f"the daemon did not start (exit {proc.poll()})")
    return proc, json.loads(line)["port"]


def request(port, method, path, body=None, timeout=60):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=None if body is None else json.dumps(body),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def events(first, count):
    return [{"sessionKey": session_key((first + i) % SESSIONS), "kind": "human_direct_message",
             "actorType": "human", "summary": "human message via telegram"}
            for i in range(count)]


def seed_cursors(port):
    for w in range(WATCHERS):
        for t in range(TARGETS_PER_WATCHER):
            status, body = request(port, "POST", "/v1/watches",
                                   {"watcher": f"agent:w{w}:main",
                                    "target": session_key(w * TARGETS_PER_WATCHER + t)})
            if status != 200:
                raise RuntimeError(f"watch: {status} {body[:200]!r}")


def journal_rows(port):
    status, body = request(port, "GET", "/v1/stats")
    if status != 200:
        raise RuntimeError(f"stats: {status} {body[:200]!r}")
    return json.loads(body)["rows"]


def fill_to(port, rows):
    have = journal_rows(port)
    while have < rows:
        n = min(FILL_BATCH, rows - have)
        status, body = request(port, "POST", "/v1/events", events(have, n))
        if status != 200:
            raise RuntimeError(f"fill: {status} {body[:200]!r}")
        have += n
    return have


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Writer(threading.Thread):
    """Records batches of 100 until told to stop; errors (the kill) end it."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.stop, self.sent = port, threading.Event(), 0

    def run(self):
        for _ in range(1_000_000):  # bounded
            if self.stop.is_set():
                return
            try:
                status, _ = request(self.port, "POST", "/v1/events", events(self.sent, 100), 10)
            except OSError:
                return
            if status != 200:
                return
            self.sent += 100


def restart_once(binary, data, proc, port):
    writer = Writer(port)
    writer.start()
    for _ in range(200):  # until some load is under way (bounded, ~2 s)
        if writer.sent >= 500:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    proc.wait()
    proc.stdout.close()
    writer.stop.set()
    writer.join(timeout=30)
    proc, port = start(binary, data)
    for _ in range(START_TIMEOUT_S * 100):
        try:
            status, _ = request(port, "GET", "/healthz", timeout=5)
            if status == 200:
                return proc, port, time.monotonic() - killed
        except OSError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"no /healthz 200 within {START_TIMEOUT_S} s of the restart")


def read_only_stats(binary, data):
    """Wall seconds and peak resident bytes of one read-only `stats` beside the daemon."""
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "--data", data, "stats"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"statewatch stats exited {proc.returncode}")
    return time.monotonic() - t0, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", default="100000,1000000")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--json")
    args = ap.parse_args()
    sizes = [int(x) for x in args.rows.split(",")]
    tmp = tempfile.mkdtemp(prefix="statewatch-restart-")
    data = os.path.join(tmp, "data")
    out = {"sessions": SESSIONS, "cursors": WATCHERS * TARGETS_PER_WATCHER, "sizes": []}
    proc = None
    try:
        proc, port = start(args.bin, data)
        seed_cursors(port)
        for rows in sizes:
            print(f"restart_bench: filling to {rows:,} rows", file=sys.stderr)
            fill_to(port, rows)
            times, rss, stats_s, stats_rss = [], [], [], []
            for _ in range(args.trials):
                proc, port, secs = restart_once(args.bin, data, proc, port)
                times.append(secs)
                rss.append(rss_bytes(proc.pid))
                secs, peak = read_only_stats(args.bin, data)
                stats_s.append(secs)
                stats_rss.append(peak)
            out["sizes"].append({"target": rows, "rows": journal_rows(port), "restart_s": times,
                                 "median_s": statistics.median(times), "rss_bytes": rss,
                                 "stats_s": stats_s, "stats_maxrss_bytes": stats_rss})
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        shutil.rmtree(tmp, ignore_errors=True)
    text = json.dumps(out)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    for s in out["sizes"]:
        print(f"rows {s['rows']}: restart median {s['median_s']:.3f} s "
              f"(max {max(s['restart_s']):.3f} s), RSS {statistics.median(s['rss_bytes']) / 2**20:.0f} MB, "
              f"stats {statistics.median(s['stats_s']):.3f} s / "
              f"{statistics.median(s['stats_maxrss_bytes']) / 2**20:.0f} MB")


if __name__ == "__main__":
    main()

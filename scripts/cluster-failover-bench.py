#!/usr/bin/env python3
"""What a client sees when ownership changes under stage 2a (docs/cluster-internals.md,
"A local cluster, chaos, and what a client measures").

On a LocalCluster (cluster_lib.py: three etcd members, three nats-servers, three nodes,
two partitions) one client records events into partition 0 back to back, each with a
dedupe key, re-resolving the owner from the cluster status whenever a request is refused
(503, 421, connection refused) or its answer is lost. Measured, per lease TTL:

  failover  kill -9 of partition 0's owner node, TRIALS times (the node is restarted and
            the partition has an owner and a standby again before the next trial):
            the unavailability is the time from the kill to the next acknowledgement
  move      a planned move of partition 0 to another node, TRIALS times: the longest
            time between two acknowledgements while the move runs (the write stall)
  cost      the control plane's cost: on partition 0's owner, alternately under the nodes
            and — the nodes stopped — on stage-1 daemons (`serve --cluster --partition p
            --role owner|standby`, no etcd: an owner and a standby per partition, as the
            nodes ran) over the same streams, three rounds: events/s of the one client for
            --rate-seconds (with the longest time between two acknowledgements: the steady
            state's stalls, e.g. a cluster checkpoint) and of wrk with 4 connections;
            medians of the rounds

Prints one JSON line per figure and a summary; `--out FILE` writes them as JSON.

  cluster-failover-bench.py --statewatch BIN [--ttl 5 --ttl 2] [--trials 20]
                            [--rate-seconds 20] [--out FILE]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_lib import (LocalCluster, NotLanded, agents_of, call, post,  # noqa: E402
                         wait_for, wrk_events)

KIND = "human_direct_message"


class Client(threading.Thread):
    """Records events into partition 0 back to back; keeps the time of every acknowledgement."""

    def __init__(self, cluster, fixed_url=None):
        super().__init__(daemon=True)
        self.c, self.fixed = cluster, fixed_url
        agent = agents_of(cluster.state["partitions"], 0, "bench", 1)[0]
        self.session = "agent:%s:main" % agent
        self.acks = []
        self.sent = []   # when the request of each acknowledgement was sent
        self.trace = []  # (time, url, why) of every request that was not acknowledged
        self.stop = threading.Event()
        self.url = fixed_url
        self.i = 0

    def run(self):
        while not self.stop.is_set():
            if self.url is None:
                self.url = self.c.owner_urls(ready_only=False).get(0)
                if self.url is None:
                    time.sleep(0.02)
                    continue
            ev = {"sessionKey": self.session, "kind": KIND, "actorType": "human",
                  "summary": "bench %d" % self.i, "dedupeKey": "bench-%d-%d" % (os.getpid(), self.i)}
            sent = time.monotonic()
            try:
                call(lambda: post(self.url + "/v1/events", ev, timeout=10))
            except (NotLanded, urllib.error.URLError, OSError, ValueError) as e:
                self.trace.append((time.monotonic(), self.url, str(e)[:80]))
                self.url = self.fixed
                time.sleep(0.02)
                continue
            self.acks.append(time.monotonic())
            self.sent.append(sent)
            self.i += 1

    def first_ack_after(self, t, seconds=60):
        """The acknowledgement of the first request sent after t (one in flight at t may be
        answered by a process killed at t: its answer was on the wire)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            n = len(self.acks)
            later = [self.acks[i] for i in range(max(0, n - 200), n) if self.sent[i] > t]
            if later:
                return later[0]
            time.sleep(0.01)
        raise RuntimeError("no acknowledgement within %d s" % seconds)

    def longest_gap(self, t0, t1):
        times = [a for a in self.acks if t0 <= a <= t1]
        edges = [t0] + times + [t1]
        return max(b - a for a, b in zip(edges, edges[1:]))


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(q / 100.0 * (len(v) - 1))))]


def summary(name, values):
    return {"figure": name, "trials": len(values), "p50_ms": round(pct(values, 50) * 1000),
            "p99_ms": round(pct(values, 99) * 1000), "max_ms": round(max(values) * 1000),
            "mean_ms": round(statistics.mean(values) * 1000)}


def emit(results, record):
    results.append(record)
    print(json.dumps(record), flush=True)


def run_ttl(a, ttl, results):
    work = tempfile.mkdtemp(prefix="statewatch-failover.", dir=a.dir)
    c = LocalCluster.create(work, a.statewatch, nodes=3, partitions=2, lease_ttl=ttl,
                            name="bench")
    try:
        c.up()
        c.wait_ready(seconds=90)
        client = Client(c)
        client.start()
        client.first_ack_after(time.monotonic())
        failover = []
        for t in range(a.trials if a.failover_trials is None else a.failover_trials):
            c.wait_settled()
            owner = c.status()["partitions"][0]["owner"]
            killed = time.monotonic()
            c.kill(owner)
            back = client.first_ack_after(killed)
            failover.append(back - killed)
            print("ttl %d s, failover %d: %s killed, writes back after %.0f ms"
                  % (ttl, t + 1, owner, (back - killed) * 1000), flush=True)
            if back - killed > 2 * ttl or a.verbose:
                for when, url, why in client.trace:
                    if when >= killed:
                        print("    +%5.0f ms %s %s" % ((when - killed) * 1000, url, why))
            c.start_node(owner)
            c.wait_node(owner)
        if failover:
            emit(results, dict(summary("failover_kill9", failover), lease_ttl_s=ttl))
        move = []
        for t in range(a.trials):
            c.wait_settled()
            s = c.status()
            owner = s["partitions"][0]["owner"]
            to = [n for n in c.node_names() if n != owner][t % 2]
            t0 = time.monotonic()
            post(c.node_url(to) + "/v1/cluster/move", {"partition": 0, "to": to}, timeout=60)
            wait_for("partition 0 owned by %s" % to,
                     lambda: c.status()["partitions"][0]["owner"] == to, 30)
            client.first_ack_after(time.monotonic())
            t1 = time.monotonic()
            move.append(client.longest_gap(t0, t1))
            print("ttl %d s, move %d: %s -> %s, longest write gap %.0f ms"
                  % (ttl, t + 1, owner, to, move[-1] * 1000), flush=True)
            if move[-1] > 0.2 or a.verbose:
                for when, url, why in client.trace:
                    if when >= t0:
                        print("    +%5.0f ms %s %s" % ((when - t0) * 1000, url, why))
        emit(results, dict(summary("planned_move_stall", move), lease_ttl_s=ttl))
        client.stop.set()
        client.join(15)
        if a.rate_seconds > 0:
            rate(a, c, ttl, results)
    except Exception:
        print("the cluster's status: %s" % json.dumps(c.status()), file=sys.stderr)
        print("logs and data kept in %s" % work, file=sys.stderr)
        c.down()
        raise
    c.down()
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


def measure_rate(c, url, seconds):
    """(events/s, the longest time between two acknowledgements) of one client at url."""
    client = Client(c, fixed_url=url)
    client.start()
    time.sleep(1.0)  # warm-up
    n0, t0 = len(client.acks), time.monotonic()
    time.sleep(seconds)
    n1, t1 = len(client.acks), time.monotonic()
    client.stop.set()
    client.join(15)
    return (n1 - n0) / (t1 - t0), client.longest_gap(t0, t1)


def start_stage1(c, name, p, role):
    """A stage-1 daemon (no etcd) for partition p of the cluster's streams; its URL."""
    port_file = os.path.join(c.dir, name + ".port")
    c._spawn(name, [
        c.state["statewatch"], "serve", "--data", os.path.join(c.dir, name),
        "--listen", "127.0.0.1:0", "--port-file", port_file, "--cluster", c.nats_urls(),
        "--partitions", str(c.state["partitions"]), "--partition", str(p), "--role", role,
        "--cluster-checkpoint-every", str(c.state["checkpointEvery"])])
    wait_for("%s listening" % name, lambda: os.path.getsize(port_file) > 0, 60)
    return "http://127.0.0.1:%s" % open(port_file).read().strip()


def wrk_rate(c, url, seconds):
    """Events/s wrk sustains on url with 4 connections (every answer must be 2xx)."""
    session = "agent:%s:main" % agents_of(c.state["partitions"], 0, "wrk", 1)[0]
    return wrk_events(c.dir, url, session, seconds)


def measure_phase(c, url, seconds):
    one, gap = measure_rate(c, url, seconds)
    return {"one_client": one, "gap": gap, "wrk": wrk_rate(c, url, seconds)}


def rate(a, c, ttl, results, rounds=3):
    """The same partition's stream, alternately under the control plane (the nodes) and
    without it (stage-1 daemons: an owner and a standby per partition, which is what a node
    runs as its slots, no etcd), `rounds` times: the difference is the leases, the controller
    and the node. Medians of the rounds."""
    phases = {"with": [], "without": []}
    P = c.state["partitions"]
    warm = "agent:%s:main" % agents_of(P, 0, "warm", 1)[0]
    for r in range(rounds):
        if r > 0:
            for n in c.node_names():
                c.start_node(n)
            for n in c.node_names():
                c.wait_node(n)
        c.wait_settled()
        phases["with"].append(measure_phase(c, c.owner_urls()[0], a.rate_seconds))
        for n in c.node_names():
            c.kill(n)
        urls = {}
        for p in range(P):
            urls[p] = start_stage1(c, "stage1-owner%d-%d" % (p, r), p, "owner")
            start_stage1(c, "stage1-standby%d-%d" % (p, r), p, "standby")
        wait_for("the stage-1 owner serving",
                 lambda: post(urls[0] + "/v1/events", {
                     "sessionKey": warm, "kind": KIND, "actorType": "human",
                     "summary": "warm"}, timeout=5) is not None, 60)
        phases["without"].append(measure_phase(c, urls[0], a.rate_seconds))
        for p in range(P):
            c.kill("stage1-owner%d-%d" % (p, r))
            c.kill("stage1-standby%d-%d" % (p, r))
        print("rate round %d: %s" % (r + 1, json.dumps(
            {k: {m: round(v[-1][m], 3) for m in v[-1]} for k, v in phases.items()})),
            flush=True)

    def med(k, m):
        return statistics.median(x[m] for x in phases[k])
    emit(results, {"figure": "control_plane_cost", "lease_ttl_s": ttl, "rounds": rounds,
                   "one_client_events_per_s_with": round(med("with", "one_client")),
                   "one_client_events_per_s_without": round(med("without", "one_client")),
                   "one_client_ratio": round(med("with", "one_client") /
                                             med("without", "one_client"), 3),
                   "wrk_events_per_s_with": round(med("with", "wrk")),
                   "wrk_events_per_s_without": round(med("without", "wrk")),
                   "wrk_ratio": round(med("with", "wrk") / med("without", "wrk"), 3),
                   "longest_gap_ms_with": round(max(x["gap"] for x in phases["with"]) * 1000),
                   "longest_gap_ms_without": round(
                       max(x["gap"] for x in phases["without"]) * 1000)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--statewatch", required=True)
    ap.add_argument("--ttl", type=int, action="append")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--failover-trials", type=int, help="default: --trials")
    ap.add_argument("--rate-seconds", type=int, default=10)
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true", help="keep the clusters' directories")
    ap.add_argument("--verbose", action="store_true", help="every refused request of a trial")
    ap.add_argument("--dir", help="where the clusters' directories go (default: /tmp)")
    a = ap.parse_args()
    results = []
    for i, ttl in enumerate(a.ttl or [5, 2]):
        if i > 0:
            a.rate_seconds = 0  # the control plane's cost does not depend on the TTL
        run_ttl(a, ttl, results)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

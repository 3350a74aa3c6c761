#!/usr/bin/env python3
"""CPU-normalised scaling from 1 to 3 nodes (docs/cluster-internals.md,
"One address per node: any node answers any session"): on one 2-core machine wall-clock
scaling cannot show, CPU efficiency can. For 1 node, then 3 nodes, each with
P partitions (default 12) on a local cluster: one client thread per partition records events
back to back into a session of that partition at its owner's slot (keep-alive connections,
a batch of `--batch` events per request), for `--seconds`; the statewatch nodes' CPU time
(user + system, from /proc) over the same window is read before and after.

  events per CPU-second = events acknowledged ÷ CPU seconds the nodes spent

Reported: both figures and their ratio (3 nodes ÷ 1 node; the goal is ≥ 0.8), and the same
with the nats-servers' CPU counted too. With 3 nodes every partition also has a standby that
folds the stream, which a single node (no standby) does not pay: the ratio includes that.
Where it goes: the CPU of the threads named `sw-standby` (the folds) is reported apart, with
the ratio computed without it as well — a profile figure, not the goal's.

  scripts/cluster-scaling-bench.py --statewatch build/statewatch [--partitions 12]
                                   [--seconds 15] [--batch 20] [--out FILE]
"""
import http.client
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cli  # noqa: E402
import cluster_lib as cl  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` (all its threads)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def standby_cpu_seconds(pid):
    """User + system CPU seconds of the threads of `pid` named sw-standby: the standbys'
    folds (cluster/follower.cc names its thread); threads that ended are not counted."""
    total = 0.0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                head, rest = f.read().rsplit(")", 1)
        except OSError:
            continue  # the thread ended
        if head.split("(", 1)[1] == "sw-standby":
            fields = rest.split()
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


class Writer(threading.Thread):
    def __init__(self, url, session, batch, stop):
        super().__init__(daemon=True)
        host, port = url[len("http://"):].split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.session, self.batch, self.stop = session, batch, stop
        self.acked, self.errors = 0, 0

    def run(self):
        n = 0
        while not self.stop.is_set():
            body = json.dumps([{"sessionKey": self.session, "kind": "human_direct_message",
                                "actorType": "human", "summary": "e%d" % (n + i)}
                               for i in range(self.batch)])
            n += self.batch
            try:
                self.conn.request("POST", "/v1/events", body, {"Content-Type": "application/json"})
                r = self.conn.getresponse()
                r.read()
                if r.status == 200:
                    self.acked += self.batch
                else:
                    self.errors += 1
            except OSError:
                self.errors += 1
                self.conn.close()


def measure(statewatch, nodes, partitions, seconds, batch, work):
    c = cl.LocalCluster.create(os.path.join(work, "n%d" % nodes), statewatch, nodes=nodes,
                               partitions=partitions)
    try:
        c.up()
        c.wait_ready(standbys=nodes > 1)
        if nodes > 1:
            c.wait_settled()
        owners = c.owner_urls()
        stop = threading.Event()
        writers = [Writer(owners[p], "agent:%s:main" % cl.agents_of(partitions, p, "s", 1)[0],
                          batch, stop) for p in range(partitions)]
        for w in writers:
            w.start()
        time.sleep(2)  # warm-up: connections open, engines warm
        node_pids = [c.pid(n) for n in c.node_names()]
        nats_pids = [c.pid(n["name"]) for n in c.state["nats"]]
        a0 = sum(w.acked for w in writers)
        n0 = sum(cpu_seconds(p) for p in node_pids)
        f0 = sum(standby_cpu_seconds(p) for p in node_pids)
        s0 = sum(cpu_seconds(p) for p in nats_pids)
        t0 = time.monotonic()
        time.sleep(seconds)
        a1 = sum(w.acked for w in writers)
        n1 = sum(cpu_seconds(p) for p in node_pids)
        f1 = sum(standby_cpu_seconds(p) for p in node_pids)
        s1 = sum(cpu_seconds(p) for p in nats_pids)
        t1 = time.monotonic()
        stop.set()
        for w in writers:
            w.join(35)
        events = a1 - a0
        return {"nodes": nodes, "partitions": partitions, "seconds": round(t1 - t0, 2),
                "events": events, "events_per_s": round(events / (t1 - t0)),
                "node_cpu_s": round(n1 - n0, 2), "nats_cpu_s": round(s1 - s0, 2),
                "standby_fold_cpu_s": round(f1 - f0, 2),
                "events_per_node_cpu_s_without_folds": round(
                    events / max(n1 - n0 - (f1 - f0), 1e-9)),
                "events_per_node_cpu_s": round(events / max(n1 - n0, 1e-9)),
                "events_per_cpu_s_with_nats": round(events / max(n1 - n0 + s1 - s0, 1e-9)),
                "refused": sum(w.errors for w in writers)}
    finally:
        c.down()


def main():
    a = bench_cli.parse_args(__doc__, partitions=12, seconds=15, batch=20)
    with bench_cli.scratch("statewatch-scaling.") as work:
        one = measure(a.statewatch, 1, a.partitions, a.seconds, a.batch, work)
        print(json.dumps(one), flush=True)
        three = measure(a.statewatch, 3, a.partitions, a.seconds, a.batch, work)
        print(json.dumps(three), flush=True)
        result = {"figure": "cpu_normalised_scaling", "one_node": one, "three_nodes": three,
                  "ratio_node_cpu": round(three["events_per_node_cpu_s"] /
                                          one["events_per_node_cpu_s"], 3),
                  "ratio_with_nats": round(three["events_per_cpu_s_with_nats"] /
                                           one["events_per_cpu_s_with_nats"], 3),
                  # Where the rest goes: the same ratio without the standbys' folds (a
                  # profile figure, not the goal's).
                  "ratio_node_cpu_without_folds": round(
                      three["events_per_node_cpu_s_without_folds"] /
                      one["events_per_node_cpu_s_without_folds"], 3),
                  "goal": 0.8}
        cl.report(result, a.out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What forwarding costs (docs/cluster-internals.md,
"One address per node: any node answers any session"): on a local cluster of three nodes,
the same load sent straight to a partition's owner (its slot URL) and through another node's
own port, which forwards it; alternating, `--rounds` times, medians reported as ratios.

  events   wrk, 4 connections, one event per request into one session of partition 0
  drains   one client draining a watcher, back to back: on the owner's slot a drain reads
           one partition; through a node it is asked of all P partitions in parallel

  scripts/cluster-forward-bench.py --statewatch build/statewatch [--seconds 10] [--rounds 3]
                                   [--partitions 6] [--out FILE]
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_cli  # noqa: E402
import cluster_lib as cl  # noqa: E402

def drain_rate(url, watcher, seconds):
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        body = cl.post(url + "/v1/notices/drain", {"watcher": watcher})
        if body.get("incomplete"):
            raise RuntimeError("an incomplete drain with every node up: %s" % body)
        n += 1
    return n / (time.monotonic() - t0)


def main():
    a = bench_cli.parse_args(__doc__, seconds=10, rounds=3, partitions=6)
    with bench_cli.scratch("statewatch-forward-bench.") as work:
        c = cl.LocalCluster.create(os.path.join(work, "cluster"), a.statewatch, nodes=3,
                                   partitions=a.partitions)
        try:
            c.up()
            cl.report(measure(c, a, work), a.out)
        finally:
            c.down()


def measure(c, a, work):
    """Events and drains, straight to partition 0's owner and through another node."""
    c.wait_settled()
    status = c.status()
    p0 = next(p for p in status["partitions"] if p["partition"] == 0)
    owner_url = p0["ownerUrl"]
    other = next(n for n in c.node_names() if n != p0["owner"])
    node_url = c.node_url(other)
    agent = cl.agents_of(a.partitions, 0, "bench", 1)[0]
    session = "agent:%s:main" % agent
    watcher = "agent:%s:watcher" % agent
    cl.post(owner_url + "/v1/watches", {"watcher": watcher, "target": session})
    rows = {"events_owner": [], "events_forwarded": [], "drains_owner": [],
            "drains_forwarded": []}
    for r in range(a.rounds):
        rows["events_owner"].append(cl.wrk_events(work, owner_url, session, a.seconds))
        rows["events_forwarded"].append(cl.wrk_events(work, node_url, session, a.seconds))
        rows["drains_owner"].append(drain_rate(owner_url, watcher, a.seconds))
        rows["drains_forwarded"].append(drain_rate(node_url, watcher, a.seconds))
        print("round %d: %s" % (r + 1, json.dumps({k: round(v[-1]) for k, v in rows.items()})),
              flush=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {"figure": "forwarding_cost", "partitions": a.partitions, "rounds": a.rounds,
            "seconds": a.seconds,
            "events_per_s_owner": round(med["events_owner"]),
            "events_per_s_forwarded": round(med["events_forwarded"]),
            "events_forwarded_ratio": round(med["events_forwarded"] / med["events_owner"], 3),
            "drains_per_s_owner": round(med["drains_owner"]),
            "drains_per_s_forwarded": round(med["drains_forwarded"]),
            "drains_forwarded_ratio": round(med["drains_forwarded"] / med["drains_owner"], 3)}


if __name__ == "__main__":
    main()

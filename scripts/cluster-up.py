#!/usr/bin/env python3
"""scripts/cluster-up.sh's work: start a LocalCluster (cluster_lib.py) and wait until it
serves, or stop one. See cluster-up.sh for the usage."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_lib  # noqa: E402


def up(a):
    c = cluster_lib.LocalCluster.create(a.dir, a.statewatch, nodes=a.nodes,
                                        partitions=a.partitions, lease_ttl=a.lease_ttl)
    try:
        c.up()
        c.wait_ready(seconds=90)
    except Exception as e:  # say why, stop what started, keep the logs
        print("the cluster did not come up: %s (logs in %s)" % (e, a.dir), file=sys.stderr)
        c.down()
        os.remove(os.path.join(a.dir, "cluster.json"))
        return 1
    nodes = ",".join(c.node_url(n) for n in c.node_names())
    with open(os.path.join(a.dir, "env"), "w") as f:
        f.write("STATEWATCH_ETCD=%s\nSTATEWATCH_NATS=%s\nSTATEWATCH_NODES=%s\n"
                "STATEWATCH_CLUSTER_NAME=%s\n" % (c.etcd_urls(), c.nats_urls(), nodes,
                                                  c.state["name"]))
    s = c.status()
    for n in c.node_names():
        print("node %s %s" % (n, c.node_url(n)))
    print("cluster \"%s\" is up: %d nodes, %d partitions, controller %s; logs and data in %s"
          % (c.state["name"], a.nodes, a.partitions, s.get("controller"), a.dir))
    print("  etcd:   %s\n  nats:   %s" % (c.etcd_urls(), c.nats_urls()))
    for p in s["partitions"]:
        print("  partition %d: owner %s at %s, standby %s" % (p["partition"], p["owner"],
                                                             p["ownerUrl"], p["standby"]))
    sw = c.state["statewatch"]
    print("try:\n  %s cluster status --etcd %s --cluster-name %s\n"
          "  curl %s/healthz\n  scripts/cluster-up.sh %s --down"
          % (sw, c.etcd_urls(), c.state["name"], c.node_url(c.node_names()[0]), a.dir))
    return 0


def down(a):
    if not os.path.exists(os.path.join(a.dir, "cluster.json")):
        print("no cluster in %s" % a.dir, file=sys.stderr)
        return 1
    c = cluster_lib.LocalCluster.load(a.dir)
    n = len(c.state["pids"])
    c.down()
    os.remove(os.path.join(a.dir, "cluster.json"))
    print("stopped %d processes; the data stays in %s" % (n, a.dir))
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    u = sub.add_parser("up")
    u.add_argument("dir")
    u.add_argument("--statewatch", required=True)
    u.add_argument("--nodes", type=int, default=3)
    u.add_argument("--partitions", type=int, default=4)
    u.add_argument("--lease-ttl", type=int, default=5)
    d = sub.add_parser("down")
    d.add_argument("dir")
    a = ap.parse_args()
    if a.cmd == "up" and not 1 <= a.nodes <= 16:
        ap.error("--nodes must be from 1 to 16 (got %d)" % a.nodes)
    if a.cmd == "up" and not 1 <= a.partitions <= 256:
        ap.error("--partitions must be from 1 to 256 (got %d)" % a.partitions)
    return up(a) if a.cmd == "up" else down(a)


if __name__ == "__main__":
    sys.exit(main())

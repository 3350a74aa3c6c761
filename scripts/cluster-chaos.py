#!/usr/bin/env python3
"""Seeded chaos against a local stage-2a cluster (docs/cluster-internals.md,
"A local cluster, chaos, and what a client measures").

Starts a LocalCluster (cluster_lib.py: three etcd members, three nats-servers, three nodes),
keeps a writer per partition busy and, one after another, injects faults drawn from a seeded
random sequence, each healed before the next:

  kill-owner       kill -9 the node owning a partition; restart it later
  kill-controller  kill -9 the elected controller's node; restart it later
  pause-node       SIGSTOP a node for longer than the lease TTL, then SIGCONT: on waking it
                   must refuse what it served (503) before it is restarted
  kill-etcd        kill -9 one etcd member; restart it later (quorum stays)
  kill-nats        kill -9 one nats-server; restart it later
  move             a planned move of a partition to another node (POST /v1/cluster/move)
  drain            drain a node, then restart it (a drain lasts until the node restarts)

A writer resolves its partition's owner from the cluster status and retries a request
refused before it landed (503, 421, connection refused) on whatever owner the status names
next. Two events in three carry a dedupe key: a request whose answer was lost is retried
until it is acknowledged; one without a key whose answer was lost is an unknown outcome.
Every event must be acknowledged within --event-timeout seconds.

The checker, once every fault is healed and every partition has an owner and a standby:
every acknowledged event present exactly once, an unknown outcome at most once, nothing
else; every sequence n*P+p of its partition, unique across partitions, increasing per
session; each watcher's pending notices equal to what the reference model (the
cluster_smoke_model binary) gives for the partition's operations and the restart sweeps of
the owners that took it over (placed among them by the takeover times the nodes logged);
each drain's delivered notices equal to those the model's drain acknowledged (the cursors it
moved): a notice acknowledged but never delivered is lost, one delivered twice duplicated;
each owner's `verify` clean and its standby's projection digest equal to its own.

Last lines: `notices: delivered N, lost 0, duplicated 0, drains completed by a retry K,
unknown U` and `faults F, failovers K, acknowledged N, lost 0, duplicated 0, verify ok,
digests equal, failover p50 X ms p99 Y ms` (a failover: a partition whose owner changed
under an unplanned fault; its time: the longest write gap of that partition's writer in it).
Exit 0 only then.

  cluster-chaos.py [--statewatch BIN] [--model BIN] [--seed S] [--seconds D]
                   [--partitions P] [--lease-ttl T] [--dir DIR] [--keep] [--via-nodes]

With --via-nodes the even partitions' writers go through random nodes' own ports, and a
Messenger (scripts/chaos_messenger.py) sends messages and spawns children across partitions
through them, checked for each message landing once and each completion announced once;
and every drain carries an X-Request-Id, kept on its retries (docs/request-ids.md): one
whose answer was lost, or whose partition's part was missing from a node's fan-out, is
asked again under the same id until that part comes back, replayed if it had applied.

--statewatch defaults to $STATEWATCH_BIN; scripts/cluster-chaos.sh runs it on the build's.
"""
import argparse
import bisect
import datetime
import itertools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos_messenger  # noqa: E402
from cluster_lib import (LocalCluster, NotLanded, agents_of, call, get, post,  # noqa: E402
                         print_log_tails, wait_for)

KIND = "human_direct_message"
FAULTS = ["kill-owner", "kill-controller", "pause-node", "kill-etcd", "kill-nats", "move",
          "drain"]


def log(msg):
    print("[%7.1f] %s" % (time.monotonic() - T0, msg), flush=True)


def error_code(body):
    """The code of an {"error": {"code": ...}} answer, or None."""
    try:
        return json.loads(body)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


T0 = time.monotonic()


class Writer(threading.Thread):
    """The partition's only writer: registers two watchers' watches, then records events and
    drains one watcher every DRAIN_EVERY events until stopped. It runs one request at a time,
    so the order of its operations is the partition's, and it logs them (self.ops) for the
    reference model as scripts/cluster-smoke.py does: watch, record (with the sequence the
    engine gave), drain. Each carries "t": [from, to], the wall-clock times between which the
    partition applied it (from the start of the first try that may have landed to the
    answer), which place the restart sweeps of the owners that took the partition over
    among them (tenures_of). Each drain line carries its number ("id"), under which
    self.delivered keeps the notices the drain delivered, for the checker.

    With request_ids, a drain carries a fresh X-Request-Id and is retried under it until its
    partition's part of the answer comes back (a partition applies it once and replays its
    answer to a retry); without, a drain whose answer was lost is an unknown outcome."""

    DRAIN_EVERY = 25
    PATH_DRAIN = "/v1/notices/drain"

    def __init__(self, cluster, p, event_timeout, via_nodes=False, rng=None, request_ids=False):
        super().__init__(daemon=True)
        self.cluster, self.p, self.event_timeout = cluster, p, event_timeout
        self.request_ids = request_ids
        # Through nodes: each request goes to a random node's own port, which forwards it to
        # the owner (server/partition_router.h); "who answered" is the owner node the answer
        # names (X-Statewatch-Owner), and a drain asks every partition.
        self.via_nodes, self.rng = via_nodes, rng or random.Random(p)
        P = cluster.state["partitions"]
        agents = agents_of(P, p, "chaos", 2)
        self.sessions = ["agent:%s:s%d" % (a, j) for a in agents for j in range(2)]
        self.watchers = ["agent:boss%d:main" % p, "agent:audit%d:main" % p]
        self.acked = []      # (summary, session, sequence, time acknowledged, url)
        self.unknown = []    # summaries whose answer was lost (no dedupe key)
        self.ops = []
        self.drains = 0      # drains logged; a drain's number is its line's "id"
        self.delivered = {}  # drain number -> the notices of self.sessions it delivered
        self.drain_ids = {}  # drain number -> its X-Request-Id, for the problem lines
        self.retried = 0     # drains lost or incomplete at first, then completed by a retry
        self.unknown_drains = 0
        self.failure = None
        self.stop = threading.Event()
        self.url = None      # where the next request goes
        self.sent_at = None  # when the try send() returned for began (time.time())

    def owner_url(self):
        return self.cluster.owner_urls(ready_only=False).get(self.p)

    def send_via_node(self, path, body, headers=None):
        """(answer, owner node) through a random live node; NotLanded when nothing landed
        (the node refused, or its retries found no owner); "lost" when the answer was lost."""
        nodes = [n for n in self.cluster.node_names() if self.cluster.alive(n)]
        if not nodes:
            raise NotLanded("no live node")
        url = self.cluster.node_url(self.rng.choice(nodes)) + path
        req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers=dict(headers or {},
                                                  **{"Content-Type": "application/json"}))
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                owner = r.headers.get("X-Statewatch-Owner")
                if owner is None:  # a fan-out (a drain): the owner of this partition
                    owners = dict(x.split("=", 1) for x in
                                  (r.headers.get("X-Statewatch-Owners") or "").split(",") if x)
                    owner = owners.get(str(self.p))
                return json.loads(r.read()), owner
        except urllib.error.HTTPError as e:
            if e.code in (503, 421):
                raise NotLanded("HTTP %d" % e.code)
            if e.code == 502:
                return "lost", None
            raise
        except urllib.error.URLError as e:
            if isinstance(e.reason, ConnectionRefusedError):
                raise NotLanded("connection refused")
            return "lost", None
        except (ConnectionRefusedError,):
            raise NotLanded("connection refused")
        except OSError:
            return "lost", None

    def send(self, path, body, what):
        """(answer, url) once a request is acknowledged; ("lost", url) when its answer was lost
        (it may have landed at url); None when not within the event timeout."""
        deadline = time.monotonic() + self.event_timeout
        while self.via_nodes and time.monotonic() < deadline:
            self.sent_at = time.time()
            try:
                answer, owner = self.send_via_node(path, body)
                return answer, owner
            except NotLanded:
                time.sleep(0.05)
        while time.monotonic() < deadline:
            if self.url is None:
                self.url = self.owner_url()
                if self.url is None:
                    time.sleep(0.1)
                    continue
            url = self.url
            self.sent_at = time.time()
            try:
                return call(lambda: post(url + path, body, timeout=10)), url
            except NotLanded:
                self.url = None
                time.sleep(0.05)
            except (urllib.error.URLError, OSError, ValueError):
                self.url = None
                return "lost", url
        self.failure = "partition %d: %s not acknowledged within %d s" % (
            self.p, what, self.event_timeout)
        return None

    def log_op(self, op, since, by=None):
        """Logs `op`, applied (if at all) between `since` and now, by `by` when known (the
        owner that answered the only try that may have landed)."""
        self.ops.append(dict(op, t=[since, time.time()], by=by))

    def setup(self):
        w1, w2 = self.watchers
        for watcher, target in [(w1, t) for t in self.sessions] + [(w2, self.sessions[0])]:
            since = None
            while True:  # a watch is idempotent: retry until acknowledged (bounded by send)
                r = self.send("/v1/watches", {"watcher": watcher, "target": target}, "a watch")
                if r is None:
                    return False
                by = r[1] if since is None else None
                since = since or self.sent_at
                if r[0] != "lost":
                    break
            self.log_op({"op": "watch", "watcher": watcher, "target": target}, since, by)
        return True

    def record(self, i):
        ev = {"sessionKey": self.sessions[i % len(self.sessions)], "kind": KIND,
              "actorType": "human", "summary": "p%d chaos %d" % (self.p, i)}
        if i % 3 != 0:
            ev["dedupeKey"] = "p%d-chaos-%d" % (self.p, i)
        if i % 5 == 0:
            ev["watchers"] = [self.watchers[1]]  # a producer's watcher
        op = dict(ev, op="record", session=ev["sessionKey"], sequence=None)
        del op["sessionKey"]
        since = None  # a lost try may have landed (at the old owner, before a takeover)
        while True:
            r = self.send("/v1/events", ev, "event %d" % i)
            if r is None:
                return False
            by = r[1] if since is None else None  # else it may have landed before
            since = since or self.sent_at
            answer, url = r
            if answer == "lost":
                if "dedupeKey" not in ev:
                    self.log_op(op, since)  # unknown outcome: the checker looks for it
                    self.unknown.append(ev["summary"])
                    return True
                time.sleep(0.1)
                continue
            e = answer["events"][0]
            self.log_op(dict(op, sequence=e["sequence"]), since, by)
            self.acked.append((ev["summary"], ev["sessionKey"], e["sequence"],
                               time.monotonic(), url))
            return True

    def mine(self, answer):
        """The notices of a drain's answer whose targets are this writer's sessions: the
        watcher watches nothing else, yet a node's answer gathers every partition's."""
        return [n for n in answer.get("notices", []) if n["targetSessionKey"] in self.sessions]

    def drain(self):
        n = self.drains
        self.drains += 1
        op = {"op": "drain", "watcher": self.watchers[0], "id": n}
        if self.request_ids:
            return self.drain_with_id(op)
        r = self.send(self.PATH_DRAIN, {"watcher": self.watchers[0]}, "a drain")
        if r is None:
            return False
        if r[0] != "lost" and (self.p in r[0].get("missingPartitions", []) or r[1] is None):
            r = ("lost", r[1])  # this partition did not answer the fan-out: applied or not
        if r[0] == "lost":  # applied or not: the checker tries both
            self.log_op(dict(op, unknown=True), self.sent_at)
            self.unknown_drains += 1
        else:
            self.log_op(op, self.sent_at, r[1])
            self.delivered[n] = self.mine(r[0])
        return True

    def drain_once(self, body, rid):
        """One try of a drain under X-Request-Id `rid`: (answer, owner) when an answer came,
        ("lost", None) when it may have landed without one; NotLanded when it did not land,
        an HTTPError when it was refused (409 while the first try still runs)."""
        headers = {"X-Request-Id": rid}
        if self.via_nodes:
            return self.send_via_node(self.PATH_DRAIN, body, headers)
        if self.url is None:
            self.url = self.owner_url()
            if self.url is None:
                raise NotLanded("no owner")
        url = self.url
        req = urllib.request.Request(url + self.PATH_DRAIN, data=json.dumps(body).encode(),
                                     headers=dict(headers, **{"Content-Type": "application/json"}))

        def send():
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read())
        try:
            return call(send), url
        except NotLanded:
            self.url = None
            raise
        except urllib.error.HTTPError:
            raise
        except (urllib.error.URLError, OSError, ValueError):
            self.url = None
            return "lost", None

    def drain_with_id(self, op):
        """A drain under a fresh X-Request-Id, asked again under the same id (short sleeps
        between, within the event timeout) while its answer is lost, its partition still
        runs it (409 request_in_progress) or a node's fan-out misses its partition: the
        partition applies it once and replays its first answer, so the notices whose cursors
        it moved reach the client however many tries it takes. What every try brought is
        what the client received. Only when the tries run out is it an unknown outcome."""
        n, body, rid = op["id"], {"watcher": self.watchers[0]}, uuid.uuid4().hex
        self.drain_ids[n] = rid
        deadline = time.monotonic() + self.event_timeout
        received = []
        since = None  # the start of the first try that may have landed at this partition
        incomplete = False  # an answer was lost or came without this partition's part
        while time.monotonic() < deadline:
            t = time.time()
            try:
                answer, owner = self.drain_once(body, rid)
            except NotLanded:
                time.sleep(0.05)
                continue
            except urllib.error.HTTPError as e:
                if e.code != 409:
                    raise
                # Every partition refused it (one node) or it is every partition's
                # request_in_progress: the first try still runs somewhere.
                since, incomplete = since or t, True
                code = error_code(e.read())
                if code != "request_in_progress":
                    log("partition %d: drain %s answered 409 %s" % (self.p, rid, code))
                    break
                time.sleep(0.1)
                continue
            if answer == "lost":
                since, incomplete = since or t, True
                time.sleep(0.1)
                continue
            received += self.mine(answer)
            if self.p in answer.get("missingPartitions", []) or owner is None:
                incomplete = True
                error = next((e for e in answer.get("partitionErrors", [])
                              if e.get("partition") == self.p), {})
                if error.get("status") not in (503, 421):  # those: nothing landed there
                    since = since or t
                code = error.get("error", {}).get("code")
                if code in ("request_answer_lost", "request_id_reused"):
                    # No retry brings this answer back (issue 37 says a drain's answer is
                    # written with its effect: never expected).
                    log("partition %d: drain %s: %s" % (self.p, rid, code))
                    break
                time.sleep(0.1)
                continue
            if incomplete:
                self.retried += 1
            # Applied by the first try that landed, or by this one (then `since` is now).
            self.log_op(op, since or t, owner if since is None else None)
            self.delivered[n] = received
            return True
        if since is None:
            self.failure = "partition %d: a drain not acknowledged within %d s" % (
                self.p, self.event_timeout)
            return False
        self.log_op(dict(op, unknown=True), since)  # applied or not: the checker tries both
        self.unknown_drains += 1
        return True

    def run(self):
        if not self.setup():
            return
        i = 0
        while not self.stop.is_set() and self.record(i):
            i += 1
            if i % self.DRAIN_EVERY == 0 and not self.drain():
                return
            time.sleep(0.01)  # a steady load, not a flood: the machine runs everything else too


class Chaos:
    def __init__(self, cluster, rng, ttl):
        self.c, self.rng, self.ttl = cluster, rng, ttl
        self.done = []
        self.problems = []

    def live_nodes(self):
        return [n for n in self.c.node_names() if self.c.alive(n)]

    def restart_node(self, name):
        if name in self.c.exited_on_their_own():  # restarting it would hide the crash
            self.problems.append("%s exited on its own before a fault restarted it (a crash: "
                                 "see %s.log)" % (name, name))
        if self.c.alive(name):
            self.c.kill(name)
        self.c.start_node(name)
        self.c.wait_node(name)

    def owner_of(self, p):
        s = self.c.status()
        return s["partitions"][p]["owner"] if s else None

    def run(self, fault):
        c, rng, ttl = self.c, self.rng, self.ttl
        P = c.state["partitions"]
        if fault == "kill-owner":
            p = rng.randrange(P)
            node = self.owner_of(p)
            log("kill -9 %s (owner of partition %d)" % (node, p))
            c.kill(node)
            time.sleep(rng.uniform(1.5, 2.5) * ttl)
            self.restart_node(node)
        elif fault == "kill-controller":
            node = c.controller()
            log("kill -9 %s (the controller)" % node)
            c.kill(node)
            time.sleep(rng.uniform(1.5, 2.5) * ttl)
            self.restart_node(node)
        elif fault == "pause-node":
            node = rng.choice(self.live_nodes())
            s = c.status()
            served = [(p["partition"], p["ownerUrl"]) for p in s["partitions"]
                      if p["owner"] == node]
            log("SIGSTOP %s (owns %d partitions) for %.1f s" % (node, len(served), 2 * ttl))
            c.signal(node, signal.SIGSTOP)
            time.sleep(2 * ttl)
            c.signal(node, signal.SIGCONT)
            for p, url in served:  # woken past its lease: it must not serve what it owned
                self.expect_refused(node, p, url)
            time.sleep(0.5 * ttl)
            self.restart_node(node)
        elif fault in ("kill-etcd", "kill-nats"):
            kind, what, start = (("etcd", "etcd member", c.start_etcd) if fault == "kill-etcd"
                                 else ("nats", "nats-server", c.start_nats))
            i = rng.randrange(len(c.state[kind]))
            name = c.state[kind][i]["name"]
            log("kill -9 %s %s" % (what, name))
            c.kill(name)
            time.sleep(rng.uniform(1.0, 2.0) * ttl)
            start(i)
        elif fault == "move":
            p = rng.randrange(P)
            s = c.status()
            owner = s["partitions"][p]["owner"]
            to = rng.choice([n for n in self.live_nodes() if n != owner])
            log("move partition %d from %s to %s" % (p, owner, to))
            try:
                post(c.node_url(to) + "/v1/cluster/move", {"partition": p, "to": to}, timeout=60)
            except urllib.error.HTTPError as e:
                self.problems.append("move of partition %d to %s: HTTP %d %s" % (
                    p, to, e.code, e.read().decode()[:200]))
        elif fault == "drain":
            node = rng.choice(self.live_nodes())
            other = [n for n in self.live_nodes() if n != node][0]
            log("drain %s" % node)
            try:
                post(c.node_url(other) + "/v1/cluster/drain", {"node": node}, timeout=60)
            except urllib.error.HTTPError as e:
                self.problems.append("drain of %s: HTTP %d %s" % (
                    node, e.code, e.read().decode()[:200]))
            self.restart_node(node)  # ends the drain
        self.done.append(fault)

    def expect_refused(self, node, p, url):
        agent = agents_of(self.c.state["partitions"], p, "zombie", 1)[0]
        ev = {"sessionKey": "agent:%s:main" % agent, "kind": KIND, "actorType": "human",
              "summary": "zombie"}
        try:
            post(url + "/v1/events", ev, timeout=5)
        except urllib.error.HTTPError as e:
            if e.code == 503:
                return
            self.problems.append("%s after its lease lapsed answered HTTP %d" % (node, e.code))
            return
        except (urllib.error.URLError, OSError):
            return  # not served either
        self.problems.append("%s served a write after its lease lapsed (%s)" % (node, url))


def session_sequences(url, session):
    """Every sequence `session_status changesSince` pages out (200 a page), in its order."""
    seqs, after = [], 0
    for _ in range(100000):  # bounded: one page per 200 events
        st = json.loads(get(url + "/v1/sessions/%s/state?changesSince=%d&limit=200"
                            % (session, after), timeout=60))
        changes = st.get("stateChanges", {})
        page = [e["sequence"] for e in changes.get("events", [])]
        seqs += page
        if changes.get("historyGap"):
            raise RuntimeError("session %s: a history gap after %d" % (session, after))
        if not changes.get("truncated") or not page:
            return seqs
        after = page[-1]
    return seqs


TAKEOVER = re.compile(r"^ts=(\S+) level=\w+ event=takeover partition=(\d+) ")
SERVING = re.compile(r"^ts=\S+ level=\w+ event=owner_serving partition=(\d+) port=(\d+)")
SLACK = 0.005  # s: a log line's time is its millisecond; the writer's are read around a try


def owners_over_time(cluster):
    """{partition: [(time, node), ...]}, oldest first: every takeover the nodes logged (a
    node taking a partition over, server/standby_daemon.cc). The new owner's restart sweep
    ran just before the line, and it applied nothing of the partition's before it; what it
    applied came before the next takeover. And {(partition, port): node} of the owners'
    slots, for a writer that names the owner by its URL."""
    tenures, ports = {}, {}
    for name in cluster.node_names():
        path = os.path.join(cluster.dir, name + ".log")
        if not os.path.exists(path):
            continue
        with open(path, errors="replace") as f:
            for line in f:
                m = TAKEOVER.match(line)
                if m:
                    t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%fZ")
                    tenures.setdefault(int(m.group(2)), []).append(
                        (t.replace(tzinfo=datetime.timezone.utc).timestamp(), name))
                m = SERVING.match(line)
                if m:
                    ports[(int(m.group(1)), int(m.group(2)))] = name
    return {p: sorted(x) for p, x in tenures.items()}, ports


def tenures_of(ops, tenures, node_of):
    """For each of the writer's `ops`, the tenures (indexes into `tenures`, from
    owners_over_time) within which the partition may have applied it: those that overlap
    the op's times, of the owner that answered it where the writer knows that one applied
    it (op["by"], named by node_of). An op applied within tenure k came after its owner's
    restart sweep and before the next owner's. One in flight across a takeover and applied
    by an owner the writer cannot name (a lost answer, then a retry) has a choice.

    The writer cannot place the sweeps itself from the owners that answer it: a partition
    that moved away and back between two of its requests answers from the same owner."""
    out = []
    for op in ops:
        a, b = op["t"]
        near = [k for k, (t, _) in enumerate(tenures)
                if t < b + SLACK and (k + 1 == len(tenures) or tenures[k + 1][0] > a - SLACK)]
        node = node_of(op.get("by"))
        out.append([k for k in near if tenures[k][1] == node] or near or [-1])
    return out


def check_notices(w, url, seen, model, work, tenures, node_of):
    """The watchers' pending notices at the owner equal the reference model's for the
    writer's operations and the owners' restart sweeps (tenures_of, from the partition's
    `tenures`), and each drain delivered exactly the notices the model's drain acknowledged
    (compare_drains). An event whose answer was lost counts as the journal says; a drain
    whose outcome stayed unknown may or may not have run, and an op in flight across a
    takeover may have been applied before or after its sweep: some choice of them must
    match. Returns (problems, notice counts)."""
    got = {x: json.loads(get(url + "/v1/notices?watcher=" + x, 30))["notices"]
           for x in w.watchers}
    ops = []
    for op in w.ops:
        if op["op"] == "record" and op["sequence"] is None:
            rows = seen.get(op["summary"])
            if not rows:
                continue  # never landed
            op = dict(op, sequence=rows[0][1])
        ops.append(op)
    within = tenures_of(ops, tenures, node_of)
    options = [[("in", i, k) for k in ks] for i, ks in enumerate(within) if len(ks) > 1]
    options += [[("skip", i, None), ("run", i, None)] for i, op in enumerate(ops)
                if op.get("unknown")]
    counts = Counter(delivered=0, lost=0, duplicated=0)
    tries = 1
    for o in options:
        tries *= len(o)
    if tries > 4096:
        return ["partition %d: %d ops in flight across a takeover or drains with a lost "
                "answer, too many to try every choice" % (w.p, len(options))], counts
    path = os.path.join(work, "ops%d.jsonl" % w.p)
    best = None
    for choice in itertools.product(*options):
        tenure = [ks[0] for ks in within]
        for kind, i, k in choice:
            if kind == "in":
                tenure[i] = k
        if best is not None and any(x > y for x, y in zip(tenure, tenure[1:])):
            continue  # the writer's ops were applied in its order
        # Tenure k's sweep comes before the first op applied within it or a later one.
        at = {bisect.bisect_left(tenure, k) for k in range(len(tenures))}
        skip = {i for kind, i, _ in choice if kind == "skip"}
        with open(path, "w") as f:
            for i, op in enumerate(ops + [None]):
                if i in at:  # one sweep: a second one at the same place changes nothing
                    f.write(json.dumps({"op": "sweep"}) + "\n")
                if op is not None and i not in skip:
                    f.write(json.dumps({k: v for k, v in op.items() if k not in ("t", "by")})
                            + "\n")
        expected = json.loads(subprocess.check_output(
            [model, "--drains", path, str(int(time.time() * 1000))] + w.watchers))
        problems = ["partition %d: watcher %s has pending notices %s, the model gives %s"
                    % (w.p, x, got[x], expected["pending"][x]) for x in w.watchers
                    if not same(got[x], expected["pending"][x])]
        drain_problems, drain_counts = compare_drains(w, expected["drains"])
        problems += drain_problems
        if best is None or len(problems) < len(best[0]):
            best = (problems, drain_counts)
        if not problems:
            break
    return best


def compare_drains(w, drains):
    """Each drain the writer completed against the model's drain of the same id (`drains`,
    the model's --drains output): the notices it delivered are those whose cursors it moved.
    A notice the model's drain acknowledged that the client never received is lost (the
    cursor moved without it); one received twice — within a drain, or again after an
    earlier drain delivered it — is duplicated; any other difference is a problem as well.
    Notices compare as same() does: target and text, in any order within one drain.

    Texts are compared exactly, which needs every restart sweep in its place: a sweep moves
    the mark the next drain leaves the cursor at, and so the changesSince of the drain after.
    Hence the sweeps come from the nodes' takeover lines (tenures_of), not from the owners the
    writer sees answer: a partition that moved away and back between two of its requests
    left the next drains' texts differing. Targets and counts alone would check little: with
    four targets and 25 events between drains every drain acknowledges all four, so a drain
    applied twice — its first notices lost — delivers the same targets as the model's."""
    counts = Counter(delivered=0, lost=0, duplicated=0)
    problems, before = [], set()
    key = lambda n: (n["targetSessionKey"], n["text"])  # noqa: E731
    for d in drains:
        n = d["id"]
        if n not in w.delivered:
            continue  # an unknown outcome: nothing delivered to compare (counted apart)
        have = Counter(key(x) for x in w.delivered[n])
        want = Counter(key(x) for x in d["notices"])
        counts["delivered"] += sum(have.values())
        what = "partition %d: drain %d of %s (X-Request-Id %s)" % (
            w.p, n, d["watcher"], w.drain_ids.get(n, "none"))
        for (target, text), k in (want - have).items():
            counts["lost"] += k
            problems.append("%s moved the cursor on %s without its notice reaching the "
                            "client: %s" % (what, target, text))
        for (target, text), k in (have - want).items():
            if (target, text) in before or have[(target, text)] > 1:
                counts["duplicated"] += k
                problems.append("%s delivered again a notice on %s: %s" % (what, target, text))
            else:
                problems.append("%s delivered a notice on %s the model's drain did not "
                                "acknowledge: %s" % (what, target, text))
        before |= set(have)
    return problems, counts


def same(got, expected):
    """The same notices, texts included, in any order. Their order is by the notified mark,
    which a restart sweep moves (N := M); the model has the sweeps where their takeovers'
    times put them among the writer's operations (tenures_of), a choice where one was in
    flight, so its marks — and hence the order — may differ where the notices do not. A sweep
    the model has in the wrong place before a drain still shows: the drain then
    acknowledges up to another mark, and the next notice's changesSince differs."""
    key = lambda n: (n["targetSessionKey"], n["text"])  # noqa: E731
    return sorted(got, key=key) == sorted(expected, key=key)


def check(cluster, writers, model):
    P = cluster.state["partitions"]
    problems, all_seqs = [], set()
    owners = cluster.owner_urls()
    acked_total = lost = dup = 0
    notices = Counter(delivered=0, lost=0, duplicated=0, retried=0, unknown=0)
    tenures, ports = owners_over_time(cluster)
    for w in writers:
        url = owners[w.p]
        seen = {}
        for line in get(url + "/v1/export", timeout=120).splitlines():
            e = json.loads(line) if line.strip() else {}
            if e.get("kind") == KIND:  # the writers'; the messenger's are checked apart
                seen.setdefault(e["summary"], []).append((e["sessionKey"], e["sequence"]))
        unknown = set(w.unknown)
        for summary, rows in seen.items():
            if summary not in unknown and len(rows) > 1:
                dup += 1
            if summary in unknown and len(rows) > 1:
                problems.append("partition %d: %s (unknown outcome) landed %d times"
                                % (w.p, summary, len(rows)))
        acked_summaries = set()
        for summary, session, seq, _, _ in w.acked:
            acked_summaries.add(summary)
            rows = seen.get(summary, [])
            if not rows:
                lost += 1
            elif rows[0] != (session, seq):
                problems.append("partition %d: %s acknowledged as %s #%d, exported as %s"
                                % (w.p, summary, session, seq, rows[0]))
        for summary in seen:
            if summary not in acked_summaries and summary not in unknown:
                problems.append("partition %d: %s exported but never written" % (w.p, summary))
        by_session = {}
        for rows in seen.values():
            for session, seq in rows:
                by_session.setdefault(session, []).append(seq)
                if seq % P != w.p:
                    problems.append("sequence %d is not n*%d+%d" % (seq, P, w.p))
                if seq in all_seqs:
                    problems.append("sequence %d handed out twice" % seq)
                all_seqs.add(seq)
        for session in w.sessions:
            seqs = session_sequences(url, session)
            if seqs != sorted(set(seqs)) or seqs != sorted(by_session.get(session, [])):
                problems.append("session %s: sequences not unique, increasing and as exported"
                                % session)

        def node_of(by, p=w.p):  # a node's name, or its owner slot's URL
            m = re.match(r"^http://[^:/]+:(\d+)", by or "")
            return ports.get((p, int(m.group(1)))) if m else by
        notice_problems, counts = check_notices(w, url, seen, model, cluster.dir,
                                                tenures.get(w.p, []), node_of)
        problems += notice_problems
        notices.update(counts)
        notices.update(retried=w.retried, unknown=w.unknown_drains)
        if '"ok":true' not in get(url + "/v1/verify", timeout=120).replace(" ", ""):
            problems.append("partition %d: verify on the owner failed" % w.p)

        def same():  # the owner and the standby the status names now
            part = cluster.status()["partitions"][w.p]
            a = json.loads(get(part["ownerUrl"] + "/v1/cluster/digest", 10))
            b = json.loads(get(part["standbyUrl"] + "/v1/cluster/digest", 10))
            return (a["position"], a["digest"]) == (b["position"], b["digest"])
        try:
            wait_for("partition %d's standby digest" % w.p, same, 30)
        except RuntimeError as e:
            problems.append(str(e))
        acked_total += len(w.acked)
        print("partition %d: acknowledged %d, unknown %d, exported %d, drains %d "
              "(completed by a retry %d, unknown %d), notices delivered %d" %
              (w.p, len(w.acked), len(w.unknown), len(seen), w.drains, w.retried,
               w.unknown_drains, counts["delivered"]))
    return acked_total, lost, dup, problems, notices


def gaps(writer, t0, t1):
    """The longest time between two acknowledgements of `writer` within [t0, t1]."""
    edges = [t0] + [a[3] for a in writer.acked if t0 <= a[3] <= t1] + [t1]
    return max(b - a for a, b in zip(edges, edges[1:]))


def owner_changes(writer, t0, t1):
    """True when `writer`'s partition answered from another owner after [t0, t1] than before."""
    before = [a[4] for a in writer.acked if a[3] < t0]
    after = [a[4] for a in writer.acked if a[3] >= t0]
    return bool(before and after and before[-1] != after[-1])


UNPLANNED = ("kill-owner", "kill-controller", "pause-node")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--statewatch", default=os.environ.get("STATEWATCH_BIN"))
    ap.add_argument("--model", help="the cluster_smoke_model binary (default: beside "
                    "--statewatch, in tests/)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--lease-ttl", type=int, default=2)
    ap.add_argument("--event-timeout", type=int, default=60)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true", help="keep DIR (logs, data) afterwards")
    ap.add_argument("--via-nodes", action="store_true",
                    help="the even partitions' writers send through random nodes' own ports")
    a = ap.parse_args()
    if not a.statewatch:
        ap.error("--statewatch BIN (or STATEWATCH_BIN) is needed")
    model = a.model or os.path.join(os.path.dirname(os.path.abspath(a.statewatch)), "tests",
                                    "cluster_smoke_model")
    if not os.access(model, os.X_OK):
        ap.error("no reference model binary at %s (make builds cluster_smoke_model)" % model)
    rng = random.Random(a.seed)
    work = a.dir or tempfile.mkdtemp(prefix="statewatch-chaos.")
    # Checkpoints (and purges) every 500 positions: several per partition in a short run, so
    # restarted nodes restore from them, yet each is done long before the next.
    c = LocalCluster.create(work, a.statewatch, nodes=3, partitions=a.partitions,
                            lease_ttl=a.lease_ttl, checkpoint_every=500, name="chaos",
                            node_args=chaos_messenger.node_args(work) if a.via_nodes else [])
    ok = False
    try:
        log("seed %d, %d partitions, lease TTL %d s, %s" % (a.seed, a.partitions, a.lease_ttl,
                                                            work))
        c.up()
        c.wait_ready(seconds=90)
        # --via-nodes: the even partitions' writers go through the nodes' own ports.
        # --via-nodes: and every writer's drains carry an X-Request-Id, retried under it.
        writers = [Writer(c, p, a.event_timeout, via_nodes=a.via_nodes and p % 2 == 0,
                          rng=random.Random(a.seed * 1000 + p), request_ids=a.via_nodes)
                   for p in range(a.partitions)]
        # --via-nodes: and the session tools across partitions (scripts/chaos_messenger.py).
        talk = [chaos_messenger.Messenger(c, a.event_timeout, random.Random(a.seed))] \
            if a.via_nodes else []
        for w in writers + talk:
            w.start()
        chaos = Chaos(c, rng, a.lease_ttl)
        order = FAULTS[:]
        rng.shuffle(order)  # every kind once first, then at random
        end = time.monotonic() + a.seconds
        worst, failovers, moves = {}, [], 0
        while time.monotonic() < end and not any(w.failure for w in writers + talk):
            fault = order.pop(0) if order else rng.choice(FAULTS)
            t0 = time.monotonic()
            chaos.run(fault)
            c.wait_ready(seconds=90)
            # Every writer has answered since: its last answer names the owner after the fault.
            for w in writers:
                n = len(w.acked)
                wait_for("partition %d answering" % w.p,
                         lambda: len(w.acked) > n or w.failure, a.event_timeout)
            t1 = time.monotonic()
            gap = max(gaps(w, t0, t1) for w in writers)
            worst[fault] = max(worst.get(fault, 0), gap)
            changed = [w for w in writers if owner_changes(w, t0, t1)]
            if fault in UNPLANNED:
                failovers += [gaps(w, t0, t1) for w in changed]
            else:
                moves += len(changed)
            log("%s healed; %d partitions changed owner; the longest write gap %.2f s"
                % (fault, len(changed), gap))
            time.sleep(rng.uniform(0.2, 1.0))
        for w in writers + talk:
            w.stop.set()
        for w in writers + talk:
            w.join(a.event_timeout + 15)
        failures = [w.failure for w in writers + talk if w.failure]
        failures += ["%s exited on its own (a crash: see the end of %s.log)" % (n, n)
                     for n in c.exited_on_their_own()]
        # The balancer may still hand partitions back to the node restarted last: check once
        # the assignments have stayed put for a while.
        c.wait_settled(seconds=90, quiet=3)
        acked, lost, dup, problems, notices = check(c, writers, model)
        for m in talk:
            talk_problems, line = chaos_messenger.check(c, m)
            problems += talk_problems
            print("session tools across partitions: " + line)
        problems = failures + chaos.problems + problems
        for p in problems[:20]:
            print("PROBLEM: " + p)
        print("longest write gap per fault: " +
              ", ".join("%s %.2f s" % kv for kv in sorted(worst.items())) +
              "; planned owner changes %d" % moves)
        print("notices: delivered %d, lost %d, duplicated %d, drains completed by a retry %d, "
              "unknown %d" % (notices["delivered"], notices["lost"], notices["duplicated"],
                              notices["retried"], notices["unknown"]))
        ok = (not problems and lost == 0 and dup == 0 and notices["lost"] == 0
              and notices["duplicated"] == 0)
        tail = "verify ok, digests equal" if ok else "FAILED (%d problems)" % len(problems)
        fo = sorted(failovers) or [0.0]
        print("faults %d, failovers %d, acknowledged %d, lost %d, duplicated %d, %s, "
              "failover p50 %d ms p99 %d ms"
              % (len(chaos.done), len(failovers), acked, lost, dup, tail,
                 fo[len(fo) // 2] * 1000, fo[min(len(fo) - 1, int(0.99 * len(fo)))] * 1000))
    except Exception as e:  # noqa: BLE001 — say what broke, with the logs' tails
        print_log_tails(c, work, failure="chaos run failed: %s" % e)
    finally:
        c.down()
        if not a.keep and not a.dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

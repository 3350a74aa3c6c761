#!/usr/bin/env python3
"""A drained notice is never lost (issue 37), on a real local cluster: drains through a
node's own port while one partition refuses its part, while its owner is stopped
(SIGSTOP) mid-fan-out, and while its owner is killed (kill -9) between the drain's effect
there and its answer to the forwarding node; each time the node or the client asks again
under the same X-Request-Id, and every notice must reach the client exactly once.

A LocalCluster (scripts/cluster_lib.py: three etcd members, three nats-servers, three nodes,
six partitions). A watcher W (an agent's main session, home partition h) watches three
targets, one on each of three partitions other than h, through the nodes' ports; the
targets' owners are on at least two nodes: one on the node X that the faults hit, the
others elsewhere (h is not on X either, so the drains can read W's watcher directory).
Before each scenario every target gets a fresh event, so each has one pending notice (a
peek through a node, until its answer is complete, shows exactly those three).

  refused  an event with X-Request-Id r-1 goes straight to one target partition's owner
           slot; a drain of W through a node with r-1 is 200 with the other targets'
           notices, that partition in missingPartitions, its partitionErrors entry 422
           request_id_reused; the retry with r-1 (through another node) answers the same
           notices (a replay); a drain with a new id brings the refused partition's notice.
  stopped  X is stopped (SIGSTOP) and W drained through another node F with s-1; X resumes
           (SIGCONT) 2.5 s later, far under the lease TTL (no failover). F's first ask of
           X's partition timed out after 1 s, so F asks it again under s-1 (a node re-asks a
           partition whose drain answer was lost, for up to 10 s: partition_router.cc
           Notices); X runs the drain it had in its socket buffer on waking and answers the
           re-ask (409 request_in_progress, then its recorded answer): F's answer is then
           complete. Should it still miss that partition, the client retries with s-1
           (while it is missing, bounded). Either way its notice arrives once, and s-1 once
           more through the third node is a replay of all three.
  killed   X stopped again under a drain through F with k-1, this time until F's re-asks
           run out (at most 13 s): that partition is missing (502 answer_lost). X resumes
           and its slot's cursor is polled until the drain it had in its socket buffer
           applied there (if it does not within 10 s that is said, and the run goes on with
           the drain not applied); its answers went to connections F had closed, and it is
           killed (kill -9) at once. Once X's standby owns the partition (bounded by 3 lease
           TTLs + 5 s) the cursor there must show the drain applied, and the retry with k-1
           through F must replay the recorded answer: the notice, once over both answers.

The lease TTL is 24 s by default: X stopped 13 s plus a keep-alive period (a third of the
TTL) stays 3 s under it, so X keeps its partitions; the failover of the last scenario takes
about one TTL. Should F not have given up on X's partition by the end of the long stop (a
loaded machine), X answers its part after all: that drain is finished and checked like any
other and the scenario runs again with fresh events and the next id (k-2, k-3; at most
three attempts), unless X lost its lease meanwhile, which fails the run and says so.

The client keeps a ledger of every notice delivered to it (targetSessionKey, text): within
one request id a notice already delivered is a replay (not counted again, and every retry
must repeat what the partitions that answered before acknowledged); anything else is a
delivery. After each scenario a peek shows nothing pending for its targets, and each target
must have been delivered exactly one notice in it (none: lost; more: duplicated), and no
notice is ever delivered twice. Every wait is bounded; no timing is asserted.

Last line: `drain faults ok: refused 1, stopped 1, killed 1, notices delivered N, lost 0,
duplicated 0`; on any failure a line saying what failed, the nodes' last log lines, and
exit 1.

  cluster-drain-faults.py [--statewatch BIN] [--lease-ttl T] [--dir DIR] [--keep]

--statewatch defaults to $STATEWATCH_BIN; scripts/cluster-drain-faults.sh runs it on the
build's.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_lib import LocalCluster, agents_of, print_log_tails, wait_for, xxh64  # noqa: E402

PARTITIONS = 6
KIND = "human_direct_message"
# How long X is stopped under the drain of the `stopped` scenario: past the node's 1 s
# fan-out timeout, so the node's first ask of X's partition is lost and it asks again.
STOP_SECONDS = 2.5
# The longest X is stopped under the drain of the `killed` scenario: the node asks a
# partition whose answer was lost again for its retry_for (10 s) in all — 1 + 9 x 1.1 s —
# so this leaves it 2 s to give up before X is resumed regardless.
LONG_STOP_SECONDS = 13.0
T0 = time.monotonic()


def log(msg):
    print("[%6.1f] %s" % (time.monotonic() - T0, msg), flush=True)


class Failure(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Failure(msg)


def request(url, method="GET", body=None, headers=None, timeout=30):
    """(status, parsed JSON or None, headers) of one exchange; an HTTP error is an answer
    too; a connection that fails or times out is (None, {"error": reason}, {})."""
    data = json.dumps(body).encode() if body is not None else None
    h = dict(headers or {})
    if data is not None:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw else None, dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = {"raw": raw[:200].decode(errors="replace")}
        return e.code, parsed, dict(e.headers)
    except (urllib.error.URLError, OSError) as e:
        return None, {"error": str(e)}, {}


def keys(notices):
    """A notice list as (targetSessionKey, text) pairs, in the answer's order."""
    return [(n["targetSessionKey"], n["text"]) for n in notices]


class Client:
    """The watcher's client: drains W through nodes and keeps the ledger of what it was
    delivered."""

    def __init__(self, cluster, watcher):
        self.c, self.w = cluster, watcher
        self.ledger = []     # (scenario, target, text): one entry per delivery
        self.by_id = {}      # request id -> {(target, text)} its answers delivered so far
        self.scenario = None

    def drain(self, node, rid, timeout=30):
        """One drain of W through `node` with X-Request-Id `rid`: its (status, body); the
        notices of a 200 go to the ledger (those already delivered under `rid`: replays)."""
        status, body, _ = request(self.c.node_url(node) + "/v1/notices/drain", "POST",
                                  {"watcher": self.w}, {"X-Request-Id": rid}, timeout)
        if status != 200:
            return status, body
        got = keys(body.get("notices", []))
        expect(len(set(got)) == len(got),
               "drain %s through %s listed a notice twice: %s" % (rid, node, got))
        seen = self.by_id.setdefault(rid, set())
        # A retry repeats what the partitions that answered before acknowledged: every
        # notice of an earlier answer under this id whose partition answered this time.
        missing = set(body.get("missingPartitions", []))
        for t, text in sorted(seen):
            if partition_of(t) not in missing:
                expect((t, text) in got,
                       "the retry of drain %s through %s did not replay %s's notice %r "
                       "(answer: %s)" % (rid, node, t, text, json.dumps(body)))
        for k in got:
            if k not in seen:
                seen.add(k)
                self.ledger.append((self.scenario, k[0], k[1]))
        return status, body

    def peek(self, node, seconds=20):
        """W's pending notices through `node`, once an answer is complete (bounded)."""
        last = []

        def complete():
            status, body, _ = request(self.c.node_url(node) + "/v1/notices?watcher=" +
                                      urllib.parse.quote(self.w), timeout=10)
            last[:] = [status, body]
            return status == 200 and not body.get("incomplete")
        try:
            wait_for("a complete peek of %s through %s" % (self.w, node), complete, seconds,
                     step=0.2)
        except RuntimeError as e:
            raise Failure("%s (last answer: %s %s)" % (e, last[0] if last else None,
                                                        json.dumps(last[1]) if last else ""))
        return keys(last[1]["notices"])


def partition_of(session_key):
    """The partition of an agent-scoped key agent:<agentId>:<rest>."""
    return xxh64(session_key.split(":")[1].encode()) % PARTITIONS


def owners(cluster):
    s = cluster.status()
    expect(s is not None, "no node answers the cluster status")
    return {p["partition"]: p for p in s["partitions"]}, s.get("controller")


def record(cluster, node, session, summary, headers=None, url=None):
    """One event on `session` through `node` (or straight to `url`): its sequence."""
    target = (url or cluster.node_url(node)) + "/v1/events"
    status, body, _ = request(target, "POST", {"sessionKey": session, "kind": KIND,
                                               "actorType": "human", "summary": summary},
                              headers)
    expect(status == 200, "event on %s through %s: %s %s" % (session, url or node, status,
                                                             json.dumps(body)))
    return body["events"][0]["sequence"]


def missing_of(body):
    return sorted(body.get("missingPartitions", [])) if body.get("incomplete") else []


def errors_of(body):
    return {e["partition"]: e for e in body.get("partitionErrors", [])}


class Run:
    def __init__(self, cluster, ttl):
        self.c, self.ttl = cluster, ttl
        self.lost = self.duplicated = 0
        self.notes = []

    # -- set-up --
    def choose(self):
        """X (the node the faults hit: not the controller when another can be), W's home h
        on another node, three target partitions other than h: one owned by X, the others
        by other nodes (different ones when there are), and F, a node other than X."""
        parts, controller = owners(self.c)
        nodes = self.c.node_names()
        owned = {n: sorted(p for p, v in parts.items() if v["owner"] == n) for n in nodes}
        candidates = [n for n in nodes if owned[n]]
        candidates.sort(key=lambda n: (n == controller, nodes.index(n)))
        for x in candidates:
            elsewhere = [p for p in sorted(parts) if parts[p]["owner"] != x]
            if len(elsewhere) < 3:
                continue
            # h: a partition of another node; the two other targets on other nodes, on two
            # different ones when that is possible.
            for h in elsewhere:
                rest = [p for p in elsewhere if p != h]
                rest.sort(key=lambda p: (parts[p]["owner"] == parts[h]["owner"], p))
                pair = [rest[0]] + [p for p in rest[1:] if parts[p]["owner"] !=
                                    parts[rest[0]]["owner"]][:1]
                if len(pair) < 2:
                    pair = rest[:2]
                self.x, self.h = x, h
                self.px = owned[x][0]
                self.targets_p = [self.px] + pair
                self.f = parts[pair[0]]["owner"]  # the forwarding node: not x
                self.pr = pair[1]  # the refusing partition in scenario 1
                self.parts = parts
                return
        raise Failure("no node owns a partition while three others are elsewhere: %s" %
                      {p: v["owner"] for p, v in parts.items()})

    def set_up(self):
        self.choose()
        P = PARTITIONS
        self.w = "agent:%s:main" % agents_of(P, self.h, "watcher", 1)[0]
        self.agent = {p: agents_of(P, p, "target", 1)[0] for p in self.targets_p}
        self.target = {p: "agent:%s:main" % self.agent[p] for p in self.targets_p}
        self.targets = [self.target[p] for p in self.targets_p]
        self.client = Client(self.c, self.w)
        log("watcher %s (home partition %d on %s); targets %s; faults on %s, forwarding "
            "node %s" % (self.w, self.h, self.parts[self.h]["owner"],
                         ", ".join("%s (p%d on %s)" % (self.target[p], p,
                                                       self.parts[p]["owner"])
                                   for p in self.targets_p), self.x, self.f))
        nodes = self.c.node_names()
        for i, t in enumerate(self.targets):
            node = nodes[i % len(nodes)]
            status, body, _ = request(self.c.node_url(node) + "/v1/watches", "POST",
                                      {"watcher": self.w, "target": t})
            expect(status == 200, "watch of %s through %s: %s %s" % (t, node, status,
                                                                     json.dumps(body)))
        # One notice per target, drained whole, so that each scenario starts with nothing
        # pending (an event while a notice is pending opens another one after its drain:
        # docs/semantics.md, "The transition table").
        sc = self.client.scenario = "set-up"
        self.fresh_events(sc)
        self.drain_until("setup-1", self.f, "set-up: drain")
        self.settle(sc)

    def fresh_events(self, scenario):
        """An event on every target (through the nodes in turn), then a complete peek must
        show exactly one pending notice per target and nothing else: {target: sequence}."""
        nodes = [n for n in self.c.node_names() if self.c.alive(n)]
        seqs = {}
        for i, t in enumerate(self.targets):
            seqs[t] = record(self.c, nodes[i % len(nodes)], t, "%s %s" % (scenario, t))
        pending = self.client.peek(self.f)
        expect(sorted(t for t, _ in pending) == sorted(self.targets),
               "%s: the peek shows %s, not one notice for each of %s" % (
                   scenario, pending, self.targets))
        self.pending = dict(pending)
        return seqs

    def settle(self, scenario):
        """After a scenario: nothing pending for its targets, and each target delivered
        exactly one notice in it (the one pending before), none twice overall."""
        pending = self.client.peek(self.f)
        left = [k for k in pending if k[0] in self.targets]
        expect(not left, "%s: still pending after the drains: %s" % (scenario, left))
        for t in self.targets:
            got = self.once(scenario, t, scenario)
            expect(got == self.pending[t], "%s: %s was delivered %r, its pending notice "
                   "was %r" % (scenario, t, got, self.pending[t]))
        flat = [(t, text) for _, t, text in self.client.ledger]
        if len(set(flat)) != len(flat):
            self.duplicated += len(flat) - len(set(flat))
            raise Failure("a notice delivered twice across scenarios: %s" % flat)

    def check_missing(self, what, body, must=(), refused=None, faulty=()):
        """The missing partitions of a 200 fan-out answer: every one of `must` is missing;
        `refused`, when missing, with 422 request_id_reused; any other only for a reason to
        ask again (409 request_in_progress, 502, 503, 504: a partition that did not answer
        within the fan-out's second is no fault of the drain, and a retry brings its part)."""
        missing = missing_of(body)
        errs = errors_of(body)
        expect(set(must) <= set(missing), "%s: partitions %s should be missing, the answer "
               "misses %s: %s" % (what, sorted(must), missing, json.dumps(body)))
        for p in missing:
            e = errs.get(p, {})
            code = e.get("error", {}).get("code")
            if p == refused:
                expect(e.get("status") == 422 and code == "request_id_reused",
                       "%s: partition %d's error is %s, expected 422 request_id_reused" % (
                           what, p, json.dumps(e)))
            else:
                expect(e.get("status") in (409, 502, 503, 504) and code != "request_id_reused",
                       "%s: partition %d missing for no reason to retry: %s" % (
                           what, p, json.dumps(e)))
            if p not in must and p != refused and p not in faulty:
                self.notes.append("%s: partition %d missing (%s %s: %s); asked again" % (
                    what, p, e.get("status"), code, e.get("error", {}).get("message", "")[:160]))
        return missing

    def first_answer(self, what, body, must=(), refused=None, faulty=()):
        """The first answer under a request id: the expected partitions missing, and each
        target whose partition answered delivered its pending notice in it."""
        missing = self.check_missing(what, body, must, refused, faulty)
        want = sorted(self.target[p] for p in self.targets_p if p not in missing)
        got = sorted(t for t, _ in keys(body["notices"]))
        expect(got == want, "%s: notices for %s, expected %s" % (what, got, want))
        return missing

    def drain_until(self, rid, node, what, leave=(), refused=None, faulty=(), seconds=30):
        """Drains with `rid` through `node` until no partition but those of `leave` is
        missing (bounded); every answer on the way missing partitions only for a reason to
        retry (or `refused`'s 422; `faulty`: those the scenario's fault may keep missing a
        while, not noted). The last answer and the errors seen on the way."""
        seen = []
        deadline = time.monotonic() + seconds
        while True:
            status, body = self.client.drain(node, rid)
            if status == 200:
                missing = self.check_missing(what, body, refused=refused, faulty=faulty)
                if set(missing) <= set(leave):
                    return body, seen
                errs = errors_of(body)
                seen += ["p%d %s %s" % (p, errs.get(p, {}).get("status"),
                                        errs.get(p, {}).get("error", {}).get("code"))
                         for p in missing if p not in leave]
            else:
                seen.append(str(status))
                expect(status is None or status >= 500, "%s: drain %s through %s: %s %s" % (
                    what, rid, node, status, json.dumps(body)))
            expect(time.monotonic() < deadline, "%s: drain %s still incomplete after %d s "
                   "(seen: %s)" % (what, rid, seconds, ", ".join(seen)))
            time.sleep(0.3)

    def once(self, scenario, target, what):
        """The one notice `target` was delivered in `scenario`; none is lost, more are
        duplicated (counted, and the run fails)."""
        got = [text for s, t, text in self.client.ledger if s == scenario and t == target]
        if not got:
            self.lost += 1
            raise Failure("%s: %s's notice %r was never delivered (lost)" % (
                what, target, self.pending[target]))
        if len(got) > 1:
            self.duplicated += len(got) - 1
            raise Failure("%s: %s's notice was delivered %d times: %s" % (
                what, target, len(got), got))
        return got[0]

    # -- scenarios --
    def refused(self):
        sc = self.client.scenario = "refused"
        self.fresh_events(sc)
        pr, tr = self.pr, self.target[self.pr]
        slot = self.parts[pr]["ownerUrl"]
        # Another request under r-1, straight to the refusing partition's owner slot: an
        # event on another session of the same agent (same partition).
        record(self.c, None, "agent:%s:side" % self.agent[pr], "takes r-1",
               {"X-Request-Id": "r-1"}, url=slot)
        status, body = self.client.drain(self.x, "r-1")
        expect(status == 200, "refused: drain r-1 through %s: %s %s" % (
            self.x, status, json.dumps(body)))
        self.first_answer("refused: drain r-1", body, must=[pr], refused=pr)
        # The retry (through another node) until only the refusing partition is missing:
        # then it answers what r-1 acknowledged, the same notices (Client.drain checks each
        # answer repeats what the partitions that answered had acknowledged).
        body, seen = self.drain_until("r-1", self.f, "refused: retry r-1", leave=[pr],
                                      refused=pr)
        before = sorted(self.client.by_id["r-1"])
        expect(missing_of(body) == [pr] and sorted(keys(body["notices"])) == before,
               "refused: the retry r-1 answered %s; r-1 had acknowledged %s" % (
                   json.dumps(body), before))
        expect(tr not in [t for t, _ in before], "refused: %s's notice came under r-1" % tr)
        body, _ = self.drain_until("r-2", self.f, "refused: drain r-2")
        got = sorted(self.client.by_id["r-2"])
        expect([t for t, _ in got] == [tr],
               "refused: r-2 delivered %s, expected %s's notice alone" % (got, tr))
        self.settle(sc)
        log("refused: partition %d refused r-1 (422 request_id_reused), the retry replayed "
            "%d notices, r-2 brought %s's" % (pr, len(before), tr))

    def drain_with_x_stopped(self, rid, resume_after):
        """SIGSTOP X, one drain through F with `rid` (in a thread), SIGCONT X once F has
        answered or `resume_after` seconds have passed, whichever is first. The drain's
        body, how long X was stopped, and whether F had answered by then."""
        out = {}

        def drain():
            try:
                out["answer"] = self.client.drain(self.f, rid)
            except Exception as e:  # noqa: BLE001 — raised again below, in the main thread
                out["error"] = e
        th = threading.Thread(target=drain, daemon=True)
        self.c.signal(self.x, signal.SIGSTOP)
        t0 = time.monotonic()
        try:
            th.start()
            th.join(resume_after)
        finally:
            self.c.signal(self.x, signal.SIGCONT)
        held = time.monotonic() - t0
        answered_first = not th.is_alive()
        th.join(60)
        expect(not th.is_alive(), "drain %s through %s: no answer within 60 s" % (rid, self.f))
        if "error" in out:
            raise out["error"]
        status, body = out["answer"]
        expect(status == 200, "drain %s through %s with %s stopped: %s %s" % (
            rid, self.f, self.x, status, json.dumps(body)))
        return body, held, answered_first

    def replay_elsewhere(self, sc, rid):
        """The same drain again through the third node, once complete: every notice `rid`
        delivered, and nothing new (Client.drain checks the repeat)."""
        third = next(n for n in self.c.node_names() if n not in (self.x, self.f))
        before = len(self.client.ledger)
        body, _ = self.drain_until(rid, third, "%s: %s again through %s" % (sc, rid, third))
        expect(len(self.client.ledger) == before and
               sorted(keys(body["notices"])) == sorted(self.client.by_id[rid]),
               "%s: %s again through %s answered %s; %s had delivered %s" % (
                   sc, rid, third, json.dumps(body), rid, sorted(self.client.by_id[rid])))

    def stopped(self):
        """X stopped a short while (STOP_SECONDS) under a drain through F: F's first ask of
        X's partition times out and F asks again under the same id (server/partition_router.cc
        Notices) until X, resumed, replays the drain it ran on waking (or answers 409 while
        running it, or runs it then). Normally F's answer is then complete; if it is not (X
        slower than F's re-asks), the client's retries under the id bring the notice."""
        sc = self.client.scenario = "stopped"
        expect(self.parts[self.h]["owner"] != self.x and self.f != self.x,
               "W's home or the forwarding node is on the stopped node")
        tx = self.target[self.px]
        self.fresh_events(sc)
        body, held, answered = self.drain_with_x_stopped("s-1", STOP_SECONDS)
        missing = self.first_answer("%s: drain s-1" % sc, body, faulty=[self.px])
        if missing:
            err = errors_of(body).get(self.px, {})
            how = "%s's answer%s missed it (%s %s), the client's retry brought it" % (
                self.f, " (given while %s was stopped)" % self.x if answered else "",
                err.get("status"), err.get("error", {}).get("code"))
            body, seen = self.drain_until("s-1", self.f, "%s: retry s-1" % sc,
                                          faulty=[self.px])
            if seen:
                how += " after %s" % ", ".join(seen)
        else:
            how = "%s asked again under s-1: its answer was complete" % self.f
        self.once(sc, tx, "%s: over the answers of s-1" % sc)
        self.replay_elsewhere(sc, "s-1")
        self.settle(sc)
        log("%s: %s stopped %.1f s under drain s-1; %s; s-1 again through the third node "
            "replayed it" % (sc, self.x, held, how))

    def killed(self):
        """X stopped under a drain through F until F's re-asks ran out (px missing,
        answer_lost), then resumed: it runs the drain it had in its socket buffer (its
        answer goes nowhere: F has given up); it is killed (kill -9) at once, its standby
        takes over, and the client's retry under the id must get the recorded answer."""
        tx = self.target[self.px]
        cursor_q = "/v1/cursors?watcher=%s&target=%s" % (urllib.parse.quote(self.w),
                                                         urllib.parse.quote(tx))
        for sc, rid in self.attempts("killed"):
            self.client.scenario = sc
            seqs = self.fresh_events(sc)
            parts, _ = owners(self.c)
            expect(parts[self.px]["owner"] == self.x,
                   "%s: partition %d moved off %s (%s) before the kill" % (
                       sc, self.px, self.x, parts[self.px]["owner"]))
            slot = parts[self.px]["ownerUrl"]
            body, held, answered = self.drain_with_x_stopped(rid, LONG_STOP_SECONDS)
            if not answered or self.px not in missing_of(body):
                self.stop_missed(sc, rid, body, held, answered)
                continue
            self.first_answer("%s: drain %s" % (sc, rid), body, must=[self.px])
            err = errors_of(body).get(self.px, {})
            break
        else:
            raise Failure("killed: in 3 attempts %s's re-asks never gave up on partition %d "
                          "while %s was stopped" % (self.f, self.px, self.x))

        def applied_at(url):
            status, cur, _ = request(url + cursor_q, timeout=2)
            return status == 200 and cur.get("lastSeen", 0) >= seqs[tx]
        try:
            wait_for("the drain %s applied at %s's slot" % (rid, self.x),
                     lambda: applied_at(slot), 10, step=0.02)
            applied = True
        except RuntimeError:
            applied = False
        self.c.kill(self.x)  # the answers it made went to connections F had closed
        if not applied:
            self.notes.append("%s: the drain %s had not applied at %s within 10 s of "
                              "SIGCONT: treated as not applied" % (sc, rid, self.x))
            log(self.notes[-1])

        def taken_over():
            s = self.c.status()
            p = next(q for q in s["partitions"] if q["partition"] == self.px)
            return p.get("ready") and p.get("owner") not in (None, "", self.x)
        t0 = time.monotonic()
        try:
            wait_for("partition %d taken over from %s" % (self.px, self.x), taken_over,
                     3 * self.ttl + 5, step=0.2)
        except RuntimeError as e:
            raise Failure("%s: %s" % (sc, e))
        took = time.monotonic() - t0
        parts, _ = owners(self.c)
        new = parts[self.px]
        if applied:
            # The drain's effect travelled with its record: the new owner's cursor moved, so
            # the notice can only come back as the recorded answer.
            status, cur, _ = request(new["ownerUrl"] + cursor_q, timeout=5)
            expect(status == 200 and cur.get("lastSeen", 0) >= seqs[tx],
                   "%s: %s applied the drain, yet the new owner %s's cursor is %s %s" % (
                       sc, self.x, new["owner"], status, json.dumps(cur)))
        body, seen = self.drain_until(rid, self.f, "%s: retry %s" % (sc, rid),
                                      faulty=[self.px])
        self.once(sc, tx, "%s: over the answers of %s" % (sc, rid))
        self.settle(sc)
        log("%s: %s stopped %.1f s, partition %d missing from %s's answer (%s %s); the drain "
            "%s on waking, then kill -9; %s took the partition over in %.1f s; the retry %s "
            "its notice%s" % (
                sc, self.x, held, self.px, self.f, err.get("status"),
                err.get("error", {}).get("code"), "applied" if applied else "not applied",
                new["owner"], took, "replayed" if applied else "brought",
                " after %s" % ", ".join(seen) if seen else ""))

    def stop_missed(self, sc, rid, body, held, answered):
        """X's partition answered drain `rid` after all: F had not given up on it when X
        had to be resumed (a loaded machine), or X lost its lease and px moved. The drain is
        finished and checked like any, and the scenario may run again only if X still owns
        px."""
        self.first_answer("%s: drain %s" % (sc, rid), body, faulty=[self.px])
        self.drain_until(rid, self.f, "%s: drain %s" % (sc, rid), faulty=[self.px])
        self.settle(sc)
        self.c.wait_settled(seconds=60)
        parts, _ = owners(self.c)
        expect(parts[self.px]["owner"] == self.x,
               "%s: %s lost partition %d while stopped %.1f s (lease TTL %d s): the machine "
               "is too slow for this TTL (--lease-ttl)" % (sc, self.x, self.px, held, self.ttl))
        self.parts = parts
        self.notes.append("%s: %s %s drain %s within the %.1f s %s was stopped; the scenario "
                          "ran again" % (sc, self.f, "had not answered" if not answered else
                                         "got partition %d's part of" % self.px, rid, held,
                                         self.x))
        log(self.notes[-1])

    def attempts(self, name):
        """(scenario label, request id) of up to three attempts of a fault scenario."""
        for n in range(1, 4):
            yield (name if n == 1 else "%s#%d" % (name, n)), "%s-%d" % (name[0], n)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--statewatch", default=os.environ.get("STATEWATCH_BIN"))
    ap.add_argument("--lease-ttl", type=int, default=24,
                    help="the nodes' lease TTL (s): a stop of %.0f s plus a keep-alive period "
                    "(a third of it) must stay under it with room to spare" % LONG_STOP_SECONDS)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true", help="keep DIR (logs, data) afterwards")
    a = ap.parse_args()
    if not a.statewatch:
        ap.error("--statewatch BIN (or STATEWATCH_BIN) is needed")
    if not os.access(a.statewatch, os.X_OK):
        ap.error("no statewatch binary at %s" % a.statewatch)
    if a.lease_ttl * 2 / 3.0 < LONG_STOP_SECONDS + 3:
        ap.error("--lease-ttl %d: X stopped %.0f s would come too close to losing its lease "
                 "(at least %d)" % (a.lease_ttl, LONG_STOP_SECONDS,
                                    int((LONG_STOP_SECONDS + 3) * 1.5 + 0.999)))
    work = a.dir or tempfile.mkdtemp(prefix="statewatch-drain-faults.")
    c = LocalCluster.create(work, a.statewatch, nodes=3, partitions=PARTITIONS,
                            lease_ttl=a.lease_ttl, name="drainfaults")
    run = Run(c, a.lease_ttl)
    ok = False
    try:
        log("3 nodes, %d partitions, lease TTL %d s, %s" % (PARTITIONS, a.lease_ttl, work))
        c.up()
        c.wait_settled(seconds=90)  # the owners stay put while the scenarios pick them
        run.set_up()
        run.refused()
        run.stopped()
        run.killed()
        ok = True
        for note in run.notes:
            print("note: " + note)
        print("drain faults ok: refused 1, stopped 1, killed 1, notices delivered %d, lost %d, "
              "duplicated %d" % (len(run.client.ledger), run.lost, run.duplicated), flush=True)
    except (Failure, RuntimeError, OSError, KeyError, ValueError) as e:
        print_log_tails(c, work, failure="drain faults FAILED: %s" % e)
        delivered = len(run.client.ledger) if hasattr(run, "client") else 0
        print("drain faults FAILED: notices delivered %d, lost %d, duplicated %d" % (
            delivered, run.lost, run.duplicated), flush=True)
    finally:
        c.down()
        if not a.keep and not a.dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

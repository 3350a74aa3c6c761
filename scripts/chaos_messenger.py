"""The session tools across partitions under chaos (docs/cluster-internals.md, "Chaos" and
"Session tools across partitions"): a thread of scripts/cluster-chaos.py that, through random
live nodes' own ports while the faults run, has sessions of every partition message sessions
of other partitions (`sessions_send`, fire and forget) and spawn children in other
partitions' agents (`sessions_spawn`), and ends each child's run (`POST /v1/runs/{id}/finish`)
one spawn later, so a spawn's mail and its completion are in flight when a fault strikes
either side.

Every mutating request carries an `X-Request-Id` kept across its attempts: a request
refused before it landed (503, 421, connection refused) or whose answer was lost (502, a
timeout, a reset) is sent again with the same id until it is answered, so it is applied
exactly once (docs/request-ids.md). A `request_answer_lost` (applied, answer gone) makes
that one call's outcome unknown: a send then must land exactly once still, a spawn's run id
is unknown and it is left out of the checks.

The checks, once every fault is healed (check()): each acknowledged message is in its
target's transcript exactly once; each ended child's run is announced to its parent exactly
once (its run id in one announcement of the parent's transcript) and its child session's
journal holds exactly one `run_completed`. A node's mail forwarder retries until the
destination acknowledges, so the checks wait (bounded) for the transcripts to settle.
"""
import json
import os
import threading
import time
import urllib.error
import urllib.request
import uuid

from cluster_lib import agents_of, wait_for

# Every node runs with these: any session may see and message any other, and spawn into any
# agent (visibility, agent-to-agent, agents.defaults.subagents.allowAgents).
NODE_ARGS = ["--visibility", "all", "--agent-to-agent"]
# The loop guards' send and spawn rates are raised out of the way: this run tests failover,
# not the guards (their own test is `make test-guards`), and with the default rates
# (a burst of 20 spawns, then 12 a minute, per agent) a fast machine's messenger, calling
# every 50 ms from six agents, is refused 429 loop_guard.
UNGUARDED = {"perMinute": 600000, "burst": 100000}
CONFIG = {"agents": {"defaults": {"subagents": {"allowAgents": ["*"],
                                                "maxChildrenPerAgent": 20}}},
          "guards": {"send": UNGUARDED, "spawn": UNGUARDED}}


class Messenger(threading.Thread):
    PAUSE = 0.05  # between calls: a steady trickle beside the writers

    def __init__(self, cluster, event_timeout, rng, spawns=True):
        super().__init__(daemon=True)
        self.cluster, self.event_timeout, self.rng = cluster, event_timeout, rng
        self.spawns_on = spawns  # False: messages only
        P = cluster.state["partitions"]
        self.agents = [a for p in range(P) for a in agents_of(P, p, "talk", 1)]
        self.partition_of = {a: p for p in range(P) for a in agents_of(P, p, "talk", 1)}
        self.sends = []      # (target, text) acknowledged
        self.spawns = []     # (parent, runId, child) whose run was ended
        self.unknown = 0     # calls answered request_answer_lost
        self.failure = None
        self.stop = threading.Event()

    def request(self, method, path, body, caller=None):
        """The answer (a dict) of one mutating request through random live nodes, retried
        with one X-Request-Id until answered; "unknown" when it was applied but its answer
        is gone; None (and self.failure) when not answered within the event timeout."""
        headers = {"Content-Type": "application/json", "X-Request-Id": str(uuid.uuid4())}
        if caller:
            headers["X-Session-Key"] = caller
        data = json.dumps(body).encode()
        deadline = time.monotonic() + self.event_timeout
        while time.monotonic() < deadline:
            nodes = [n for n in self.cluster.node_names() if self.cluster.alive(n)]
            if not nodes:
                time.sleep(0.1)
                continue
            url = self.cluster.node_url(self.rng.choice(nodes)) + path
            req = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return json.loads(r.read())
            except urllib.error.HTTPError as e:
                raw = e.read()
                code = (json.loads(raw).get("error", {}).get("code") if raw else None)
                if code == "request_answer_lost":
                    self.unknown += 1
                    return "unknown"
                if e.code in (409, 421, 502, 503):  # in progress, not landed, answer lost
                    time.sleep(0.1)
                    continue
                self.failure = "%s %s: HTTP %d %s" % (method, path, e.code, raw[:300])
                return None
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.1)  # refused or lost: the same id again
        self.failure = "%s %s not answered within %d s" % (method, path, self.event_timeout)
        return None

    def other_agent(self, agent):
        return self.rng.choice([a for a in self.agents
                                if self.partition_of[a] != self.partition_of[agent]])

    def send(self, i):
        caller_agent = self.rng.choice(self.agents)
        caller = "agent:%s:main" % caller_agent
        target = "agent:%s:main" % self.other_agent(caller_agent)
        text = "chaos mail %d end" % i
        answer = self.request("POST", "/v1/tools/sessions_send",
                              {"sessionKey": target, "message": text, "timeoutSeconds": 0},
                              caller)
        if answer is None:
            return False
        if answer == "unknown" or answer.get("status") == "accepted":
            self.sends.append((target, text))
            return True
        self.failure = "sessions_send %s -> %s: %s" % (caller, target, answer)
        return False

    def spawn(self, i):
        parent_agent = self.rng.choice(self.agents)
        parent = "agent:%s:main" % parent_agent
        answer = self.request("POST", "/v1/tools/sessions_spawn",
                              {"task": "chaos task %d" % i,
                               "agentId": self.other_agent(parent_agent)}, parent)
        if answer is None:
            return None
        if answer == "unknown":
            return ()
        if answer.get("status") != "accepted":
            self.failure = "sessions_spawn by %s: %s" % (parent, answer)
            return None
        return (parent, answer["runId"], answer["childSessionKey"])

    def finish(self, spawned):
        parent, run_id, child = spawned
        answer = self.request("POST", "/v1/runs/%s/finish" % run_id,
                              {"status": "ok", "result": "done " + run_id})
        if answer is None:
            return False
        self.spawns.append(spawned)
        return True

    def run(self):
        i, pending = 0, None
        while not self.stop.is_set() and self.failure is None:
            if i % 2 == 0 or not self.spawns_on:
                if not self.send(i):
                    return
            else:
                spawned = self.spawn(i)
                if spawned is None:
                    return
                if pending and not self.finish(pending):
                    return
                pending = spawned or None
            i += 1
            time.sleep(self.PAUSE)
        if pending and self.failure is None:
            self.finish(pending)


def transcript(node_url, session):
    """The transcript of `session` as itself reads it: each message's content, as JSON text."""
    req = urllib.request.Request(node_url + "/v1/tools/sessions_history",
                                 data=json.dumps({"sessionKey": session, "limit": 1000}).encode(),
                                 headers={"Content-Type": "application/json",
                                          "X-Session-Key": session})
    with urllib.request.urlopen(req, timeout=30) as r:
        return [json.dumps(m.get("content")) for m in json.loads(r.read())["messages"]]


def completed_runs(node_url, child):
    """The run ids of `child`'s run_completed events."""
    with urllib.request.urlopen(node_url + "/v1/sessions/%s/state?changesSince=0&limit=200"
                                % child, timeout=30) as r:
        events = json.loads(r.read()).get("stateChanges", {}).get("events", [])
    return [e.get("runId") for e in events if e.get("kind") == "run_completed"]


def check(cluster, messenger, settle_seconds=60):
    """Problems found (a list of strings) and a summary line."""
    node = cluster.node_url(cluster.node_names()[0])
    problems = []
    by_target = {}
    for target, text in messenger.sends:
        by_target.setdefault(target, []).append(text)

    def count(texts, needle):
        return sum(1 for t in texts if needle in t)

    def mail_settled():
        for target, texts in by_target.items():
            got = transcript(node, target)
            if any(count(got, t) < 1 for t in texts):
                return False
        for parent, run_id, _ in messenger.spawns:
            if count(transcript(node, parent), "run " + run_id) < 1:
                return False
        return True
    try:
        wait_for("every message and announcement delivered", mail_settled, settle_seconds, 0.5)
    except RuntimeError as e:
        problems.append(str(e))
    for target, texts in by_target.items():
        got = transcript(node, target)
        for t in texts:
            n = count(got, t)
            if n != 1:
                problems.append("%r is in %s's transcript %d times" % (t, target, n))
    for parent, run_id, child in messenger.spawns:
        n = count(transcript(node, parent), "run " + run_id + ",")
        if n != 1:
            problems.append("run %s is announced to %s %d times" % (run_id, parent, n))
        done = completed_runs(node, child).count(run_id)
        if done != 1:
            problems.append("run %s: %d run_completed in %s" % (run_id, done, child))
    line = "messages %d, completions %d, unknown %d" % (
        len(messenger.sends), len(messenger.spawns), messenger.unknown)
    return problems, line


def node_args(work):
    """The `serve` flags every node of a run with a Messenger needs (its config file is
    written under `work`)."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(os.path.abspath(work), "tools-config.json")
    with open(path, "w") as f:
        json.dump(CONFIG, f)
    return NODE_ARGS + ["--config", path]

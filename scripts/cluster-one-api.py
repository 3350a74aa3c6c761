#!/usr/bin/env python3
"""One cluster, one API (docs/cluster-internals.md,
"One address per node: any node answers any session"): the same seeded workload through the
nodes' own ports of a local cluster and through one single-node daemon, compared answer by
answer.

Agents are spread over every partition (two per partition, two sessions each), so most
watches and session tool calls cross a partition boundary. Both sides run with
`--visibility all --agent-to-agent`, and every session is registered (PUT) first. Each step
goes to a random node of the cluster and to the single node: an event (one in three with a
dedupe key, some repeating an earlier key), a watch, a peek, a drain, a versions lookup of
three sessions, a session's changes, or a session tool called by a random session:
`sessions_list` (the whole list), `session_status` of another session (with `changesSince`
half the time), `sessions_history`, a fire-and-forget `sessions_send` to another session
(the step waits, bounded, until the cluster's mail has landed in the target's transcript),
`subagents` list, `sessions_yield`, a `sessions_spawn` of a child in another session's
agent, or the end (ok or error) of a
running child's run at `POST /v1/runs/{id}/finish` (both wait, bounded, until the child's
journal — written at its partition by mail — equals the single node's). At the end the
children's journals and transcripts are compared too, and the parents' transcripts hold
the completion announcements.
The answers must agree, up to what a cluster changes on purpose:

  A1  sequences are n·P + p in the cluster and dense on a single node: events are compared
      by their kind and summary, a notice's "changesSince N" by the number of events after N
      in its target (the same on both), never by N itself;
  A5  notices come in partition order, not oldest first: a drain's or a peek's notices are
      compared as a set of target keys;
  Mail  messages of different sends to one partition may arrive in another order than they
      were sent ("Session tools across partitions"): a transcript is compared as a sorted
      list of its messages' texts; run ids and spawned children's ids (random UUIDs) are
      replaced by one placeholder wherever they appear (keys, notices, announcement texts).
  A list's order is by last activity, whose milliseconds differ between the two: a
      `sessions_list` answer is compared as a set of rows (key, agent, kind, label,
      parent), with its count.

At the end every session's whole change list and every watcher's pending notices are
compared the same way. Resets (the saga of "Watchers across partitions") and deletions
(each followed by the session's registration again) are steps too. Last line: "steps S,
events E, drains D (notices N), resets X, deletes Z, tool calls T
(reads R, sends M, spawns C, finishes F, yields Y; combined announcements K), one API ok".

  scripts/cluster-one-api.py --statewatch build/statewatch [--seed S] [--steps N]
                             [--partitions P] [--dir DIR] [--keep]
"""
import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_lib as cl  # noqa: E402


def request(url, method="GET", body=None, timeout=30, headers=None):
    """(status, parsed JSON, headers) of one request; HTTP errors are answers too."""
    data = json.dumps(body).encode() if body is not None else None
    h = dict(headers or {})
    if data:
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read() or b"null"), dict(r.headers)
    except urllib.error.HTTPError as e:
        raw = e.read()
        return e.code, json.loads(raw) if raw else None, dict(e.headers)


class Mismatch(Exception):
    pass


class Pair:
    """The cluster (any node) and the single node, asked the same thing."""

    def __init__(self, nodes, single, rng):
        self.nodes, self.single, self.rng = nodes, single, rng
        self.running = []   # ((cluster run, single run), (cluster child, single child), parent)
        self.children = []  # ((cluster child key, single child key), parent), every one

    def both(self, method, target, body=None, headers=None):
        node = self.rng.choice(self.nodes)
        c = request(node + target, method, body, headers=headers)
        s = request(self.single + target, method, body, headers=headers)
        if c[0] != s[0]:
            raise Mismatch("%s %s via %s: cluster %d %s, single node %d %s" %
                           (method, target, node, c[0], c[1], s[0], s[1]))
        return c, s

    def tool(self, name, caller, params):
        """A session tool called by `caller` on both sides."""
        return self.both("POST", "/v1/tools/" + name, params, {"X-Session-Key": caller})


def tool(url, name, caller, params):
    return request(url + "/v1/tools/" + name, "POST", params, headers={"X-Session-Key": caller})


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def norm(text):
    """`text` with run ids and spawned children's ids (random UUIDs, different on the two
    sides) replaced by one placeholder."""
    return UUID.sub("<uuid>", text) if isinstance(text, str) else text


def list_view(body):
    """A sessions_list answer as what must agree: its rows as a set, and its count."""
    rows = sorted((norm(r["key"]), r.get("agentId"), r.get("kind"), r.get("label"),
                   r.get("parentSessionKey")) for r in body.get("sessions") or [])
    return rows, body.get("count")


def status_view(body):
    """A session_status answer without what differs on purpose (times, A1's sequences)."""
    changes = body.get("stateChanges") or {}
    return ({k: body.get(k) for k in ("sessionKey", "agentId", "kind", "label")},
            body.get("stateVersion") == 0,
            [(e.get("kind"), e.get("summary")) for e in changes.get("changes") or []],
            changes.get("historyGap"))


def history_texts(url, caller, key):
    """The texts of `key`'s transcript as `caller` reads it, sorted (mail keeps no order
    across sends: "Session tools across partitions")."""
    st, body, _ = tool(url, "sessions_history", caller, {"sessionKey": key, "limit": 200})
    if st != 200:
        raise Mismatch("sessions_history of %s at %s: %d %s" % (key, url, st, body))
    return sorted(norm(json.dumps(m.get("content"), sort_keys=True)) for m in body["messages"])


def changes(pair_url, key, after=0):
    """Every event of `key` after `after` as (kind, summary), paging changesSince."""
    out = []
    for _ in range(1000):  # bounded: 200 a page
        st, body, _ = request("%s/v1/sessions/%s/state?changesSince=%d" % (pair_url, key, after))
        if st != 200:
            raise Mismatch("state of %s at %s: %d %s" % (key, pair_url, st, body))
        page = body.get("changes") or []
        out += [(e["kind"], e.get("summary")) for e in page]
        if len(page) < 200:
            return out, body.get("historyGap", False)
        after = page[-1]["sequence"]
    raise Mismatch("more than 200,000 events in %s" % key)


def notice_view(pair_url, notices):
    """A notice list as sorted (target, events after its changesSince) — what the text
    promises; a spawned child's id is replaced by a placeholder."""
    out = {}
    for n in notices:
        target = n["targetSessionKey"]
        since = int(n["text"].rsplit(" ", 1)[1].rstrip("."))
        expected_text = ('Session "%s" changed (other actor). Reconcile before acting: '
                         'session_status sessionKey "%s" changesSince %d.' % (target, target, since))
        if n["text"] != expected_text:
            raise Mismatch("notice text %r is not the contract's" % n["text"])
        if target in out:
            raise Mismatch("two notices for %s in one answer" % target)
        out[target] = len(changes(pair_url, target, since)[0])
    return sorted((norm(t), n) for t, n in out.items())


def tool_args(work):
    """Both sides let every session see and message every other and spawn into any agent
    (docs/semantics.md, "Session tools": visibility, agent-to-agent,
    agents.defaults.subagents.allowAgents)."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(os.path.abspath(work), "tools-config.json")
    with open(path, "w") as f:
        json.dump({"agents": {"defaults": {"subagents": {"allowAgents": ["*"],
                                                         "maxChildrenPerAgent": 100}}}}, f)
    return ["--visibility", "all", "--agent-to-agent", "--config", path]


def tool_step(pair, rng, sessions, step):
    """One session tool call by a random session, compared; returns "send", "spawn",
    "finish" or "read"."""
    caller, other = rng.sample(sessions, 2)
    r = rng.random()
    if r < 0.2:
        c, s = pair.tool("sessions_list", caller, {"limit": 200})
        if list_view(c[1]) != list_view(s[1]):
            raise Mismatch("step %d: sessions_list by %s: %s vs %s" % (step, caller, c[1], s[1]))
        return "read"
    if r < 0.4:
        params = {"sessionKey": other}
        if rng.random() < 0.5:
            params["changesSince"] = 0
        c, s = pair.tool("session_status", caller, params)
        if status_view(c[1]) != status_view(s[1]):
            raise Mismatch("step %d: session_status of %s: %s vs %s" % (step, other, c[1], s[1]))
        return "read"
    if r < 0.5:
        if history_texts(rng.choice(pair.nodes), caller, other) != \
                history_texts(pair.single, caller, other):
            raise Mismatch("step %d: sessions_history of %s differs" % (step, other))
        return "read"
    if r < 0.6:
        return spawn_step(pair, caller, other, step)
    if r < 0.7 and pair.running:
        return finish_step(pair, rng.randrange(len(pair.running)), step)
    if r < 0.75:
        c, s = pair.tool("subagents", caller, {"action": "list"})
        if children_view(c[1]) != children_view(s[1]):
            raise Mismatch("step %d: subagents list of %s: %s vs %s" % (step, caller, c[1], s[1]))
        return "read"
    if r < 0.8:
        # Its children's results then arrive as one announcement when the last one ends: a
        # parent with a running child yields.
        if pair.running:
            caller = rng.choice(pair.running)[2]
        c, s = pair.tool("sessions_yield", caller, {})
        if (c[1].get("status"), c[1].get("waitingFor")) != \
                (s[1].get("status"), s[1].get("waitingFor")):
            raise Mismatch("step %d: sessions_yield of %s: %s vs %s" % (step, caller, c[1], s[1]))
        return "yield"
    c, s = pair.tool("sessions_send", caller,
                     {"sessionKey": other, "message": "step %d from %s" % (step, caller),
                      "timeoutSeconds": 0})
    if (c[1].get("status"), c[1].get("sessionKey")) != (s[1].get("status"), s[1].get("sessionKey")):
        raise Mismatch("step %d: sessions_send %s -> %s: %s vs %s" % (step, caller, other, c[1], s[1]))
    if c[0] == 200:
        # Mail is asynchronous ("Session tools across partitions"): wait, bounded, until the
        # cluster's transcript holds it. Asked at a node of its own choosing, not the seeded
        # generator, so the workload's sequence does not depend on how many polls that took.
        want = history_texts(pair.single, caller, other)
        node = pair.nodes[step % len(pair.nodes)]
        cl.wait_for("step %d's message in %s" % (step, other),
                    lambda: history_texts(node, caller, other) == want, 15)
    return "send"


def children_view(body):
    """A subagents list as what must agree: its total and each child's status and label."""
    rows = [(group, r.get("status"), r.get("label")) for group in ("active", "recent")
            for r in body.get(group) or []]
    return body.get("total"), sorted(rows)


def settle_child(pair, child, step):
    """Waits (bounded) until the cluster's journal of a spawned child — written at its own
    partition by mail ("Session tools across partitions") — equals the single node's."""
    want = changes(pair.single, child[1])
    node = pair.nodes[step % len(pair.nodes)]
    cl.wait_for("step %d: the journal of %s" % (step, child[0]),
                lambda: changes(node, child[0]) == want, 15)


def spawn_step(pair, caller, other, step):
    """`caller` spawns a child in `other`'s agent (mostly another partition's)."""
    agent = other.split(":")[1]
    c, s = pair.tool("sessions_spawn", caller, {"task": "task of step %d" % step,
                                                "agentId": agent, "label": "c%d" % step})
    if c[1].get("status") != s[1].get("status"):
        raise Mismatch("step %d: sessions_spawn by %s: %s vs %s" % (step, caller, c[1], s[1]))
    if c[0] != 200 or c[1].get("status") != "accepted":
        return "spawn"
    child = (c[1]["childSessionKey"], s[1]["childSessionKey"])
    if norm(child[0]) != norm(child[1]):
        raise Mismatch("step %d: child keys %s vs %s" % (step, child[0], child[1]))
    settle_child(pair, child, step)
    pair.running.append(((c[1]["runId"], s[1]["runId"]), child, caller))
    pair.children.append((child, caller))
    return "spawn"


def finish_step(pair, i, step):
    """Ends the i-th running child's run ("ok" or "error"), through any node and at the single
    node; the parent's announcement is compared with its transcript later."""
    (crun, srun), child, parent = pair.running.pop(i)
    status = "ok" if step % 3 else "error"
    body = {"status": status, "result": "result of step %d" % step}
    node = pair.rng.choice(pair.nodes)
    c = request(node + "/v1/runs/%s/finish" % crun, "POST", body)
    s = request(pair.single + "/v1/runs/%s/finish" % srun, "POST", body)
    if (c[0], c[1].get("status")) != (s[0], s[1].get("status")):
        raise Mismatch("step %d: finish of %s: %s vs %s" % (step, child, c, s))
    settle_child(pair, child, step)
    return "finish"


def run(args):
    rng = random.Random(args.seed)
    work = args.dir or tempfile.mkdtemp(prefix="statewatch-one-api.")
    cluster = cl.LocalCluster.create(os.path.join(work, "cluster"), args.statewatch,
                                     nodes=3, partitions=args.partitions, lease_ttl=2,
                                     node_args=tool_args(work))
    single_proc = None
    try:
        cluster.up()
        cluster.wait_settled(seconds=90, quiet=1.0)
        port = cl.free_port()
        log = open(os.path.join(work, "single.log"), "w")
        single_proc = subprocess.Popen(
            [args.statewatch, "serve", "--data", os.path.join(work, "single"),
             "--listen", "127.0.0.1:%d" % port, "--port-file", os.path.join(work, "single.port")]
            + tool_args(work),
            stdout=log, stderr=subprocess.STDOUT)
        single = "http://127.0.0.1:%d" % port
        cl.wait_for("the single node", lambda: request(single + "/healthz")[0] == 200, 30)
        nodes = [cluster.node_url(n) for n in cluster.node_names()]
        # A node reads its settings at start only; SIGHUP (logrotate, systemctl reload) is
        # logged and must not end it.
        for name in cluster.node_names():
            os.kill(cluster.pid(name), signal.SIGHUP)
        for name, url in zip(cluster.node_names(), nodes):
            cl.wait_for("node %s logging the SIGHUP" % name,
                        lambda: "config_reload_unsupported" in open(
                            os.path.join(cluster.dir, name + ".log")).read(), 30)
            if not cluster.alive(name) or request(url + "/healthz")[0] != 200:
                raise Mismatch("node %s did not survive SIGHUP" % name)
        pair = Pair(nodes, single, rng)

        agents = []
        for p in range(args.partitions):
            agents += cl.agents_of(args.partitions, p, "w", 2)
        sessions = ["agent:%s:%s" % (a, s) for a in agents for s in ("main", "task")]
        for i, key in enumerate(sessions):
            pair.both("PUT", "/v1/sessions/" + key, {"label": "s%d" % i})
        events = drains = drained = resets = deletes = 0
        tools = {"read": 0, "send": 0, "spawn": 0, "finish": 0, "yield": 0}
        dedupe_keys = []
        for step in range(args.steps):
            r = rng.random()
            if r < 0.38:
                key = rng.choice(sessions)
                ev = {"sessionKey": key, "kind": "human_direct_message", "actorType": "human",
                      "summary": "step %d" % step, "payload": {"channel": "telegram"}}
                if rng.random() < 1 / 3:
                    if dedupe_keys and rng.random() < 0.3:
                        k, key = rng.choice(dedupe_keys)
                        ev["sessionKey"] = key
                    else:
                        k = "d%d" % step
                        dedupe_keys.append((k, key))
                    ev["dedupeKey"] = k
                (c, s) = pair.both("POST", "/v1/events", ev)
                if c[0] == 200:
                    events += 1
                    cd = [e.get("deduplicated", False) for e in c[1]["events"]]
                    sd = [e.get("deduplicated", False) for e in s[1]["events"]]
                    if cd != sd:
                        raise Mismatch("step %d: deduplicated %s vs %s" % (step, cd, sd))
            elif r < 0.52:
                tools[tool_step(pair, rng, sessions, step)] += 1
            elif r < 0.62:
                w, t = rng.sample(sessions, 2)
                (c, s) = pair.both("POST", "/v1/watches", {"watcher": w, "target": t})
                if c[1] != s[1]:
                    raise Mismatch("step %d: watch %s -> %s: %s vs %s" % (step, w, t, c[1], s[1]))
            elif r < 0.8:
                w = rng.choice(sessions)
                drain = rng.random() < 0.6
                if drain:
                    (c, s) = pair.both("POST", "/v1/notices/drain", {"watcher": w})
                else:
                    (c, s) = pair.both("GET", "/v1/notices?watcher=" + w)
                if c[1].get("incomplete"):
                    raise Mismatch("step %d: an incomplete answer with every node up: %s" %
                                   (step, c[1]))
                ct = sorted(norm(n["targetSessionKey"]) for n in c[1]["notices"])
                stt = sorted(norm(n["targetSessionKey"]) for n in s[1]["notices"])
                if ct != stt:
                    raise Mismatch("step %d: notices of %s: %s vs %s" % (step, w, ct, stt))
                if drain:
                    drains += 1
                    drained += len(ct)
            elif r < 0.9:
                keys = rng.sample(sessions, 3)
                (c, s) = pair.both("POST", "/v1/versions", {"sessions": keys})
                if [v["sessionKey"] for v in c[1]["versions"]] != keys:
                    raise Mismatch("step %d: versions out of order: %s" % (step, c[1]))
                cz = [v["stateVersion"] == 0 for v in c[1]["versions"]]
                sz = [v["stateVersion"] == 0 for v in s[1]["versions"]]
                if cz != sz:
                    raise Mismatch("step %d: versions %s vs %s" % (step, c[1], s[1]))
            elif r < 0.93:
                # A reset (a saga over the partitions listing the session's cursors as a
                # watcher, "Watchers across partitions") or a deletion, after which the session
                # is registered again (a send to an unknown key of another partition is accepted
                # in a cluster where one node answers 404: "Session tools across partitions").
                key = rng.choice(sessions)
                if rng.random() < 0.5:
                    (c, s) = pair.both("POST", "/v1/sessions/%s/reset" % key, {})
                    resets += 1
                else:
                    (c, s) = pair.both("DELETE", "/v1/sessions/" + key)
                    deletes += 1
                if c[0] == 200 and c[1] != s[1]:
                    raise Mismatch("step %d: reset/delete of %s: %s vs %s" % (step, key, c[1], s[1]))
                pair.both("PUT", "/v1/sessions/" + key, {"label": "s%d" % sessions.index(key)})
            else:
                key = rng.choice(sessions)
                if changes(rng.choice(nodes), key) != changes(single, key):
                    raise Mismatch("step %d: changes of %s differ" % (step, key))

        combined = 0  # a yielded parent's one announcement of its children's results
        for key in sessions:
            if changes(rng.choice(nodes), key) != changes(single, key):
                raise Mismatch("the end: changes of %s differ" % key)
            c = request(rng.choice(nodes) + "/v1/notices?watcher=" + key)
            s = request(single + "/v1/notices?watcher=" + key)
            if notice_view(nodes[0], c[1]["notices"]) != notice_view(single, s[1]["notices"]):
                raise Mismatch("the end: pending notices of %s: %s vs %s" % (key, c[1], s[1]))
            caller = rng.choice(sessions)
            texts = history_texts(single, caller, key)
            if history_texts(rng.choice(nodes), caller, key) != texts:
                raise Mismatch("the end: the transcript of %s differs" % key)
            combined += sum("Results of your sub-agents" in t for t in texts)
        for child, parent in pair.children:  # a leaf sub-agent has no sessions_history
            if changes(rng.choice(nodes), child[0]) != changes(single, child[1]):
                raise Mismatch("the end: changes of the child %s differ" % child[0])
            if history_texts(rng.choice(nodes), parent, child[0]) != \
                    history_texts(single, parent, child[1]):
                raise Mismatch("the end: the transcript of the child %s differs" % child[0])
        print("steps %d, events %d, drains %d (notices %d), resets %d, deletes %d, "
              "tool calls %d (reads %d, sends %d, "
              "spawns %d, finishes %d, yields %d; combined announcements %d), one API ok" %
              (args.steps, events, drains, drained, resets, deletes, sum(tools.values()),
               tools["read"],
               tools["send"], tools["spawn"], tools["finish"], tools["yield"], combined))
        return 0
    except (Mismatch, RuntimeError) as e:
        print("FAILED: %s (logs under %s)" % (e, work))
        args.keep = True
        return 1
    finally:
        if single_proc:
            single_proc.kill()
            single_proc.wait()
        cluster.down()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--statewatch", default=os.environ.get("STATEWATCH_BIN", "build/statewatch"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--dir")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    print("seed %d" % args.seed)
    sys.exit(run(args))


if __name__ == "__main__":
    main()

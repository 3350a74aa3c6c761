#!/usr/bin/env python3
"""Load driver and checker for scripts/cluster-smoke.sh (stdlib only).

Every partition p of P gets its own sessions (agents whose XXH64 hash falls in p, as the
engine routes them), two watchers and its own files in WORK: acks<p>.jsonl (one line per
acknowledged event) and ops<p>.jsonl (the partition's operations in the order it applied
them, for the reference model: watch, record, drain, sweep).

  cluster-smoke.py setup WORK P p URL         register the partition's watches
  cluster-smoke.py load WORK P p FIRST COUNT DRAIN_EVERY URL [URL...]
      record COUNT events (every other with a dedupe key; some naming a watcher), draining
      watcher 1 every DRAIN_EVERY events (0: never). A request refused before it could land
      (connection refused, 503, 421) is retried on the next URL (an owner that died, a
      standby not yet taken over); one whose answer was lost is retried only when it has a
      dedupe key, else left for the checker to resolve. The first success on a new URL
      after another is an ownership change: the new owner's restart sweep goes into ops.
  cluster-smoke.py refused P URL              exit 0 when a write to URL is refused with
      503 "partition moved" and a read with 503 partition_moved (a fenced-out owner)
  cluster-smoke.py standby URL                exit 0 when a write to the standby at URL is
      refused with 503 "standby"
  cluster-smoke.py same-digest URL1 URL2      exit 0 once both answer GET
      /v1/cluster/digest with the same position and digest (bounded: ~20 s)
  cluster-smoke.py leader NATS_MONITOR_URL STREAM   the server name leading STREAM
  cluster-smoke.py check WORK P MODEL URL...  URL i: partition i's owner. Every acknowledged
      event present exactly once, every sequence n*P+p of its partition and unique across
      partitions, increasing per session, and each watcher's pending notices equal to what
      the reference model (MODEL: the cluster_smoke_model binary) gives for the same ops.
"""
import json
import os
import subprocess
import sys
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster_lib import NotLanded, call, get, post, xxh64  # noqa: E402

KIND = "human_direct_message"
SESSIONS_PER_PARTITION = 4


# ---- the partition's sessions and watchers ----------------------------------------------------
def sessions_of(partitions, p):
    """The partition's sessions: agents smoke0, smoke1, ... that hash into it."""
    agents = [a for a in ("smoke%d" % k for k in range(64))
              if xxh64(a.encode()) % partitions == p][:2]
    return ["agent:%s:s%d" % (a, j) for a in agents for j in range(SESSIONS_PER_PARTITION // 2)]


def watchers_of(p):
    # Watchers may live anywhere: a cursor lives in its target's partition.
    return ["agent:boss%d:main" % p, "agent:audit%d:main" % p]


# ---- the driver ------------------------------------------------------------------------------
def append_lines(path, lines):
    with open(path, "a") as f:
        for line in lines:
            f.write(json.dumps(line) + "\n")


def last_url(work, p):
    path = os.path.join(work, "ops%d.jsonl" % p)
    url = None
    if os.path.exists(path):
        for line in open(path):
            url = json.loads(line).get("url", url)
    return url


def setup(work, partitions, p, url):
    w1, w2 = watchers_of(p)
    sessions = sessions_of(partitions, p)
    ops = []
    for target in sessions:
        post(url + "/v1/watches", {"watcher": w1, "target": target})
        ops.append({"op": "watch", "watcher": w1, "target": target, "url": url})
    post(url + "/v1/watches", {"watcher": w2, "target": sessions[0]})
    ops.append({"op": "watch", "watcher": w2, "target": sessions[0], "url": url})
    append_lines(os.path.join(work, "ops%d.jsonl" % p), ops)
    print("partition %d: sessions %s" % (p, " ".join(sessions)))


def load(work, partitions, p, first, count, drain_every, urls):
    w1, w2 = watchers_of(p)
    sessions = sessions_of(partitions, p)
    ops = []
    owner = last_url(work, p)
    ackfile = open(os.path.join(work, "acks%d.jsonl" % p), "a")

    def ack(i, ev, e):  # written at once: the shell waits for progress on this file
        ackfile.write(json.dumps({"i": i, "session": ev["sessionKey"],
                                  "sequence": e["sequence"]}) + "\n")
        ackfile.flush()

    acked = unknown = 0
    for i in range(first, first + count):
        ev = {"sessionKey": sessions[i % len(sessions)], "kind": KIND, "actorType": "human",
              "summary": "p%d smoke %d" % (p, i)}
        if i % 2 == 0:
            ev["dedupeKey"] = "p%d-smoke-%d" % (p, i)
        if i % 5 == 0:
            ev["watchers"] = [w2]  # a producer's watcher: its cursor comes with the event
        op = dict(ev, op="record", session=ev["sessionKey"], sequence=None)
        del op["sessionKey"]
        lost_before = None  # the owner of an attempt whose answer was lost
        done = False
        for attempt in range(80):  # bounded: ~40 s, longer than a takeover or an election
            url = urls[attempt % len(urls)]
            try:
                e = call(lambda: post(url + "/v1/events", ev))["events"][0]
            except NotLanded:
                time.sleep(0.25)
                continue
            except (urllib.error.URLError, OSError, KeyError):
                if "dedupeKey" not in ev:
                    ops.append(op)  # unknown outcome: the checker looks for it
                    unknown += 1
                    done = True
                    break
                lost_before = lost_before or url
                time.sleep(0.5)
                continue
            if url != owner and owner is not None:
                # The first success on a new owner: its restart sweep ran before this. A
                # deduplicated answer for an attempt lost on the old owner landed before it.
                if e.get("deduplicated") and lost_before == owner:
                    ops.append(dict(op, sequence=e["sequence"], url=owner))
                    ops.append({"op": "sweep", "url": url})
                    owner = url
                    ack(i, ev, e)
                    acked += 1
                    done = True
                    break
                ops.append({"op": "sweep", "url": url})
            owner = url
            ops.append(dict(op, sequence=e["sequence"], url=url))
            ack(i, ev, e)
            acked += 1
            done = True
            break
        if not done:
            print("partition %d: event %d refused for 40 s" % (p, i))
            append_lines(os.path.join(work, "ops%d.jsonl" % p), ops)
            return 1
        if drain_every and (i - first + 1) % drain_every == 0:
            post(owner + "/v1/notices/drain", {"watcher": w1})
            ops.append({"op": "drain", "watcher": w1, "url": owner})
    append_lines(os.path.join(work, "ops%d.jsonl" % p), ops)
    print("partition %d: %d of %d acknowledged, %d with an unknown outcome" %
          (p, acked, count, unknown))
    return 0


# ---- fenced-out owner, standby, digests ------------------------------------------------------
def answered_503(request, what, marker):
    """0 when `request` is answered 503 with `marker` in the body, else 1 (it was served)."""
    try:
        request()
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        print("%s refused: HTTP %d %s" % (what, e.code, body.strip()[:120]))
        return 0 if e.code == 503 and marker in body else 1
    except (urllib.error.URLError, OSError) as e:
        print("%s failed: %s" % (what, e))
        return 1
    print("%s was SERVED" % what)
    return 1


def zombie_event(partitions):
    return {"sessionKey": sessions_of(partitions, 0)[0], "kind": KIND, "actorType": "human",
            "summary": "zombie"}


def refused(partitions, url):
    if answered_503(lambda: post(url + "/v1/events", zombie_event(partitions), timeout=30),
                    "the zombie's append", "partition moved"):
        return 1
    return answered_503(lambda: get(url + "/v1/export", timeout=30),
                        "the fenced-out owner's read", "partition_moved")


def standby(url):
    return answered_503(lambda: post(url + "/v1/events", zombie_event(1)),
                        "a write to the standby", '"standby"')


def same_digest(url1, url2):
    a = b = None
    for _ in range(200):  # bounded: the standby folds every 50 ms
        a = json.loads(get(url1 + "/v1/cluster/digest"))
        b = json.loads(get(url2 + "/v1/cluster/digest"))
        if (a["position"], a["digest"]) == (b["position"], b["digest"]):
            print("digests equal at stream position %d: %s" % (a["position"], a["digest"][:16]))
            return 0
        time.sleep(0.1)
    print("digests differ: %s %s" % (a, b))
    return 1


def leader(monitor_url, stream):
    d = json.loads(get(monitor_url + "/jsz?streams=true"))
    for a in d.get("account_details", []):
        for s in a.get("stream_detail", []):
            if s["name"] == stream:
                print(s.get("cluster", {}).get("leader", ""))
                return 0
    return 1


# ---- the checker -----------------------------------------------------------------------------
def journal(url):
    """{summary: [(session, sequence), ...]} from the owner's export."""
    out = {}
    for line in get(url + "/v1/export", timeout=60).splitlines():
        if line.strip():
            e = json.loads(line)
            out.setdefault(e["summary"], []).append((e["sessionKey"], e["sequence"]))
    return out


def check_partition(work, partitions, p, model, url, all_seqs):
    seen = journal(url)
    acked = [json.loads(l) for l in open(os.path.join(work, "acks%d.jsonl" % p))]
    lost = sum(1 for a in acked if "p%d smoke %d" % (p, a["i"]) not in seen)
    dup = sum(1 for v in seen.values() if len(v) > 1)
    problems = []
    by_session = {}
    for summary, rows in seen.items():
        for session, seq in rows:
            by_session.setdefault(session, []).append(seq)
            if seq % partitions != p:
                problems.append("sequence %d of %s is not n*%d+%d" % (seq, session, partitions, p))
            if seq in all_seqs:
                problems.append("sequence %d handed out twice across partitions" % seq)
            all_seqs.add(seq)
    for session in sessions_of(partitions, p):
        state = json.loads(get(url + "/v1/sessions/%s/state?changesSince=0&limit=1000" % session))
        changes = state.get("stateChanges", {})
        seqs = [e["sequence"] for e in changes.get("events", [])]
        if changes.get("truncated") or changes.get("historyGap"):
            problems.append("session %s: the answer is truncated or has a history gap" % session)
        if seqs != sorted(set(seqs)) or seqs != sorted(by_session.get(session, [])):
            problems.append("session %s: sequences not unique, increasing and as exported" % session)
    # The model's pending notices for the same ops, unknown outcomes resolved by the journal.
    resolved = os.path.join(work, "ops%d.resolved.jsonl" % p)
    with open(resolved, "w") as f:
        for line in open(os.path.join(work, "ops%d.jsonl" % p)):
            op = json.loads(line)
            if op["op"] == "record" and op["sequence"] is None:
                rows = seen.get(op["summary"])
                if not rows:
                    continue  # never landed
                op["sequence"] = rows[0][1]
            f.write(json.dumps(op) + "\n")
    watchers = watchers_of(p)
    expected = json.loads(subprocess.check_output(
        [model, resolved, str(int(time.time() * 1000))] + watchers))
    pending = 0
    for w in watchers:
        got = json.loads(get(url + "/v1/notices?watcher=" + w))["notices"]
        pending += len(got)
        if got != expected[w]:
            problems.append("watcher %s: pending notices %s, the model gives %s" %
                            (w, got, expected[w]))
    for problem in problems[:10]:
        print("partition %d: %s" % (p, problem))
    print("partition %d: acknowledged %d, lost %d, duplicated %d, %d pending notices as the model"
          % (p, len(acked), lost, dup, pending))
    return len(acked), lost, dup, not problems


def check(work, partitions, model, urls):
    total = [0, 0, 0]
    ok = True
    all_seqs = set()
    for p, url in enumerate(urls):
        n, lost, dup, good = check_partition(work, partitions, p, model, url, all_seqs)
        total = [total[0] + n, total[1] + lost, total[2] + dup]
        ok = ok and good
    print("acknowledged %d, lost %d, duplicated %d" % tuple(total))
    return 0 if ok and total[1] == 0 and total[2] == 0 else 1


if __name__ == "__main__":
    a = sys.argv
    cmd = a[1]
    if cmd == "setup":
        setup(a[2], int(a[3]), int(a[4]), a[5])
    elif cmd == "load":
        sys.exit(load(a[2], int(a[3]), int(a[4]), int(a[5]), int(a[6]), int(a[7]), a[8:]))
    elif cmd == "refused":
        sys.exit(refused(int(a[2]), a[3]))
    elif cmd == "standby":
        sys.exit(standby(a[2]))
    elif cmd == "same-digest":
        sys.exit(same_digest(a[2], a[3]))
    elif cmd == "leader":
        sys.exit(leader(a[2], a[3]))
    elif cmd == "check":
        sys.exit(check(a[2], int(a[3]), a[4], a[5:]))
    else:
        sys.exit("unknown command " + cmd)

#!/usr/bin/env python3
"""Load driver and checker for scripts/cluster-smoke.sh (stdlib only).

  cluster-smoke.py load URL FIRST COUNT ACKFILE   record COUNT events (every other with a
      dedupe key) and append each acknowledged one to ACKFILE as a JSON line; an event whose
      answer was lost is retried only when it has a dedupe key (a retry without one could
      record it twice), else counted unacknowledged. Exits when COUNT have been tried.
  cluster-smoke.py refused URL                      exit 0 when a write to URL is refused
      with 503 "partition moved" and a read with 503 partition_moved (a fenced-out owner)
  cluster-smoke.py standby URL                      exit 0 when a write to the standby at URL
      is refused with 503 "standby"
  cluster-smoke.py same-digest URL1 URL2            exit 0 once both answer GET
      /v1/cluster/digest with the same position and digest (bounded: ~20 s)
  cluster-smoke.py check URL ACKFILE                every acknowledged event exactly once
"""
import json
import sys
import time
import urllib.error
import urllib.request

SESSIONS = ["agent:main:smoke%d" % i for i in range(8)]


def post(url, body, timeout=20):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(url, timeout=20):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def load(url, first, count, ackfile):
    acked = 0
    with open(ackfile, "a") as out:
        for i in range(first, first + count):
            ev = {"sessionKey": SESSIONS[i % len(SESSIONS)], "kind": "human_direct_message",
                  "actorType": "human", "summary": "smoke %d" % i}
            if i % 2 == 0:
                ev["dedupeKey"] = "smoke-%d" % i
            for attempt in range(40):  # ~20 s: longer than a stream leader election
                try:
                    e = post(url + "/v1/events", ev)["events"][0]
                    out.write(json.dumps({"i": i, "session": ev["sessionKey"],
                                          "sequence": e["sequence"]}) + "\n")
                    out.flush()
                    acked += 1
                    break
                except (urllib.error.URLError, OSError, KeyError):
                    if "dedupeKey" not in ev:
                        break  # unknown outcome: not acknowledged, never retried
                    time.sleep(0.5)
    print("load %s: %d of %d acknowledged" % (url, acked, count))


def refused(url):
    try:
        post(url + "/v1/events", {"sessionKey": SESSIONS[0], "kind": "human_direct_message",
                                  "actorType": "human", "summary": "zombie"}, timeout=30)
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        print("zombie append refused: HTTP %d %s" % (e.code, body.strip()[:160]))
        if e.code != 503 or "partition moved" not in body:
            return 1
        return stale_read_refused(url)
    except (urllib.error.URLError, OSError) as e:
        print("zombie append failed: %s" % e)
        return 1
    print("zombie append ACCEPTED")
    return 1


def answered_503(request, what, marker):
    """0 when `request` is answered 503 with `marker` in the body, else 1 (it was served)."""
    try:
        request()
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        print("%s refused: HTTP %d %s" % (what, e.code, body.strip()[:120]))
        return 0 if e.code == 503 and marker in body else 1
    print("%s was SERVED" % what)
    return 1


def stale_read_refused(url):
    return answered_503(lambda: get(url + "/v1/export", timeout=30),
                   "the fenced-out owner's read", "partition_moved")


def standby(url):
    return answered_503(lambda: post(url + "/v1/events",
                                {"sessionKey": SESSIONS[0], "kind": "human_direct_message",
                                 "actorType": "human", "summary": "to the standby"}),
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


def check(url, ackfile):
    acked = [json.loads(l) for l in open(ackfile)]
    seen = {}
    for s in SESSIONS:
        state = json.loads(get(url + "/v1/sessions/%s/state?changesSince=0" % s))
        changes = state.get("stateChanges", {})
        if changes.get("truncated") or changes.get("historyGap"):
            print("session %s: the answer is truncated or has a history gap" % s)
            return 1
        events = changes.get("events", [])
        for e in events:
            seen.setdefault((s, e["summary"]), []).append(e["sequence"])
        seqs = [e["sequence"] for e in events]
        if seqs != sorted(set(seqs)):
            print("session %s: sequences not unique and increasing" % s)
            return 1
    lost = sum(1 for a in acked if (a["session"], "smoke %d" % a["i"]) not in seen)
    dup = sum(1 for v in seen.values() if len(v) > 1)
    print("acknowledged %d, lost %d, duplicated %d" % (len(acked), lost, dup))
    return 0 if lost == 0 and dup == 0 else 1


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "load":
        load(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    elif cmd == "refused":
        sys.exit(refused(sys.argv[2]))
    elif cmd == "standby":
        sys.exit(standby(sys.argv[2]))
    elif cmd == "same-digest":
        sys.exit(same_digest(sys.argv[2], sys.argv[3]))
    elif cmd == "check":
        sys.exit(check(sys.argv[2], sys.argv[3]))

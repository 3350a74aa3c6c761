#!/usr/bin/env python3
"""The kill -9 soak of `statewatch serve` (`make soak`; scripts/soak.sh builds and runs it).

Each round starts the daemon on the same data directory (durability sync), lets several
client threads record events over HTTP, and kills the daemon with SIGKILL at a random moment
(sometimes while it is still opening the database). The next round first reads every
session back through session_status changesSince and checks, for everything recorded since
the last check:
  - every acknowledged event (HTTP 200 with its sequence) is present exactly once, with the
    sequence it was acknowledged with;
  - no sequence is ever given to two events (an unacknowledged event that did land counts:
    its sequence must not come back for another one);
then `statewatch verify` must be clean. At the end the whole journal is read once more from
the start. The last line is
    rounds N, acknowledged A, lost L, reused R, verify ok|FAILED
and the exit code is 0 only when L = R = 0 and every verify was clean.

Usage: soak.py --bin build/statewatch [--rounds 1000] [--threads 4] [--seed S] [--keep DIR]
"""
import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

SESSIONS = [f"agent:soak:s{i}" for i in range(8)]
START_TIMEOUT_S = 20  # a daemon that does not listen within this is a failure


class Ledger:
    """What the clients were told, and what has been read back."""

    def __init__(self):
        self.lock = threading.Lock()
        self.acked = {}        # id -> (session, sequence)
        self.seq_owner = {}    # sequence -> id, for every event acknowledged or read back
        self.id_place = {}     # id -> (session, sequence), acknowledged or read back
        self.checked_upto = {s: 0 for s in SESSIONS}
        self.lost = 0
        self.reused = 0
        self.errors = []       # answers that were neither 200 nor a dead daemon

    def ack(self, event_id, session, seq):
        with self.lock:
            self.acked[event_id] = (session, seq)
            self.id_place.setdefault(event_id, (session, seq))
            owner = self.seq_owner.setdefault(seq, event_id)
            if owner != event_id:
                self.reused += 1
                self.errors.append(f"sequence {seq} acknowledged for {event_id}, already {owner}")

    def check_session(self, session, events, after, full):
        """`events`: every event of `session` after `after`, as read back."""
        seen = {}
        for e in events:
            summary = e.get("summary", "")
            if not summary.startswith("soak "):
                continue
            event_id, seq = summary[5:], e["sequence"]
            if event_id in seen:  # one event recorded twice
                self.reused += 1
                self.errors.append(f"{event_id} present twice (sequences {seen[event_id]}, {seq})")
            seen[event_id] = seq
            owner = self.seq_owner.setdefault(seq, event_id)
            if owner != event_id:
                self.reused += 1
                self.errors.append(f"sequence {seq} holds {event_id}, was given to {owner}")
            place = self.id_place.setdefault(event_id, (session, seq))
            if place != (session, seq):
                self.reused += 1
                self.errors.append(f"{event_id} was at {place}, now read at {(session, seq)}")
        for event_id, (s, seq) in self.acked.items():
            if s == session and seq > after and event_id not in seen:
                self.lost += 1
                self.errors.append(f"acknowledged {event_id} (sequence {seq}) is missing")
        if events:
            self.checked_upto[session] = max(after, max(e["sequence"] for e in events))


def request(conn, method, path, body=None, headers=None):
    h = {"Content-Type": "application/json"} if body is not None else {}
    h.update(headers or {})
    conn.request(method, path, body=None if body is None else json.dumps(body), headers=h)
    r = conn.getresponse()
    return r.status, r.read()


def start_daemon(args, data, log):
    cmd = [args.bin, "--data", data, "--durability", "sync", "serve", "--listen", "127.0.0.1:0",
           "--max-rows", "100000000", "--log-level", "warn"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)


def wait_port(proc):
    deadline = time.monotonic() + START_TIMEOUT_S
    line = proc.stdout.readline()  # the daemon prints {"listening":..., "port": N} once bound
    if not line or time.monotonic() > deadline:
        raise RuntimeError(f"the daemon did not start (exit {proc.poll()})")
    return json.loads(line)["port"]


def kill9(proc):
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    proc.stdout.close()


def read_back(port, ledger, full):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for session in SESSIONS:
        after = 0 if full else ledger.checked_upto[session]
        since, events = after, []
        for _ in range(1_000_000):  # bounded: 200 events a page
            status, body = request(conn, "POST", "/v1/tools/session_status",
                                   {"changesSince": since}, {"X-Session-Key": session})
            if status != 200:
                raise RuntimeError(f"session_status {session}: {status} {body[:200]!r}")
            page = json.loads(body)["stateChanges"]
            events += page["events"]
            if not page["truncated"] or not page["events"]:
                break
            since = page["events"][-1]["sequence"]
        ledger.check_session(session, events, after, full)
    conn.close()


def load(port, ledger, round_no, thread_no, stop, rng):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    n = 0
    while not stop.is_set():
        batch = []
        for _ in range(rng.randint(1, 4)):
            batch.append({"sessionKey": rng.choice(SESSIONS), "kind": "human_direct_message",
                          "actorType": "human", "summary": f"soak {round_no}-{thread_no}-{n}"})
            n += 1
        try:
            status, body = request(conn, "POST", "/v1/events", batch)
        except (OSError, http.client.HTTPException):
            return  # killed: whatever was in flight is unacknowledged
        if status != 200:
            with ledger.lock:
                ledger.errors.append(f"POST /v1/events answered {status}: {body[:200]!r}")
            return
        for sent, got in zip(batch, json.loads(body)["events"]):
            ledger.ack(sent["summary"][5:], got["sessionKey"], got["sequence"])


def verify(args, data):
    if not os.path.exists(os.path.join(data, "CURRENT")):
        return None  # killed before the database was first created: nothing to verify
    r = subprocess.run([args.bin, "--data", data, "verify"], capture_output=True, text=True)
    if r.returncode != 0:
        return f"verify exit {r.returncode}: {r.stdout.strip()} {r.stderr.strip()}"
    if not json.loads(r.stdout).get("ok"):
        return f"verify found differences: {r.stdout.strip()}"
    return None


def one_round(args, data, log, ledger, round_no, rng):
    proc = start_daemon(args, data, log)
    if rng.random() < 0.1:  # a kill while the daemon opens and recovers the database
        time.sleep(rng.uniform(0, 0.05))
        kill9(proc)
        return
    port = wait_port(proc)
    read_back(port, ledger, full=False)
    stop = threading.Event()
    threads = [threading.Thread(target=load, args=(port, ledger, round_no, t, stop,
                                                   random.Random(rng.random())))
               for t in range(args.threads)]
    for t in threads:
        t.start()
    time.sleep(rng.uniform(0.02, 0.3))
    kill9(proc)
    stop.set()
    for t in threads:
        t.join(30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--keep", help="use (and keep) this data directory")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = args.keep or tempfile.mkdtemp(prefix="statewatch-soak-")
    data = os.path.join(work, "data")
    ledger = Ledger()
    verify_failures = []
    started = time.monotonic()
    print(f"soak: {args.rounds} rounds, {args.threads} client threads, seed {args.seed}, "
          f"data {data}", file=sys.stderr)
    with open(os.path.join(work, "daemon.log"), "a") as log:
        for round_no in range(args.rounds):
            one_round(args, data, log, ledger, round_no, rng)
            problem = verify(args, data)
            if problem:
                verify_failures.append(f"round {round_no}: {problem}")
            if (round_no + 1) % 50 == 0:
                print(f"soak: round {round_no + 1}, acknowledged {len(ledger.acked)}, "
                      f"lost {ledger.lost}, reused {ledger.reused}, "
                      f"{time.monotonic() - started:.0f} s", file=sys.stderr)
            if ledger.lost or ledger.reused or verify_failures or ledger.errors:
                break
        # The last check reads the whole journal from the start.
        proc = start_daemon(args, data, log)
        port = wait_port(proc)
        read_back(port, ledger, full=True)
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
        proc.stdout.close()
    problem = verify(args, data)
    if problem:
        verify_failures.append(f"final: {problem}")
    for line in (ledger.errors + verify_failures)[:20]:
        print(f"soak: {line}", file=sys.stderr)
    elapsed = time.monotonic() - started
    print(f"soak: {elapsed:.0f} s", file=sys.stderr)
    if not args.keep and not (ledger.errors or verify_failures):
        shutil.rmtree(work, ignore_errors=True)
    ok = not verify_failures
    print(f"rounds {round_no + 1}, acknowledged {len(ledger.acked)}, lost {ledger.lost}, "
          f"reused {ledger.reused}, verify {'ok' if ok else 'FAILED'}")
    return 0 if ok and not ledger.lost and not ledger.reused and not ledger.errors else 1


if __name__ == "__main__":
    sys.exit(main())

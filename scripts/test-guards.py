#!/usr/bin/env python3
"""The loop guards of the real daemon, end to end (docs/guards.md).

Starts `statewatch serve` on a fresh data directory and a free loopback port with a
configuration file that sets the guards, then plays two agents' sessions ping-ponging
sessions_send at each other as fast as they can (each side reads its message from the
GET /v1/deliveries WebSocket feed and answers at once), for at most ROUNDS rounds. Checks:

  * each direction is stopped within the configured budget (burst + what the rate refills
    over the measured run), with HTTP 429, error code loop_guard, a message naming the guard
    and its settings;
  * guard_refused events on each caller's journal (GET /v1/sessions/{key}/state), carrying the
    caller's traceparent;
  * statewatch_guard_refusals_total{guard="send_rate"} in GET /metrics equals the refusals;
  * the traceparent sent with a sessions_send arrives with its delivery on the feed;
  * an invalid traceparent is ignored (the write goes on, with none stored).

Usage: scripts/test-guards.py PATH/TO/statewatch
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import websocket  # python3-websocket

ROUNDS = 200
BURST = 5
PER_MINUTE = 6  # one token every 10 s: the run ends long before many come back
A = "agent:main:alpha"
B = "agent:main:beta"
TRACE_A = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
TRACE_B = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def fail(message):
    print("test-guards: " + message, file=sys.stderr)
    sys.exit(1)


def request(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def start(binary, tmp):
    config = os.path.join(tmp, "statewatch.json")
    with open(config, "w") as f:
        json.dump({"tools": {"sessions": {"visibility": "agent"}},
                   "session": {"agentToAgent": {"maxPingPongTurns": 0}},
                   "guards": {"send": {"perMinute": PER_MINUTE, "burst": BURST},
                              "repeat": {"maxIdentical": 3, "windowMs": 600000}}}, f)
    port_file = os.path.join(tmp, "port")
    err = open(os.path.join(tmp, "serve.err"), "w")
    proc = subprocess.Popen([binary, "serve", "--data", os.path.join(tmp, "data"),
                             "--listen", "127.0.0.1:0", "--port-file", port_file,
                             "--config", config],
                            stdout=subprocess.DEVNULL, stderr=err)
    for _ in range(200):  # at most ~20 s to listen
        if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
            break
        if proc.poll() is not None:
            fail("serve exited: " + open(os.path.join(tmp, "serve.err")).read())
        time.sleep(0.1)
    else:
        fail("no port file after 20 s")
    with open(port_file) as f:
        return proc, int(f.read().strip())


def send(url, caller, target, message, trace):
    return request(url + "/v1/tools/sessions_send", "POST",
                   {"sessionKey": target, "message": message, "timeoutSeconds": 0},
                   {"X-Session-Key": caller, "traceparent": trace})


def take(feed, session_key):
    """The next delivery for `session_key` on the feed (acknowledged), or None within 5 s."""
    feed.settimeout(5)
    while True:
        try:
            d = json.loads(feed.recv())
        except websocket.WebSocketTimeoutException:
            return None
        if d.get("sessionKey") == session_key:
            return d


def ping_pong(url, port):
    feed = websocket.create_connection("ws://127.0.0.1:%d/v1/deliveries?agentId=main" % port)
    tally = {A: [0, 0], B: [0, 0]}  # admitted, refused
    refusal = None
    traces = []
    started = time.monotonic()
    for i in range(ROUNDS):
        for caller, target, trace in ((A, B, TRACE_A), (B, A, TRACE_B)):
            status, body = send(url, caller, target, "turn %d from %s" % (i, caller), trace)
            if status == 200:
                tally[caller][0] += 1
                d = take(feed, target)
                if d is None:
                    fail("no delivery for %s on the feed" % target)
                traces.append((trace, d.get("traceparent")))
                request(url + "/v1/deliveries/%d/ack" % d["deliveryId"], "POST", {})
            elif status == 429:
                tally[caller][1] += 1
                refusal = json.loads(body)["error"]
            else:
                fail("sessions_send answered %d: %s" % (status, body))
    elapsed_ms = (time.monotonic() - started) * 1000
    feed.close()
    return tally, refusal, traces, elapsed_ms


def main():
    if len(sys.argv) != 2:
        fail("usage: scripts/test-guards.py PATH/TO/statewatch")
    binary = os.path.abspath(sys.argv[1])
    if not os.access(binary, os.X_OK):
        fail(binary + " is not built")
    tmp = tempfile.mkdtemp(prefix="statewatch-guards-")
    proc = None
    try:
        proc, port = start(binary, tmp)
        url = "http://127.0.0.1:%d" % port
        for key in (A, B):
            status, body = request(url + "/v1/sessions/" + key, "PUT", {})
            if status != 200:
                fail("registering %s: %d %s" % (key, status, body))

        tally, refusal, traces, elapsed_ms = ping_pong(url, port)
        budget = BURST + int(elapsed_ms * PER_MINUTE / 60000)
        for caller in (A, B):
            admitted, refused = tally[caller]
            if admitted > budget or admitted < BURST:
                fail("%s got %d sends through; the budget was %d" % (caller, admitted, budget))
            if admitted + refused != ROUNDS:
                fail("%s: %d admitted + %d refused != %d" % (caller, admitted, refused, ROUNDS))
        if refusal is None or refusal.get("code") != "loop_guard":
            fail("the refusal was %r, not error code loop_guard" % (refusal,))
        for part in ("loop guard send_rate", "guards.send.burst=%d" % BURST):
            if part not in refusal.get("message", ""):
                fail("the refusal %r does not name %r" % (refusal.get("message"), part))
        for sent, got in traces:
            if sent != got:
                fail("a delivery carried traceparent %r, the call sent %r" % (got, sent))

        refused_total = 0
        for caller, trace in ((A, TRACE_A), (B, TRACE_B)):
            status, body = request(url + "/v1/sessions/%s/state?changesSince=0" % caller)
            if status != 200:
                fail("state of %s: %d %s" % (caller, status, body))
            events = [e for e in json.loads(body)["stateChanges"]["events"]
                      if e["kind"] == "guard_refused"]
            if not events:
                fail("no guard_refused event on %s's journal" % caller)
            if any(e.get("traceparent") != trace for e in events):
                fail("a guard_refused event of %s lacks the caller's traceparent" % caller)
            refused_total += tally[caller][1]

        status, metrics = request(url + "/metrics")
        line = 'statewatch_guard_refusals_total{guard="send_rate"} %d' % refused_total
        if line not in metrics.splitlines():
            got = [l for l in metrics.splitlines() if l.startswith("statewatch_guard_refusals")]
            fail("expected %r in /metrics, got %r" % (line, got))

        # An invalid traceparent is ignored: the write goes on, with none stored.
        event = {"sessionKey": "agent:main:gamma", "kind": "human_direct_message",
                 "actorType": "human", "summary": "hi"}
        status, body = request(url + "/v1/events", "POST", event,
                               {"traceparent": TRACE_A.upper()})
        if status != 200 or "traceparent" in json.loads(body)["events"][0]:
            fail("an invalid traceparent header: %d %s" % (status, body))
        status, body = request(url + "/v1/events", "POST", event, {"traceparent": TRACE_A})
        if status != 200 or json.loads(body)["events"][0].get("traceparent") != TRACE_A:
            fail("a valid traceparent header was not stored: %d %s" % (status, body))

        print("test-guards: %s %d/%d sends through, %s %d/%d, budget %d over %.1f s; "
              "%d refusals journaled and counted" %
              (A, tally[A][0], ROUNDS, B, tally[B][0], ROUNDS, budget, elapsed_ms / 1000,
               refused_total))
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

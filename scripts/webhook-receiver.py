#!/usr/bin/env python3
"""A webhook receiver for scripts/test-webhooks.sh and scripts/bench-webhooks.sh.

Listens on 127.0.0.1 (a free port, written to --port-file) and answers each POST by a seeded
schedule, the same for the same (seed, idempotency key, attempt of that key):

  fail     close the connection without an answer
  timeout  hold the call past the daemon's attempt timeout (--hold-ms), then close
  500      answer 500
  200      answer 200 (always from attempt --max-failures + 1 on)

Paths: /ok/<name> follows the schedule, /always500/<name> always answers 500 (dead letters),
/slow/<name> holds its first call --slow-ms (the test kills the daemon meanwhile; the file
--inflight-file appears when such a call arrives), /fast/<name> always answers 200 (bench).

The secret of path /<kind>/<name> is "secret-<name>". Every call's Statewatch-Signature is
verified (t=<unix s>,v1=<hex HMAC-SHA256 of "<t>.<body>">, within 300 s). One JSON line per
call goes to --log: key, body, path, attempt, outcome, signature validity, traceparent.
Standard library only.
"""
import argparse
import hashlib
import hmac
import json
import os
import random
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def verify(secret, header, body, tolerance_s=300):
    try:
        parts = dict(p.split("=", 1) for p in header.split(","))
        t, mac = parts["t"], parts["v1"]
    except (ValueError, KeyError):
        return False
    if not t.isdigit() or abs(time.time() - int(t)) > tolerance_s:
        return False
    want = hmac.new(secret.encode(), t.encode() + b"." + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(want, mac)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-failures", type=int, default=3)
    ap.add_argument("--hold-ms", type=int, default=1500)
    ap.add_argument("--slow-ms", type=int, default=4000)
    ap.add_argument("--inflight-file", default="")
    ap.add_argument("--quiet-log", action="store_true", help="log only counts (bench)")
    args = ap.parse_args()

    lock = threading.Lock()
    attempts = {}
    counts = {"calls": 0}
    log = open(args.log, "a", buffering=1)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            body = self.rfile.read(length)
            key = self.headers.get("Idempotency-Key", "")
            parts = self.path.split("/")
            kind, name = (parts[1], parts[2]) if len(parts) > 2 else ("?", "?")
            ok_sig = verify("secret-" + name, self.headers.get("Statewatch-Signature", ""), body)
            with lock:
                n = attempts.get(key, 0) + 1
                attempts[key] = n
                counts["calls"] += 1
            if kind == "fast":
                outcome = "200"
            elif kind == "always500":
                outcome = "500"
            elif kind == "slow":
                outcome = "slow" if n == 1 else "200"
            else:
                rng = random.Random("%d|%s|%d" % (args.seed, key, n))
                r = rng.random()
                if n > args.max_failures:
                    outcome = "200"
                elif r < 0.2:
                    outcome = "fail"
                elif r < 0.3:
                    outcome = "timeout"
                elif r < 0.5:
                    outcome = "500"
                else:
                    outcome = "200"
            record = {"key": key, "path": self.path, "attempt": n, "outcome": outcome,
                      "signatureValid": ok_sig, "body": body.decode("utf-8", "replace"),
                      "traceparent": self.headers.get("traceparent", "")}
            if not args.quiet_log:
                log.write(json.dumps(record) + "\n")
            if outcome == "fail":
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return
            if outcome in ("timeout", "slow"):
                if outcome == "slow" and args.inflight_file:
                    open(args.inflight_file, "w").close()
                time.sleep((args.hold_ms if outcome == "timeout" else args.slow_ms) / 1000.0)
                self.close_connection = True
                return
            status = 200 if outcome == "200" else 500
            payload = b"{}"
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(payload)
            self.close_connection = True

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128

    server = Server(("127.0.0.1", 0), Handler)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.stderr.write("receiver: %d calls\n" % counts["calls"])


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# What X-Request-Id costs (docs/request-ids.md): one client posting single events back to
# back on one keep-alive connection, without an id and with a fresh id per request (what the
# CLI and the TypeScript client send), alternating, 3 rounds of N events (default 300) each.
# Prints the medians and their ratio: the price of exactly-once retries for a lone sequential
# writer; and the daemon's CPU time per request each way (its share of that price; the rest is
# the client's: making the id, sending the header). An event's record and answer ride in the
# event's own commit group (no second group).
#
# Usage: [DURABILITY=sync|buffered] bench/request_id_bench.sh PATH/TO/statewatch [N]
# (sync, the daemon's default: each request waits for its group's fsync; buffered shows the
# CPU cost alone.)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
statewatch_argument "${1:-}"
N="${2:-300}"
make_scratch_dir statewatch-rid
start_server --data "$WORK/data" --durability "${DURABILITY:-sync}"
python3 - "$PORT" "$N" "$SERVER_PID" <<'PY'
import http.client, json, os, statistics, sys, time, uuid
port, n, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
cpu_per_request = {False: [], True: []}
def daemon_cpu_seconds():  # user + system time of the daemon (proc(5): fields 14 and 15)
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
def run(with_id, key):
    c = http.client.HTTPConnection("127.0.0.1", port)
    body = json.dumps({"sessionKey": key, "kind": "human_direct_message", "actorType": "human"})
    cpu = daemon_cpu_seconds()
    start = time.perf_counter()
    for _ in range(n):
        headers = {"Content-Type": "application/json"}
        if with_id:
            headers["X-Request-Id"] = uuid.uuid4().hex
        c.request("POST", "/v1/events", body, headers)
        r = c.getresponse()
        r.read()
        if r.status != 200:
            sys.exit(f"request_id_bench: HTTP {r.status}")
    elapsed = time.perf_counter() - start
    cpu_per_request[with_id].append((daemon_cpu_seconds() - cpu) / n * 1e6)
    return n / elapsed
plain, with_id = [], []
for _ in range(3):
    plain.append(run(False, "agent:a:main"))
    with_id.append(run(True, "agent:b:main"))
p, w = statistics.median(plain), statistics.median(with_id)
print(f"events/s without an id {p:.0f}, with X-Request-Id {w:.0f}: {w / p:.2f}x "
      f"(rounds {[round(x) for x in plain]} / {[round(x) for x in with_id]})")
cp, cw = (statistics.median(cpu_per_request[k]) for k in (False, True))
print(f"daemon CPU per request without an id {cp:.0f} us, with X-Request-Id {cw:.0f} us "
      f"(+{cw - cp:.0f} us)")
PY

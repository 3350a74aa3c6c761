#!/usr/bin/env bash
# What X-Request-Id costs (docs/request-ids.md): one client posting single events back to
# back on one keep-alive connection (wrk -t1 -c1: one request in flight), without an id and
# with a fresh id per request, alternating, ROUNDS rounds of DURATION seconds each. Prints
# the medians and their ratio, the price of exactly-once retries for a lone sequential
# writer, and the daemon's CPU time per request each way (from /proc/PID/stat). An event's
# record and answer ride in the event's own commit group (no second group).
#
# The client is wrk, not a script: a Python client spent more CPU a request than the daemon
# (150-200 us against 115), and its rounds varied more than the id's cost (one binary read
# 0.81x and 1.02x in consecutive runs). Both rounds build each request in the same Lua
# function; the rounds with an id add the header, an id unique to the round (its number and
# a counter: the daemon hashes ids, so their shape does not matter). A replayed answer or any
# non-2xx response fails the run.
#
# Usage: [DURABILITY=sync|buffered] [DURATION=5] [ROUNDS=5] \
#        bench/request_id_bench.sh PATH/TO/statewatch
# (sync, the daemon's default: each request waits for its group's fsync; buffered shows the
# CPU cost alone.)
set -euo pipefail
# shellcheck source=bench/lib.sh
source "$(dirname "$0")/lib.sh"
statewatch_argument "${1:-}"
require_command wrk wrk
DURATION="${DURATION:-5}"
ROUNDS="${ROUNDS:-5}"
make_scratch_dir statewatch-rid
start_server --data "$WORK/data" --durability "${DURABILITY:-sync}"

# init(args): args[1] is "with" or "without", args[2] the round's unique prefix.
cat >"$WORK/events.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"sessionKey":"agent:a:main","kind":"human_direct_message","actorType":"human"}'
local with_id, prefix, n, replayed = false, "", 0, 0
function init(args)
  with_id, prefix = args[1] == "with", args[2]
  if with_id then
    wrk.body = '{"sessionKey":"agent:b:main","kind":"human_direct_message","actorType":"human"}'
  end
end
function request()
  local headers = { ["Content-Type"] = "application/json" }
  if with_id then
    n = n + 1
    headers["X-Request-Id"] = prefix .. string.format("%016x", n)
  end
  return wrk.format(nil, nil, headers, nil)
end
function response(status, headers, body)
  if headers["X-Statewatch-Replayed"] then replayed = replayed + 1 end
end
function done(summary, latency, requests)
  io.write(string.format("replayed %d\n", replayed))
end
LUA

daemon_cpu_ticks() {  # user + system clock ticks of the daemon (proc(5): fields 14 and 15)
  python3 -c 'import sys; f = open(sys.argv[1]).read().rsplit(")", 1)[1].split(); print(int(f[11]) + int(f[12]))' \
    "/proc/$SERVER_PID/stat"
}

: >"$WORK/rounds.txt"
for round in $(seq 1 "$ROUNDS"); do
  # The order alternates too: the later round of a pair runs on a larger database (at the row
  # cap, 50,000 events by default, every append also prunes).
  order="without with"
  if ((round % 2 == 0)); then order="with without"; fi
  for mode in $order; do
    before=$(daemon_cpu_ticks)
    wrk -t1 -c1 -d"${DURATION}s" -s "$WORK/events.lua" "$URL/v1/events" -- "$mode" \
      "bench-$$-$round-" >"$WORK/wrk.txt"
    after=$(daemon_cpu_ticks)
    python3 - "$WORK/wrk.txt" "$mode" "$((after - before))" "$(getconf CLK_TCK)" \
      >>"$WORK/rounds.txt" <<'PY'
import re, sys
text, mode, ticks, hz = open(sys.argv[1]).read(), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
requests = int(re.search(r"(\d+) requests in", text).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
errors = re.search(r"Socket errors: (.*)", text)
replayed = int(re.search(r"replayed (\d+)", text).group(1))
if bad or errors or replayed or requests == 0:
    sys.exit(f"request_id_bench: a {mode} round went wrong:\n{text}")
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
print(mode, rps, ticks / hz / requests * 1e6)
PY
  done
done
python3 - "$WORK/rounds.txt" <<'PY'
import statistics, sys
rounds = {"without": [], "with": []}
for line in open(sys.argv[1]):
    mode, rps, cpu = line.split()
    rounds[mode].append((float(rps), float(cpu)))
p = statistics.median(r for r, _ in rounds["without"])
w = statistics.median(r for r, _ in rounds["with"])
print(f"events/s without an id {p:.0f}, with X-Request-Id {w:.0f}: {w / p:.2f}x "
      f"(rounds {[round(r) for r, _ in rounds['without']]} / "
      f"{[round(r) for r, _ in rounds['with']]})")
cp = statistics.median(c for _, c in rounds["without"])
cw = statistics.median(c for _, c in rounds["with"])
print(f"daemon CPU per request without an id {cp:.0f} us, with X-Request-Id {cw:.0f} us "
      f"(+{cw - cp:.0f} us)")
PY

# Sourced by bench/http_bench.sh and bench/profile_http.sh: the session both of them ask
# session_status about, so the benchmark and its profile measure the same request.
#
# seed_status_page: registers a parent and a child session, records 300 events on the child
# in three batches of 100 through `post` (bench/lib.sh: PATH BODY [curl args...]), and sets
# PARENT, CHILD and BODY — the status request whose changesSince page starts after the 50th event
# (a full 200-event page). Needs WORK (a scratch directory) and python3.
seed_status_page() {
  PARENT="agent:main:main"
  CHILD="agent:main:subagent:bench"
  post "/v1/sessions/$PARENT" '{"kind":"main"}' -X PUT >/dev/null
  post "/v1/sessions/$CHILD" "{\"parentSessionKey\":\"$PARENT\"}" -X PUT >/dev/null
  python3 - "$CHILD" >"$WORK/history.json" <<'PY'
import json, sys
print(json.dumps([{"sessionKey": sys.argv[1], "kind": "human_direct_message", "actorType": "human",
                   "summary": "human message via telegram", "payload": {"channel": "telegram"}}
                  for _ in range(100)]))
PY
  for _ in 1 2 3; do post /v1/events "@$WORK/history.json" >>"$WORK/recorded.jsonl"; echo >>"$WORK/recorded.jsonl"; done
  local since
  since="$(python3 -c '
import json, sys
seqs = [e["sequence"] for line in open(sys.argv[1]) if line.strip() for e in json.loads(line)["events"]]
print(seqs[49])' "$WORK/recorded.jsonl")"
  BODY="{\"sessionKey\":\"$CHILD\",\"changesSince\":$since}"
}

"""bench/report.py's goals: each a threshold on one or more figures of the table, judged
met, not met or n/a (a figure missing).
"""

from report_figures import MANY

# (goal text, figure ids, comparison, threshold). A goal over several figures is met
# when every one of them meets it. `>=`/`<=` compare the figure's ratio value.
GOALS = [
    ("WAL bytes per event / the journal row's bytes (single events) ≤ 1.3x",
     ["wal/single/wal_vs_row"], "<=", 1.3),
    # The cost goals of issue 21 ("the write and read cost down to the floor").
    ("record, batch of 100, buffered, vs the raw RocksDB floor ≥ 0.6x (1 session)",
     ["record/batch100/buffered/vs_floor_1"], ">=", 0.6),
    (f"… the same with {MANY:,} random sessions",
     [f"record/batch100/buffered/vs_floor_{MANY}"], ">=", 0.6),
    ("record, single event, buffered, vs the floor ≥ 0.7x (1 session)",
     ["record/single/buffered/vs_floor_1"], ">=", 0.7),
    (f"… the same with {MANY:,} random sessions",
     [f"record/single/buffered/vs_floor_{MANY}"], ">=", 0.7),
    ("record, batch of 100, sync, vs the floor ≥ 0.8x (1 session)",
     ["record/batch100/sync/vs_floor_1"], ">=", 0.8),
    (f"… the same with {MANY:,} random sessions",
     [f"record/batch100/sync/vs_floor_{MANY}"], ">=", 0.8),
    ("8 concurrent single-event sync writers vs SQLite FULL with one shared connection (how "
     "the reference gateway runs it) ≥ 5x", ["concurrent/sync/writers:8/vs_sqlite_shared"],
     ">=", 5),
    ("8 concurrent single-event sync writers vs SQLite FULL with 8 writers ≥ 5x",
     ["concurrent/sync/writers:8/vs_sqlite"], ">=", 5),
    ("32 concurrent single-event sync writers vs SQLite FULL with 32 writers ≥ 5x",
     ["concurrent/sync/writers:32/vs_sqlite"], ">=", 5),
    ("changesSince 200-event page, rows in SSTs (300k-event journal, warm cache), vs "
     "SQLite ≥ 4x", ["changes/page200/vs_sqlite_sst"], ">=", 4),
    ("… the same page through ReadChanges (the lean page the session tools and the "
     "daemon read), no row cache, vs SQLite ≥ 4x", ["changes_lean/page200/vs_sqlite_lean"],
     ">=", 4),
    ("… rows in the memtable, vs SQLite ≥ 4x",
     ["changes/page200/vs_sqlite_memtable"], ">=", 4),
    ("session_status with a 200-event page over HTTP, 2 cores ≥ 15k req/s (the better "
     "wrk configuration)", ["http/status/t1c16", "http/status/t2c32"], "max>=", 15000),
    ("first event opening 10,000 notices vs SQLite ≥ 5x",
     ["fanout/first/watchers:10000/vs_sqlite"], ">=", 5),
    (f"batch-100 append cost, {MANY:,} random sessions vs 1 session (buffered) ≤ 1.5x",
     ["record/batch100/buffered/many_vs_one_cost"], "<=", 1.5),
    ("opening 1,000,000 cursors stays ≤ 0.7 s", ["open/statewatch/cursors:1000000/seconds"],
     "<=", 0.7),
    ("… and ≤ 200 B of memory per cursor", ["open/statewatch/cursors:1000000/bytes"],
     "<=", 200),
    ("pruning at the cap ≤ 25 % added cost per append (single, batch of 100)",
     ["prune/single/at_cap_vs_no_cap", "prune/batch100/at_cap_vs_no_cap"], "<=", 25),
    ("a coalesced event ≤ 2x an event with no watchers (+100 %) at 1, 100, 10,000 "
     "watchers", [f"fanout/coalesced/statewatch/watchers:{n}/cost" for n in (1, 100, 10000)],
     "<=", 100),
    ("buffered single events ≥ 3x SQLite NORMAL (1 and 100,000 sessions)",
     ["record/single/buffered/vs_sqlite_1", f"record/single/buffered/vs_sqlite_{MANY}"],
     ">=", 3),
    ("verify ≥ 1,000,000 journal rows/s", ["verify/statewatch/events:50000"], ">=", 1e6),
    ("open with 10x the retained rows (1,000,000 vs 100,000) ≤ 1.5x the time",
     ["open/statewatch/rows/time_ratio"], "<=", 1.5),
    ("… and ≤ 64 MB more resident memory", ["open/statewatch/rows/rss_added_mb"], "<=", 64),
    ("a read-only `statewatch stats` at 1,000,000 rows answers in under 1 s",
     ["restart/rows:1000000/stats"], "<=", 1.0),
]


def judge(table, goal):
    text, ids, op, threshold = goal
    rows = [table.by_id.get(i) for i in ids]
    values = [r["ratio_value"] if r else None for r in rows]
    shown = ", ".join("n/a" if not r else r["statewatch"] if r["ratio_kind"] == "abs"
                      else r["ratio"] for r in rows)
    if op == "max>=":
        present = [v for v in values if v is not None]
        verdict = None if not present else max(present) >= threshold
    elif any(v is None for v in values):
        verdict = None
    elif op == ">=":
        verdict = all(v >= threshold for v in values)
    else:
        verdict = all(v <= threshold for v in values)
    noisy = any(r and r["noisy"] for r in rows)
    word = "n/a" if verdict is None else ("met" if verdict else "**not met**")
    if noisy and verdict is not None:
        word += " (noisy †)"
    return {"goal": text, "measured": shown, "verdict": word, "met": verdict}


def goals_markdown(judged):
    out = ["| goal | measured | |", "| --- | --- | --- |"]
    for g in judged:
        out.append(f"| {g['goal']} | {g['measured']} | {g['verdict']} |")
    return "\n".join(out)

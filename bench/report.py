#!/usr/bin/env python3
"""statewatch benchmark report: the ratio table of docs/benchmarks.md and the goals.

Reads Google Benchmark JSON (bench/results/raw.json, written by scripts/bench.sh) and, when
given, the HTTP benchmark's JSON (bench/results/http.json, from bench/http_bench.sh) and the
run's metadata (bench/results/meta.json: load average before and after, duration). Prints
markdown on stdout: the figure table (figure, statewatch, baseline, ratio) and the goals
table (goal, measured, met / not met); writes <out-dir>/summary.json and
<out-dir>/summary.png (a bar chart of the ratios, drawn by gnuplot when it is installed).
With --readme FILE, replaces the text between the lines `<!-- bench:begin -->` and
`<!-- bench:end -->` of FILE with the same tables.

Benchmark names and counters are defined in bench/*_bench.cc (see bench/bench_registry.h);
change both together. Where statewatch and a baseline run in one benchmark (InterleavedRun)
the ratio is that benchmark's own ratio counter: the median over the repetitions of the
ratio measured in alternation in each.

Ratios:
  x   throughput ratio, statewatch / baseline: higher is better for statewatch
      (against the raw RocksDB floor it is the fraction of the storage limit reached);
  %   added cost: how much more time per event the variant takes than the baseline
      (0 % = no extra cost);
  c   a cost ratio (bytes or time, variant / baseline): lower is better.
A figure whose repetitions disagree — spread (max - min) / median over 25 % — is marked †.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

NOISY_SPREAD = 0.25
MANY = 100000  # the random-sessions lane of record_bench.cc

# ---- reading the results -------------------------------------------------------------------


def base_name(run_name):
    """`record/x/iterations:5/repeats:3/real_time` -> `record/x`."""
    parts = [p for p in run_name.split("/")
             if p != "real_time" and not p.startswith(("iterations:", "repeats:",
                                                          "min_time:"))]
    return "/".join(parts)


def load(paths):
    """Returns (context, {name: [run, ...]}, {name: error}) over every repetition."""
    runs, errors, context = {}, {}, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for b in data.get("benchmarks", []):
            name = base_name(b.get("run_name", b["name"]))
            if b.get("error_occurred"):
                errors[name] = b.get("error_message", "error")
            elif b.get("run_type") != "aggregate":
                runs.setdefault(name, []).append(b)
    return context, runs, errors


def spread(values):
    values = [v for v in values if v is not None]
    if len(values) < 2:
        return 0.0
    med = statistics.median(values)
    return (max(values) - min(values)) / med if med else 0.0


class Figures:
    """Counter lookups over repetitions: the median, and the spread that marks noise.
    Missing benchmarks and counters are recorded, never fatal."""

    def __init__(self, runs, errors, http, cluster=None, restart=None):
        self.runs, self.errors, self.http = runs, errors, http
        self.cluster = cluster or []  # cluster_engine_measure's runs, one dict each
        self.restart = restart  # bench/restart_bench.py's JSON
        self.missing = {}

    def values(self, name, key):
        if name in self.errors:
            self.missing[name] = self.errors[name]
            return []
        rs = self.runs.get(name)
        if not rs:
            self.missing[name] = "not run"
            return []
        vals = [r[key] for r in rs if key in r]
        if not vals:
            self.missing[f"{name}:{key}"] = "no such counter"
        return vals

    def median(self, name, key):
        vals = self.values(name, key)
        return statistics.median(vals) if vals else None

    def spread(self, name, key):
        return spread(self.values(name, key))

    def us_per_item(self, name, rate_key):
        rate = self.median(name, rate_key)
        return 1e6 / rate if rate else None

    def reps(self, name):
        return len(self.runs.get(name, []))


# ---- formatting ----------------------------------------------------------------------------


def fmt_rate(v, unit="ev/s"):
    if v is None:
        return "n/a"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if v >= div:
            return f"{v / div:.3g}{suffix} {unit}"
    return f"{v:.3g} {unit}"


def fmt_us(v):
    if v is None:
        return "n/a"
    if v >= 1000:
        return f"{v / 1000:.3g} ms"
    return f"{v:.3g} µs"


def fmt_bytes(v):
    return "n/a" if v is None else f"{v:.0f} B"


def fmt_ratio(v, kind):
    if v is None:
        return "n/a"
    if kind == "%":
        return f"{v:+.0f} %"
    if kind in ("x", "c"):
        return f"{v:.3g}x"
    return "—"


def inverse_added_pct(rate_ratio):
    """Added cost in % from a rate ratio variant / baseline (0.5 -> +100 %)."""
    return (1.0 / rate_ratio - 1.0) * 100.0 if rate_ratio else None


def ratio_x(a, b):
    return a / b if a is not None and b else None


# ---- the figure table ----------------------------------------------------------------------


class Table:
    def __init__(self, figures):
        self.f = figures
        self.rows = []
        self.by_id = {}

    def add(self, fid, figure, label, sw_text, base_text, ratio, kind, noise):
        """noise: the spread of the figure over its repetitions (None: not repeated)."""
        text = fmt_ratio(ratio, kind)
        noisy = noise is not None and noise > NOISY_SPREAD and ratio is not None
        if noisy and kind == "abs":  # an absolute figure: the mark goes on the figure
            sw_text += " †"
        elif noisy:
            text += " †"
        row = {"id": fid, "figure": figure, "label": label, "statewatch": sw_text,
               "baseline": base_text, "ratio": text, "ratio_kind": kind,
               "ratio_value": ratio, "spread": None if noise is None else round(noise, 4),
               "noisy": noisy}
        self.rows.append(row)
        self.by_id[fid] = row

    def markdown(self):
        out = ["| figure | statewatch | baseline | ratio |", "| --- | --- | --- | --- |"]
        for r in self.rows:
            out.append(f"| {r['figure']} | {r['statewatch']} | {r['baseline']} | {r['ratio']} |")
        return "\n".join(out)


MODES = (("single", "single event"), ("batch100", "batch of 100"))


def lanes(n):
    return "1 session" if n == 1 else f"{n:,} random sessions"


def record_rows(t, f):
    for mode, mode_text in MODES:
        for dur in ("sync", "buffered"):
            name = f"record/{mode}/{dur}"
            sqlite_text = "SQLite FULL" if dur == "sync" else "SQLite NORMAL"
            for n in (1, MANY):
                what = f"record, {mode_text}, {dur}, {lanes(n)}"
                short = f"rec {mode.replace('100', '')} {dur[:4]} {'1s' if n == 1 else '1e5s'}"
                sw = f.median(name, f"statewatch_{n}_per_s")
                for base, ratio_key, base_text, label in (
                        ("floor", "vs_floor", "floor", "raw RocksDB floor"),
                        ("sqlite", "vs_sqlite", sqlite_text, sqlite_text)):
                    bv = f.median(name, f"{base}_{n}_per_s")
                    key = f"{ratio_key}_{n}"
                    t.add(f"{name}/{key}", f"{what}: vs {label}",
                          f"{short} /{base_text.split()[0].lower()}", fmt_rate(sw),
                          f"{base_text} {fmt_rate(bv)}", f.median(name, key), "x",
                          f.spread(name, key))
            v = f.median(name, "many_vs_one_cost")
            floor_v = f.median(name, "floor_many_vs_one_cost")
            t.add(f"{name}/many_vs_one_cost",
                  f"record, {mode_text}, {dur}: cost per event, {MANY:,} random sessions vs "
                  "1 session", f"{mode.replace('100', '')} {dur[:4]} 1e5/1 cost",
                  fmt_ratio(v, "c"), f"floor {fmt_ratio(floor_v, 'c')}", v, "c",
                  f.spread(name, "many_vs_one_cost"))


def background_note(f):
    """How much RocksDB background work the long record runs included (medians)."""
    parts = []
    for mode in ("single", "batch100"):
        for dur in ("sync", "buffered"):
            name = f"record/{mode}/{dur}"
            fl = f.median(name, "statewatch_flushes")
            co = f.median(name, "statewatch_compactions")
            ffl = f.median(name, f"floor_{MANY}_flushes")
            fco = f.median(name, f"floor_{MANY}_compactions")
            if None in (fl, co, ffl, fco) or min(fl, ffl) < 0:
                continue
            parts.append(f"{mode}/{dur}: statewatch {fl:.0f} flushes and {co:.0f} compactions "
                         f"(both lanes), the floor's random-sessions lane {ffl:.0f} and {fco:.0f}")
    return "; ".join(parts)


def concurrent_rows(t, f):
    for n in (8, 32):
        name = f"concurrent/sync/writers:{n}"
        sw = f.median(name, "statewatch_per_s")
        per_group = f.median(name, "statewatch_events_per_group")
        sw_text = fmt_rate(sw) + ("" if per_group is None else f" ({per_group:.1f} ev/fsync)")
        for base, key, base_text in (
                ("sqlite", "vs_sqlite", "SQLite FULL, a connection per writer"),
                ("sqlite_shared", "vs_sqlite_shared", "SQLite FULL, one shared connection"),
                ("floor", "vs_floor", "raw RocksDB floor")):
            bv = f.median(name, f"{base}_per_s")
            t.add(f"{name}/{key}", f"{n} concurrent writers, single events, sync: vs {base_text}",
                  f"{n} writers /{base.replace('_shared', ' 1conn')}", sw_text,
                  f"{base_text.split(',')[0]} {fmt_rate(bv)}", f.median(name, key), "x",
                  f.spread(name, key))


def wal_rows(t, f):
    for mode, mode_text in MODES:
        name = f"wal/{mode}"
        per_event, row = f.median(name, "wal_bytes_per_event"), f.median(name, "row_bytes")
        t.add(f"{name}/wal_vs_row", f"WAL bytes per event / the journal row's bytes ({mode_text})",
              f"WAL/row {mode.replace('100', '')}", fmt_bytes(per_event) + "/ev",
              "row " + fmt_bytes(row), f.median(name, "wal_vs_row"), "c", None)


def changes_rows(t, f):
    name = "changes/page200"
    for where, text in (("sst", "rows in SSTs (300,000-event journal, compacted, warm cache)"),
                        ("memtable", "rows in the memtable")):
        sw, ref = f.median(name, f"statewatch_{where}_per_s"), f.median(name, f"sqlite_{where}_per_s")
        key = f"vs_sqlite_{where}"
        t.add(f"{name}/{key}", f"changesSince, one 200-event page, {text}: vs SQLite",
              f"changesSince {where} /sqlite", fmt_rate(sw, "pages/s"),
              "SQLite " + fmt_rate(ref, "pages/s"), f.median(name, key), "x", f.spread(name, key))
    # The same page from SSTs (300,000-event journal) through each read API (changes_lean).
    name = "changes_lean/page200"
    ref = f.median(name, "sqlite_per_s")
    for key, what in (("page_api", "ChangesSince, no row cache"),
                      ("lean", "ReadChanges, no row cache"),
                      ("lean_cached", "ReadChanges from the row cache")):
        sw = f.median(name, f"{key}_per_s")
        t.add(f"{name}/vs_sqlite_{key}",
              f"changesSince, one 200-event page from SSTs, {what}: vs SQLite",
              f"changes SST {key} /sqlite", fmt_rate(sw, "pages/s"),
              "SQLite " + fmt_rate(ref, "pages/s"), f.median(name, f"vs_sqlite_{key}"), "x",
              f.spread(name, f"vs_sqlite_{key}"))


def prune_rows(t, f):
    for mode, mode_text in MODES:
        name = f"prune/{mode}"
        short = mode.replace("100", "")
        cap, free = f.us_per_item(name, "at_cap_per_s"), f.us_per_item(name, "no_cap_per_s")
        t.add(f"{name}/at_cap_vs_no_cap",
              f"append at the 50,000-row cap vs uncapped ({mode_text}, buffered): added cost",
              f"prune {short} cost", fmt_us(cap) + "/ev", "uncapped " + fmt_us(free) + "/ev",
              inverse_added_pct(f.median(name, "at_cap_vs_no_cap")), "%",
              f.spread(name, "at_cap_vs_no_cap"))
        ref = f.us_per_item(name, "sqlite_hourly_per_s")
        share = f.median(name, "sqlite_prune_share")
        share_text = "n/a" if share is None else f"{share * 100:.0f} %"
        t.add(f"{name}/vs_sqlite",
              f"append at the cap ({mode_text}): vs SQLite NORMAL with its prune pass once per "
              f"50,000 appends, amortised (the passes: {share_text} of its time)",
              f"prune {short} /sqlite", fmt_us(cap) + "/ev", "SQLite " + fmt_us(ref) + "/ev",
              f.median(name, "vs_sqlite"), "x", f.spread(name, "vs_sqlite"))


def watchers(n):
    return "watcher" if n == 1 else "watchers"


def fanout_rows(t, f):
    for n in (1, 100, 10000):
        name = f"fanout/coalesced/statewatch/watchers:{n}"
        co = f.us_per_item(name, "coalesced_per_s")
        none = f.us_per_item(name, "no_watchers_per_s")
        t.add(f"{name}/cost", f"fan-out, {n:,} {watchers(n)}: coalesced event vs event with no "
              "watchers: added cost", f"coalesced {n}w cost", fmt_us(co) + "/ev",
              "no watchers " + fmt_us(none) + "/ev",
              inverse_added_pct(f.median(name, "coalesced_vs_no_watchers")), "%",
              f.spread(name, "coalesced_vs_no_watchers"))
    for n in (1, 100, 10000):
        sw_name = f"fanout/coalesced/statewatch/watchers:{n}"
        ref_name = f"fanout/coalesced/sqlite_normal/watchers:{n}"
        sw = f.us_per_item(sw_name, "coalesced_per_s")
        ref = f.us_per_item(ref_name, "coalesced_per_s")
        noise = max(f.spread(sw_name, "coalesced_per_s"), f.spread(ref_name, "coalesced_per_s"))
        t.add(f"fanout/coalesced/watchers:{n}/vs_sqlite",
              f"fan-out, {n:,} {watchers(n)}: coalesced event: vs SQLite NORMAL (separate "
              "benchmarks)", f"coalesced {n}w /sqlite", fmt_us(sw) + "/ev",
              "SQLite " + fmt_us(ref) + "/ev", ratio_x(ref, sw), "x", noise)
    for n in (1, 100, 10000):
        name = f"fanout/first/watchers:{n}"
        sw, ref = f.median(name, "statewatch_us"), f.median(name, "sqlite_us")
        t.add(f"{name}/vs_sqlite", f"fan-out: first notifying event, opening {n:,} "
              f"notice{'s' if n > 1 else ''}: vs SQLite NORMAL", f"open {n} notices /sqlite",
              fmt_us(sw) + "/ev", "SQLite " + fmt_us(ref) + "/ev", f.median(name, "vs_sqlite"),
              "x", f.spread(name, "vs_sqlite"))
    name = "drain/watchers:10000"
    sw, ref = f.median(name, "statewatch_per_s"), f.median(name, "sqlite_per_s")
    t.add(f"{name}/vs_sqlite", "drain (acknowledge) 10,000 watchers, one each: vs SQLite NORMAL",
          "drain /sqlite", fmt_rate(sw, "drains/s"), "SQLite " + fmt_rate(ref, "drains/s"),
          f.median(name, "vs_sqlite"), "x", f.spread(name, "vs_sqlite"))


def maintenance_rows(t, f):
    name = "verify/statewatch/events:50000"
    v = f.median(name, "items_per_second")
    t.add(name, "verify: journal rows checked (Verifier + checksums + log replay; 50,000 events)",
          "verify", fmt_rate(v, "rows/s"), "—", v, "abs", f.spread(name, "items_per_second"))
    name = "open/statewatch/cursors:1000000"
    secs = f.median(name, "open_seconds")
    t.add(f"{name}/seconds", "Engine::Open with 1,000,000 cursors", "open 1M cursors",
          "n/a" if secs is None else f"{secs:.3g} s", "—", secs, "abs", None)
    replay = "open/statewatch/replay:50000"
    rs = f.median(replay, "open_seconds")
    t.add(f"{replay}/seconds", "Engine::Open folding 50,000 events (500 commit groups) logged "
          "after the last checkpoint, as after a crash", "open + replay 50k",
          "n/a" if rs is None else f"{rs:.3g} s", "—", rs, "abs", f.spread(replay, "open_seconds"))
    bpc = f.median(name, "bytes_per_cursor")
    t.add(f"{name}/bytes", "resident memory per cursor after open (RSS delta / cursors)",
          "bytes/cursor", fmt_bytes(bpc), "—", bpc, "abs", None)
    rows = "open/statewatch/rows"
    small, large = f.median(rows, "open_seconds_small"), f.median(rows, "open_seconds_large")
    t.add(f"{rows}/time_ratio", "Engine::Open with 1,000,000 vs 100,000 retained rows (same "
          "1,000 sessions and 1,000 cursors): time", "open 1M/100k rows",
          "n/a" if large is None else f"{large:.3g} s",
          "n/a" if small is None else f"{small:.3g} s", f.median(rows, "time_ratio"), "c",
          None)
    added = f.median(rows, "rss_added_bytes")
    added_mb = None if added is None else added / 2**20
    t.add(f"{rows}/rss_added_mb", "… the resident memory the open adds: 1,000,000 rows minus "
          "100,000", "open memory +900k rows",
          "n/a" if added_mb is None else f"{added_mb:+.1f} MB",
          fmt_bytes(f.median(rows, "rss_small_bytes")), added_mb, "abs", None)


RESTART_SIZES = (100_000, 1_000_000)


def restart_rows(t, f):
    """bench/restart_bench.py's figures; n/a rows when it did not run (or ran scaled)."""
    sizes = {s.get("target", s["rows"]): s for s in (f.restart or {}).get("sizes", [])}
    if not sizes:
        f.missing["restart_bench"] = "not run (bench/restart_bench.py)"
    for target in RESTART_SIZES:
        s = sizes.get(target)
        times = s["restart_s"] if s else []
        med = statistics.median(times) if times else None
        t.add(f"restart/rows:{target}/seconds", f"daemon restart after kill -9 mid-load at "
              f"{target:,} rows: kill -> /healthz 200 (median of {len(times)})",
              f"restart {target:,}", "n/a" if med is None else f"{med:.3g} s",
              "n/a" if not times else f"max {max(times):.3g} s", med, "abs",
              spread(times) if len(times) > 1 else None)
        stats_s = (s or {}).get("stats_s") or []
        secs = statistics.median(stats_s) if stats_s else None
        peaks = (s or {}).get("stats_maxrss_bytes") or []
        peak = statistics.median(peaks) / 2**20 if peaks else None
        t.add(f"restart/rows:{target}/stats", f"read-only `statewatch stats` beside the daemon "
              f"at {target:,} rows: wall time (peak memory in the baseline column)",
              f"stats {target:,}", "n/a" if secs is None else f"{secs:.3g} s",
              "n/a" if peak is None else f"{peak:.0f} MB peak", secs, "abs",
              spread(stats_s) if len(stats_s) > 1 else None)


HTTP_CONFIGS = ((1, 16), (2, 32))


def http_rows(t, f):
    http = f.http
    for threads, conns in HTTP_CONFIGS:
        runs = [r for r in (http or {}).get("runs", [])
                if r["wrk_threads"] == threads and r["connections"] == conns]
        rps = [r["requests_per_s"] for r in runs]
        med = statistics.median(rps) if rps else None
        p99 = statistics.median([r["p99_ms"] for r in runs]) if runs else None
        errors = sum(r["errors"] for r in runs)
        if not runs:
            f.missing["http_bench status"] = "not run (bench/http_bench.sh)"
        text = fmt_rate(med, "req/s") + ("" if p99 is None else f", p99 {p99:.3g} ms")
        if errors:
            text += f", {errors} errors"
        t.add(f"http/status/t{threads}c{conns}",
              f"session_status with a 200-event page over HTTP, loopback (wrk -t{threads} "
              f"-c{conns}, {len(runs)} runs)", f"HTTP page t{threads}c{conns}", text, "—", med,
              "abs", spread(rps) if len(rps) > 1 else None)


def cluster_rows(t, f):
    """cluster_engine_measure (scripts/bench.sh step 3): 8 writers on a JetStream R3
    partition vs the same engine on its local log, and a takeover's time."""
    runs = f.cluster
    if not runs:
        f.missing["cluster_engine_measure"] = "not run (scripts/bench.sh, BENCH_CLUSTER)"
    js = [r["jetstream_events_per_s"] for r in runs]
    local = [r["local_events_per_s"] for r in runs]
    ratios = [a / b for a, b in zip(js, local) if b]
    med = lambda v: statistics.median(v) if v else None  # noqa: E731
    writers = runs[0]["writers"] if runs else 8
    t.add("cluster/engine/jetstream_vs_local",
          f"cluster, {writers} concurrent writers, single events: a partition on JetStream R3 "
          f"(three loopback nats-servers) vs the same engine on its local log (sync), "
          f"{len(runs)} run{'' if len(runs) == 1 else 's'}", "JetStream vs local log", fmt_rate(med(js)),
          "local log " + fmt_rate(med(local)), med(ratios), "x",
          spread(ratios) if len(ratios) > 1 else None)
    ms = [r["takeover_ms"] for r in runs]
    folded = med([r["takeover_events"] for r in runs])
    t.add("cluster/takeover/ms",
          "cluster, takeover: a node with an empty directory folds the stream "
          f"({'n/a' if folded is None else f'{folded:,.0f}'} events), fences and serves: "
          "time to its first acknowledged write", "takeover",
          "n/a" if med(ms) is None else f"{med(ms):.0f} ms", "—", med(ms), "abs",
          spread(ms) if len(ms) > 1 else None)


def build_table(f):
    t = Table(f)
    for section in (record_rows, concurrent_rows, wal_rows, changes_rows, prune_rows,
                    fanout_rows, maintenance_rows, restart_rows, http_rows, cluster_rows):
        section(t, f)
    return t


# ---- the goals -----------------------------------------------------------------------------

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


# ---- the plot ------------------------------------------------------------------------------


def plot(rows, path):
    """Bar chart of the `x` ratios (log scale) and of the added costs, via gnuplot."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report: gnuplot not found, no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return False
    xs = [r for r in rows if r["ratio_kind"] in ("x", "c") and r["ratio_value"]]
    pcts = [r for r in rows if r["ratio_kind"] == "%" and r["ratio_value"] is not None]
    with tempfile.TemporaryDirectory() as tmp:
        for fname, data in (("x.dat", xs), ("pct.dat", pcts)):
            with open(os.path.join(tmp, fname), "w") as out:
                for r in data:
                    out.write(f"\"{r['label']}\" {r['ratio_value']:.6g}\n")
        script = f"""
set terminal pngcairo size 1800,1000 font ",9"
set output "{path}"
set multiplot layout 2,1 title "statewatch vs baselines (same run)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set xtics rotate by -45 scale 0
set key off
set title "ratio statewatch / baseline (log scale; throughput: >1 = statewatch faster; cost ratios (WAL/row, 1e5/1 sessions): <1 is better)"
set logscale y
set ytics (0.01, 0.03, 0.1, 0.3, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000)
plot "{tmp}/x.dat" using 2:xtic(1) lc rgb "#3b75af", 1 with lines lc rgb "black" dt 2
unset logscale y
set ytics auto
set title "added cost, % (0 = same cost as the baseline)"
plot "{tmp}/pct.dat" using 2:xtic(1) lc rgb "#c0504d", 0 with lines lc rgb "black"
unset multiplot
"""
        proc = subprocess.run([gnuplot], input=script, text=True, capture_output=True)
        if proc.returncode != 0:
            print("report: gnuplot failed:\n" + proc.stderr, file=sys.stderr)
            return False
    return True


# ---- the README block ----------------------------------------------------------------------

BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"


def replace_block(text, block):
    """`text` with the lines between BEGIN and END replaced by `block`. ValueError when the
    markers are missing or out of order."""
    pattern = re.compile(re.escape(BEGIN) + r"\n.*?" + re.escape(END), re.S)
    if len(pattern.findall(text)) != 1:
        raise ValueError(f"expected exactly one {BEGIN} ... {END} block")
    return pattern.sub(lambda _: f"{BEGIN}\n{block}\n{END}", text)


def header(context, meta, reps):
    date = (meta.get("finished_at") or context.get("date") or "")[:16].replace("T", " ")
    parts = [f"One `make bench` run ({date} UTC, {context.get('num_cpus', '?')} cores"]
    if meta.get("duration_s"):
        parts.append(f", {meta['duration_s'] / 60:.0f} min")
    parts.append(")")
    partial = []
    if meta.get("bench_scale", 1) != 1:
        partial.append(f"BENCH_SCALE {meta['bench_scale']:g}")
    if meta.get("filter"):
        partial.append(f"filter '{meta['filter']}'")
    if meta.get("http") is False:
        partial.append("no HTTP benchmark")
    if partial:
        parts.append(f" — NOT a full run ({', '.join(partial)}): shorter runs skip most of "
                     "RocksDB's flushes and compactions, so these figures are not the goals' "
                     "measurements")
    if meta.get("load_before") and meta.get("load_after"):
        parts.append(f"; load average {meta['load_before']} before, {meta['load_after']} after")
    parts.append(f"; medians of {reps} repetitions, † = repetitions spread over "
                 f"{NOISY_SPREAD:.0%}.")
    return "".join(parts)


# ---- main ----------------------------------------------------------------------------------


def read_json(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def read_json_lines(path):
    if not path or not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+", help="Google Benchmark JSON file(s)")
    ap.add_argument("--http", help="bench/http_bench.sh's JSON_OUT")
    ap.add_argument("--cluster", help="cluster_engine_measure's JSON, one run per line")
    ap.add_argument("--restart", help="bench/restart_bench.py's JSON")
    ap.add_argument("--meta", help="scripts/bench.sh's meta.json")
    ap.add_argument("--out-dir", default=None, help="where summary.json/.png go "
                    "(default: the directory of the first input)")
    ap.add_argument("--readme", help="replace this file's bench:begin/end block")
    args = ap.parse_args(argv)
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.raw[0]))
    os.makedirs(out_dir, exist_ok=True)

    context, runs, errors = load(args.raw)
    meta = read_json(args.meta) or {}
    f = Figures(runs, errors, read_json(args.http), read_json_lines(args.cluster),
                read_json(args.restart))
    table = build_table(f)
    judged = [judge(table, g) for g in GOALS]
    reps = max((len(v) for v in runs.values()), default=0)
    note_bg = background_note(f)
    legend = ("`x` = statewatch / baseline throughput (higher is better for statewatch); "
              "`%` = added cost per event over the baseline (lower is better); a cost ratio "
              "(WAL bytes / row bytes, 10^5 sessions / 1 session) is lower-is-better. Ratios "
              "measured in one benchmark are the median of the per-repetition ratios (each "
              "measured in alternation), so they can differ from the quotient of the two "
              "medians shown." + (f" RocksDB's background work during the record runs "
                                   f"(medians per repetition; in a full run every record run "
                                   f"but single sync events flushes): {note_bg}." if note_bg else ""))
    block = "\n\n".join([header(context, meta, reps), table.markdown(), legend,
                         "Against the goals:", goals_markdown(judged)])
    print(block)
    if f.missing:
        print("\nmissing or failed benchmarks:")
        for name, why in sorted(f.missing.items()):
            print(f"- {name}: {why}")

    png = os.path.join(out_dir, "summary.png")
    plotted = plot(table.rows, png)
    summary = {
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "context": {k: context.get(k) for k in ("date", "host_name", "num_cpus",
                                                 "mhz_per_cpu", "library_build_type")},
        "meta": meta,
        "noisy_spread": NOISY_SPREAD,
        "rows": [{k: v for k, v in r.items() if k != "label"} for r in table.rows],
        "goals": judged,
        "missing": f.missing,
        "plot": os.path.basename(png) if plotted else None,
    }
    with open(os.path.join(out_dir, "summary.json"), "w") as out:
        json.dump(summary, out, indent=2, ensure_ascii=False)
        out.write("\n")
    if args.readme:
        with open(args.readme) as fh:
            text = fh.read()
        try:
            text = replace_block(text, block)
        except ValueError as e:
            print(f"report: {args.readme}: {e}", file=sys.stderr)
            return 1
        with open(args.readme, "w") as fh:
            fh.write(text)
        print(f"report: updated {args.readme}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

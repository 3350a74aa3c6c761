"""bench/report.py's figure sections: one function per benchmark family, each adding its
rows to a Table. Benchmark names and counters are defined in bench/*_bench.cc (see
bench/bench_registry.h); change both together.
"""

import statistics

from report_figures import (MANY, Table, fmt_bytes, fmt_rate, fmt_ratio, fmt_us,
                            inverse_added_pct, ratio_x, spread)

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

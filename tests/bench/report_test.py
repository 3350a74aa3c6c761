#!/usr/bin/env python3
"""bench/report.py: medians and the noise mark over repetitions, goal verdicts, and the
table block it replaces. Runs under CTest (bench_report_test) with no benchmark run: the
inputs are small synthetic Google Benchmark files."""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import report  # noqa: E402
import report_figures  # noqa: E402
import report_rows  # noqa: E402


def run(name, rep, **counters):
    return dict({"name": f"{name}/real_time", "run_name": f"{name}/real_time",
                 "run_type": "iteration", "repetition_index": rep, "real_time": 1.0},
                **counters)


def figures(benchmarks, http=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump({"context": {"num_cpus": 2}, "benchmarks": benchmarks}, f)
    try:
        context, runs, errors = report.load([f.name])
    finally:
        os.unlink(f.name)
    return report.Figures(runs, errors, http)


class MedianAndNoise(unittest.TestCase):
    def test_median_over_repetitions_and_aggregates_ignored(self):
        f = figures([run("wal/single", 0, wal_vs_row=2.0), run("wal/single", 1, wal_vs_row=2.2),
                     run("wal/single", 2, wal_vs_row=2.1),
                     dict(run("wal/single", 0, wal_vs_row=99.0), run_type="aggregate",
                          aggregate_name="mean")])
        self.assertAlmostEqual(f.median("wal/single", "wal_vs_row"), 2.1)
        self.assertAlmostEqual(f.spread("wal/single", "wal_vs_row"), 0.2 / 2.1)

    def test_a_spread_over_25_percent_marks_the_ratio(self):
        name = "changes/page200"
        f = figures([run(name, 0, vs_sqlite_sst=1.0, vs_sqlite_memtable=2.0),
                     run(name, 1, vs_sqlite_sst=1.4, vs_sqlite_memtable=2.1),
                     run(name, 2, vs_sqlite_sst=1.1, vs_sqlite_memtable=2.05)])
        t = report_figures.Table(f)
        report_rows.changes_rows(t, f)
        self.assertTrue(t.by_id["changes/page200/vs_sqlite_sst"]["noisy"])  # 0.4 / 1.1
        self.assertTrue(t.by_id["changes/page200/vs_sqlite_sst"]["ratio"].endswith("†"))
        self.assertFalse(t.by_id["changes/page200/vs_sqlite_memtable"]["noisy"])

    def test_missing_and_failed_benchmarks_are_listed_not_fatal(self):
        f = figures([dict(run("wal/single", 0), error_occurred=True, error_message="boom")])
        t = report.build_table(f)
        self.assertEqual(f.missing["wal/single"], "boom")
        self.assertEqual(t.by_id["wal/single/wal_vs_row"]["ratio"], "n/a")


class ClusterRows(unittest.TestCase):
    def test_jetstream_vs_local_is_the_median_ratio_and_takeover_the_median_time(self):
        runs = [{"writers": 8, "seconds": 5, "local_events_per_s": l, "jetstream_events_per_s": j,
                 "takeover_events": n, "takeover_ms": ms}
                for l, j, n, ms in ((10000, 6000, 30000, 600), (12000, 6000, 31000, 700),
                                    (11000, 8800, 32000, 650))]
        f = report.Figures({}, {}, None, runs)
        t = report_figures.Table(f)
        report_rows.cluster_rows(t, f)
        row = t.by_id["cluster/engine/jetstream_vs_local"]
        self.assertAlmostEqual(row["ratio_value"], 0.6)  # median of 0.6, 0.5, 0.8
        self.assertEqual(row["statewatch"], "6k ev/s")
        self.assertEqual(row["baseline"], "local log 11k ev/s")
        self.assertIn("3 runs", row["figure"])
        takeover = t.by_id["cluster/takeover/ms"]
        self.assertEqual(takeover["statewatch"], "650 ms")
        self.assertIn("31,000 events", takeover["figure"])

    def test_no_cluster_run_is_listed_as_missing(self):
        f = report.Figures({}, {}, None)
        t = report_figures.Table(f)
        report_rows.cluster_rows(t, f)
        self.assertIn("cluster_engine_measure", f.missing)
        self.assertEqual(t.by_id["cluster/engine/jetstream_vs_local"]["ratio"], "n/a")


class Goals(unittest.TestCase):
    def table(self, benchmarks, http=None):
        f = figures(benchmarks, http)
        return report.build_table(f)

    def verdict(self, table, goal_text_start):
        goal = next(g for g in report.GOALS if g[0].startswith(goal_text_start))
        return report.judge(table, goal)

    def test_lower_is_better_goal(self):
        t = self.table([run("wal/single", 0, wal_vs_row=1.25, wal_bytes_per_event=390,
                            row_bytes=312)])
        self.assertTrue(self.verdict(t, "WAL bytes per event")["met"])
        t = self.table([run("wal/single", 0, wal_vs_row=2.1)])
        v = self.verdict(t, "WAL bytes per event")
        self.assertFalse(v["met"])
        self.assertIn("not met", v["verdict"])

    def test_higher_is_better_goal_and_missing_figure(self):
        t = self.table([run("concurrent/sync/writers:8", r, vs_sqlite=x, vs_sqlite_shared=y)
                        for r, (x, y) in enumerate(((6.0, 4.0), (7.0, 4.5), (5.5, 4.2)))])
        self.assertTrue(self.verdict(t, "8 concurrent single-event sync writers vs SQLite FULL "
                                        "with 8 writers")["met"])
        # The one-shared-connection goal (how the reference gateway runs SQLite) is separate.
        self.assertFalse(self.verdict(t, "8 concurrent single-event sync writers vs SQLite FULL "
                                         "with one shared connection")["met"])
        self.assertIsNone(self.verdict(t, "32 concurrent")["met"])

    def test_every_goal_names_figures_the_table_has(self):
        # A goal naming a figure id the table never produces would print "n/a" for ever,
        # even after a full run; the ids must match build_table's.
        http = {"runs": [{"wrk_threads": t, "connections": c, "requests_per_s": 1000,
                          "p50_ms": 1, "p99_ms": 2, "errors": 0} for t, c in ((1, 16), (2, 32))]}
        t = self.table([], http)
        for text, ids, op, threshold in report.GOALS:
            for fid in ids:
                self.assertTrue(fid in t.by_id, f"goal '{text}' names {fid}")

    def test_http_goal_takes_the_better_configuration(self):
        http = {"runs": [{"wrk_threads": 1, "connections": 16, "requests_per_s": 16000,
                          "p50_ms": 1, "p99_ms": 3, "errors": 0},
                         {"wrk_threads": 2, "connections": 32, "requests_per_s": 9000,
                          "p50_ms": 2, "p99_ms": 9, "errors": 0}]}
        t = self.table([], http)
        self.assertTrue(self.verdict(t, "session_status with a 200-event page")["met"])


class ReadmeBlock(unittest.TestCase):
    def test_replaces_only_between_the_markers(self):
        text = "before\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\nafter\n"
        out = report.replace_block(text, "new table")
        self.assertEqual(out, "before\n<!-- bench:begin -->\nnew table\n<!-- bench:end -->\nafter\n")

    def test_refuses_a_file_without_exactly_one_block(self):
        with self.assertRaises(ValueError):
            report.replace_block("no markers here\n", "x")
        twice = "<!-- bench:begin -->\na\n<!-- bench:end -->\n" * 2
        with self.assertRaises(ValueError):
            report.replace_block(twice, "x")

    def test_a_partial_run_says_so_in_the_header(self):
        full = report.header({"num_cpus": 2}, {"finished_at": "2026-11-30T23:50:00Z",
                                               "bench_scale": 1.0, "filter": "", "http": True}, 3)
        self.assertNotIn("NOT a full run", full)
        self.assertIn("2026-11-30 23:50 UTC, 2 cores", full)
        short = report.header({"num_cpus": 2}, {"bench_scale": 0.1, "filter": "",
                                                "http": False}, 1)
        self.assertIn("NOT a full run (BENCH_SCALE 0.1, no HTTP benchmark)", short)
        filtered = report.header({}, {"bench_scale": 1, "filter": "record/"}, 3)
        self.assertIn("NOT a full run (filter 'record/')", filtered)

    def test_main_writes_summary_and_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            raw = os.path.join(tmp, "raw.json")
            with open(raw, "w") as f:
                json.dump({"context": {"num_cpus": 2},
                           "benchmarks": [run("wal/single", 0, wal_vs_row=2.0)]}, f)
            readme = os.path.join(tmp, "README.md")
            with open(readme, "w") as f:
                f.write("# x\n<!-- bench:begin -->\n<!-- bench:end -->\n")
            devnull = open(os.devnull, "w")
            old = sys.stdout
            sys.stdout = devnull
            try:
                rc = report.main([raw, "--out-dir", tmp, "--table", readme])
            finally:
                sys.stdout = old
                devnull.close()
            self.assertEqual(rc, 0)
            with open(readme) as f:
                text = f.read()
            self.assertIn("| WAL bytes per event / the journal row's bytes (single event)", text)
            self.assertIn("**not met**", text)
            with open(os.path.join(tmp, "summary.json")) as f:
                summary = json.load(f)
            self.assertIn("goals", summary)


if __name__ == "__main__":
    unittest.main()

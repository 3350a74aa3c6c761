#!/usr/bin/env python3
"""statewatch benchmark report: the ratio table of architecture.md section 7.

Reads Google Benchmark JSON (bench/results/raw.json, written by scripts/bench.sh), prints one
markdown table (figure, statewatch, baseline, ratio) to stdout, and writes
<out-dir>/summary.json and <out-dir>/summary.png (a bar chart of the ratios, drawn by
gnuplot when it is installed).

Benchmark names are `figure/system/variant...` (bench/bench_registry.h); change both together.
With repetitions, the median of each benchmark is used.

Ratios:
  x   throughput ratio, statewatch / baseline: higher is better for statewatch
      (against the raw RocksDB floor it is the fraction of the storage limit reached);
  %   added cost: how much more time per event the variant takes than the baseline
      (0 % = no extra cost).
"""

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile

# ---- reading the results -------------------------------------------------------------------


def base_name(run_name):
    """`record/x/real_time`, `.../iterations:5/repeats:3/real_time` -> `record/x`."""
    parts = [p for p in run_name.split("/")
             if p != "real_time" and not p.startswith(("iterations:", "repeats:",
                                                          "min_time:"))]
    return "/".join(parts)


def load(paths):
    """Returns (context, {name: entry}) with the median (or the only run) of each benchmark;
    errored benchmarks map to {"error": message}."""
    runs, medians, cvs, errors, context = {}, {}, {}, {}, {}
    for path in paths:
        with open(path) as f:
            data = json.load(f)
        context = context or data.get("context", {})
        for b in data.get("benchmarks", []):
            name = base_name(b.get("run_name", b["name"]))
            if b.get("error_occurred"):
                errors[name] = b.get("error_message", "error")
            elif b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[name] = b
                elif b.get("aggregate_name") == "cv":
                    cvs[name] = b.get("real_time")  # a fraction
            else:
                runs.setdefault(name, []).append(b)
    results = {}
    for name, rs in runs.items():
        results[name] = dict(medians.get(name) or
                             sorted(rs, key=lambda r: r["real_time"])[len(rs) // 2])
        results[name]["cv"] = cvs.get(name, 0.0)
        results[name]["repetitions_run"] = len(rs)
    for name, msg in errors.items():
        results[name] = {"error": msg}
    return context, results


UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


class Figures:
    """Accessors that record what was missing instead of failing."""

    def __init__(self, results):
        self.results = results
        self.missing = {}

    def _get(self, name):
        r = self.results.get(name)
        if r is None:
            self.missing[name] = "not run"
            return None
        if "error" in r:
            self.missing[name] = r["error"]
            return None
        return r

    def rate(self, name):
        """items per second (events, pages x 200, drains, replayed records)."""
        r = self._get(name)
        return r.get("items_per_second") if r else None

    def us_per_item(self, name):
        rate = self.rate(name)
        return 1e6 / rate if rate else None

    def cv(self, name):
        r = self.results.get(name)
        return r.get("cv", 0.0) if r and "error" not in r else 0.0

    def counter(self, name, key):
        r = self._get(name)
        return r.get(key) if r else None


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
    if v is None:
        return "n/a"
    return f"{v:.0f} B"


def ratio_x(a, b):
    return a / b if a is not None and b else None


def added_pct(cost, base):
    return (cost / base - 1.0) * 100.0 if cost is not None and base else None


# ---- the table -----------------------------------------------------------------------------


# A figure whose repetitions vary more than this (coefficient of variation) is marked: the
# machine is shared, and fsync latency in particular swings by 10x while others build.
NOISY_CV = 0.25


class Table:
    def __init__(self, figures):
        self.figures = figures
        self.rows = []

    def add(self, figure, label, sw, base, ratio, kind, sw_text, base_text, names=()):
        if kind == "x":
            ratio_text = "n/a" if ratio is None else f"{ratio:.3g}x"
        elif kind == "%":
            ratio_text = "n/a" if ratio is None else f"{ratio:+.0f} %"
        else:
            ratio_text = "—"
        cv = max([self.figures.cv(n) for n in names] or [0.0])
        if cv > NOISY_CV and ratio is not None:
            ratio_text += " †"
        self.rows.append({"figure": figure, "label": label, "statewatch": sw_text,
                          "baseline": base_text, "ratio": ratio_text, "ratio_kind": kind,
                          "statewatch_value": sw, "baseline_value": base,
                          "ratio_value": ratio, "max_cv": round(cv, 4),
                          "benchmarks": list(names)})

    def markdown(self):
        out = ["| figure | statewatch | baseline | ratio |", "| --- | --- | --- | --- |"]
        for r in self.rows:
            out.append(f"| {r['figure']} | {r['statewatch']} | {r['baseline']} | {r['ratio']} |")
        return "\n".join(out)


def record_rows(t, f):
    for mode, mode_text in (("single", "single event"), ("batch100", "batch of 100")):
        for dur in ("sync", "buffered"):
            sqlite = "sqlite_full" if dur == "sync" else "sqlite_normal"
            sqlite_text = "SQLite FULL" if dur == "sync" else "SQLite NORMAL"
            for n in (1, 1000):
                tail = f"{mode}/{dur}/sessions:{n}"
                what = f"record, {mode_text}, {dur}, {n} session{'s' if n > 1 else ''}"
                short = f"rec {mode.replace('100', '')} {dur[:4]} {n}s"
                sw_name = f"record/statewatch/{tail}"
                sw = f.rate(sw_name)
                for base_name_, base_text, label in (
                        (f"record/floor/{tail}", "floor", "raw RocksDB floor"),
                        (f"record/{sqlite}/{tail}", sqlite_text, sqlite_text)):
                    base = f.rate(base_name_)
                    t.add(f"{what}: vs {label}", f"{short} /{base_text.split()[0].lower()}",
                          sw, base, ratio_x(sw, base), "x", fmt_rate(sw),
                          f"{base_text} {fmt_rate(base)}", names=(sw_name, base_name_))


def changes_rows(t, f):
    names = ("changes_page/statewatch", "changes_page/sqlite_normal")
    sw_p, ref_p = (v / 200 if v else None for v in map(f.rate, names))
    t.add("changesSince, one 200-event page: vs SQLite", "changesSince page /sqlite", sw_p,
          ref_p, ratio_x(sw_p, ref_p), "x", fmt_rate(sw_p, "pages/s"),
          "SQLite " + fmt_rate(ref_p, "pages/s"), names=names)


def prune_rows(t, f):
    for mode, mode_text in (("single", "single event"), ("batch100", "batch of 100")):
        short = mode.replace("100", "")
        sw_names = (f"prune/statewatch/{mode}/at_cap", f"prune/statewatch/{mode}/no_cap")
        ref_names = (f"prune/sqlite_normal/{mode}/at_cap", f"prune/sqlite_normal/{mode}/no_cap")
        sw_cap, sw_free = map(f.us_per_item, sw_names)
        ref_cap, ref_free = map(f.us_per_item, ref_names)
        t.add(f"append at the 10,000-row cap vs uncapped ({mode_text}, buffered): added cost",
              f"prune {short} cost", sw_cap, sw_free, added_pct(sw_cap, sw_free), "%",
              fmt_us(sw_cap) + "/ev", "uncapped " + fmt_us(sw_free) + "/ev", names=sw_names)
        t.add(f"append at the cap ({mode_text}): vs SQLite NORMAL with its prune pass after "
              f"each append (SQLite's own added cost {fmt_pct(added_pct(ref_cap, ref_free))})",
              f"prune {short} /sqlite", sw_cap, ref_cap, ratio_x(ref_cap, sw_cap), "x",
              fmt_us(sw_cap) + "/ev", "SQLite " + fmt_us(ref_cap) + "/ev",
              names=(sw_names[0],) + ref_names)


def fmt_pct(v):
    return "n/a" if v is None else f"{v:+.0f} %"


def watchers(n):
    return "watcher" if n == 1 else "watchers"


def fanout_rows(t, f):
    none_names = ("fanout/statewatch/no_watchers", "fanout/sqlite_normal/no_watchers")
    none_sw, none_ref = map(f.us_per_item, none_names)
    for n in (1, 100, 10000):
        name = f"fanout/statewatch/coalesced/watchers:{n}"
        co = f.us_per_item(name)
        t.add(f"fan-out, {n:,} {watchers(n)}: coalesced event vs event with no watchers: "
              "added cost", f"coalesced {n}w cost", co, none_sw, added_pct(co, none_sw), "%",
              fmt_us(co) + "/ev", "no watchers " + fmt_us(none_sw) + "/ev",
              names=(name, none_names[0]))
    for phase, text in (("coalesced", "coalesced event"), ("first", "first notifying event")):
        for n in (1, 100, 10000):
            names = (f"fanout/statewatch/{phase}/watchers:{n}",
                     f"fanout/sqlite_normal/{phase}/watchers:{n}")
            sw, ref = map(f.us_per_item, names)
            what = (f"fan-out, {n:,} {watchers(n)}: coalesced event" if phase == "coalesced" else
                    f"fan-out: first notifying event, opening {n:,} "
                    f"notice{'s' if n > 1 else ''}")
            label = f"{phase} {n}w /sqlite" if phase == "coalesced" else f"open {n} notices /sqlite"
            t.add(f"{what}: vs SQLite NORMAL", label, sw, ref, ratio_x(ref, sw), "x",
                  fmt_us(sw) + "/ev", "SQLite " + fmt_us(ref) + "/ev", names=names)
    t.add("fan-out, no watchers: event vs SQLite NORMAL", "no watchers /sqlite", none_sw,
          none_ref, ratio_x(none_ref, none_sw), "x", fmt_us(none_sw) + "/ev",
          "SQLite " + fmt_us(none_ref) + "/ev", names=none_names)
    names = ("drain/statewatch/watchers:10000", "drain/sqlite_normal/watchers:10000")
    sw, ref = map(f.rate, names)
    t.add("drain (acknowledge) 10,000 watchers, one each: vs SQLite NORMAL", "drain /sqlite",
          sw, ref, ratio_x(sw, ref), "x", fmt_rate(sw, "drains/s"),
          "SQLite " + fmt_rate(ref, "drains/s"), names=names)


def maintenance_rows(t, f):
    v = f.rate("verify/statewatch/events:50000")
    t.add("verify: log records replayed and diffed (50,000 events)", "verify", v, None, None,
          None, fmt_rate(v, "records/s"), "—")
    name = "open/statewatch/cursors:1000000"
    secs = f.counter(name, "open_seconds")
    t.add("Engine::Open with 1,000,000 cursors", "open 1M cursors", secs, None, None, None,
          "n/a" if secs is None else f"{secs:.3g} s", "—")
    bpc = f.counter(name, "bytes_per_cursor")
    t.add("resident memory per cursor after open (RSS delta / cursors)", "bytes/cursor", bpc,
          None, None, None, fmt_bytes(bpc), "—")


def build_table(results):
    f = Figures(results)
    t = Table(f)
    record_rows(t, f)
    changes_rows(t, f)
    prune_rows(t, f)
    fanout_rows(t, f)
    maintenance_rows(t, f)
    return t, f.missing


# ---- the plot ------------------------------------------------------------------------------


def plot(rows, path):
    """Bar chart of the `x` ratios (log scale) and of the added costs, via gnuplot."""
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report: gnuplot not found, no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return False
    xs = [r for r in rows if r["ratio_kind"] == "x" and r["ratio_value"]]
    pcts = [r for r in rows if r["ratio_kind"] == "%" and r["ratio_value"] is not None]
    with tempfile.TemporaryDirectory() as tmp:
        for fname, data in (("x.dat", xs), ("pct.dat", pcts)):
            with open(os.path.join(tmp, fname), "w") as out:
                for r in data:
                    out.write(f"\"{r['label']}\" {r['ratio_value']:.6g}\n")
        script = f"""
set terminal pngcairo size 1600,1000 font ",10"
set output "{path}"
set multiplot layout 2,1 title "statewatch vs baselines (same run)"
set style data histograms
set style fill solid 0.8 border -1
set boxwidth 0.8
set grid ytics
set xtics rotate by -45 scale 0
set key off
set title "throughput ratio statewatch / baseline (log scale; >1 = statewatch faster; vs floor = share of the storage limit)"
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


# ---- main ----------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+", help="Google Benchmark JSON file(s)")
    ap.add_argument("--out-dir", default=None, help="where summary.json/.png go "
                    "(default: the directory of the first input)")
    args = ap.parse_args()
    out_dir = args.out_dir or os.path.dirname(os.path.abspath(args.raw[0]))
    os.makedirs(out_dir, exist_ok=True)

    context, results = load(args.raw)
    table, missing = build_table(results)
    print(table.markdown())
    print()
    print("ratio: `x` = statewatch / baseline throughput (higher is better for statewatch); "
          "`%` = added cost per event over the baseline (lower is better). "
          f"† = noisy: a figure's repetitions vary by more than {NOISY_CV:.0%} (coefficient of "
          "variation; the machine is shared), rerun before trusting it.")
    if missing:
        print()
        print("missing or failed benchmarks:")
        for name, why in sorted(missing.items()):
            print(f"- {name}: {why}")

    png = os.path.join(out_dir, "summary.png")
    plotted = plot(table.rows, png)
    summary = {
        "generated_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "context": {k: context.get(k) for k in ("date", "host_name", "num_cpus",
                                                 "mhz_per_cpu", "library_build_type")},
        "legend": {"x": "statewatch / baseline throughput, higher is better",
                   "%": "added cost per event over the baseline, lower is better"},
        "rows": [{k: v for k, v in r.items() if k != "label"} for r in table.rows],
        "missing": missing,
        "plot": os.path.basename(png) if plotted else None,
    }
    with open(os.path.join(out_dir, "summary.json"), "w") as out:
        json.dump(summary, out, indent=2, ensure_ascii=False)
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

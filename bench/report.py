#!/usr/bin/env python3
"""statewatch benchmark report: the ratio table of architecture.md section 7.

Reads Google Benchmark JSON (bench/results/raw.json, written by scripts/bench.sh), prints one
markdown table (figure, statewatch, baseline, ratio) to stdout, and writes
<out-dir>/summary.json and <out-dir>/summary.png (a bar chart of the ratios, drawn by
gnuplot when it is installed).

Benchmark names and counters are defined in bench/*_bench.cc (see bench/bench_registry.h);
change both together. Where statewatch and a baseline run in one benchmark (InterleavedRun)
the ratio is that benchmark's own ratio counter. With repetitions, medians are used.

Ratios:
  x   throughput ratio, statewatch / baseline: higher is better for statewatch
      (against the raw RocksDB floor it is the fraction of the storage limit reached).
      Where statewatch and the baseline ran in one benchmark (alternating calls), it is the
      median of the per-repetition ratios, robust to the machine's drift;
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
    """Returns (context, {name: entry}): per benchmark its median run (or its only run) with
    every counter, plus "cv": {counter: coefficient of variation} over the repetitions.
    Errored benchmarks map to {"error": message}."""
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
                    cvs[name] = b  # every counter holds its cv, as a fraction
            else:
                runs.setdefault(name, []).append(b)
    results = {}
    for name, rs in runs.items():
        entry = dict(medians.get(name) or sorted(rs, key=lambda r: r["real_time"])[len(rs) // 2])
        entry["cv"] = cvs.get(name, {})
        entry["repetitions_run"] = len(rs)
        results[name] = entry
    for name, msg in errors.items():
        results[name] = {"error": msg}
    return context, results


class Figures:
    """Counter lookups that record what was missing instead of failing."""

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

    def counter(self, name, key):
        """The median of a counter (rates are items per second, `_us` per call)."""
        r = self._get(name)
        if r is None:
            return None
        if key not in r:
            self.missing[f"{name}:{key}"] = "no such counter"
            return None
        return r[key]

    def us_per_item(self, name, rate_key):
        rate = self.counter(name, rate_key)
        return 1e6 / rate if rate else None

    def cv(self, name, key):
        r = self.results.get(name)
        if not r or "error" in r:
            return 0.0
        return r.get("cv", {}).get(key, 0.0) or 0.0


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


def inverse_added_pct(rate_ratio):
    """Added cost in % from a rate ratio variant / baseline (0.5 -> +100 %)."""
    return (1.0 / rate_ratio - 1.0) * 100.0 if rate_ratio else None


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
        cv = max([self.figures.cv(n, k) for n, k in names] or [0.0])
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
            sqlite_text = "SQLite FULL" if dur == "sync" else "SQLite NORMAL"
            for n in (1, 1000):
                name = f"record/{mode}/{dur}/sessions:{n}"
                what = f"record, {mode_text}, {dur}, {n} session{'s' if n > 1 else ''}"
                short = f"rec {mode.replace('100', '')} {dur[:4]} {n}s"
                sw = f.counter(name, "statewatch_per_s")
                for key, ratio_key, base_text, label in (
                        ("floor_per_s", "vs_floor", "floor", "raw RocksDB floor"),
                        ("sqlite_per_s", "vs_sqlite", sqlite_text, sqlite_text)):
                    base = f.counter(name, key)
                    t.add(f"{what}: vs {label}", f"{short} /{base_text.split()[0].lower()}",
                          sw, base, f.counter(name, ratio_key), "x", fmt_rate(sw),
                          f"{base_text} {fmt_rate(base)}", names=[(name, ratio_key)])


def changes_rows(t, f):
    name = "changes_page"
    sw, ref = f.counter(name, "statewatch_per_s"), f.counter(name, "sqlite_per_s")
    t.add("changesSince, one 200-event page: vs SQLite", "changesSince page /sqlite", sw, ref,
          f.counter(name, "vs_sqlite"), "x", fmt_rate(sw, "pages/s"),
          "SQLite " + fmt_rate(ref, "pages/s"), names=[(name, "vs_sqlite")])


def prune_rows(t, f):
    for mode, mode_text in (("single", "single event"), ("batch100", "batch of 100")):
        short = mode.replace("100", "")
        sw_name, ref_name = f"prune/statewatch/{mode}", f"prune/sqlite_normal/{mode}"
        sw_cap, sw_free = (f.us_per_item(sw_name, k) for k in ("at_cap_per_s", "no_cap_per_s"))
        sw_ratio = f.counter(sw_name, "at_cap_vs_no_cap")
        t.add(f"append at the 10,000-row cap vs uncapped ({mode_text}, buffered): added cost",
              f"prune {short} cost", sw_cap, sw_free, inverse_added_pct(sw_ratio), "%",
              fmt_us(sw_cap) + "/ev", "uncapped " + fmt_us(sw_free) + "/ev",
              names=[(sw_name, "at_cap_vs_no_cap")])
        ref_cap = f.us_per_item(ref_name, "at_cap_per_s")
        ref_added = inverse_added_pct(f.counter(ref_name, "at_cap_vs_no_cap"))
        t.add(f"append at the cap ({mode_text}): vs SQLite NORMAL with its prune pass after "
              f"each append (SQLite's own added cost {fmt_pct(ref_added)})",
              f"prune {short} /sqlite", sw_cap, ref_cap, ratio_x(ref_cap, sw_cap), "x",
              fmt_us(sw_cap) + "/ev", "SQLite " + fmt_us(ref_cap) + "/ev",
              names=[(sw_name, "at_cap_per_s"), (ref_name, "at_cap_per_s")])


def fmt_pct(v):
    return "n/a" if v is None else f"{v:+.0f} %"


def watchers(n):
    return "watcher" if n == 1 else "watchers"


def fanout_rows(t, f):
    for n in (1, 100, 10000):
        name = f"fanout/coalesced/statewatch/watchers:{n}"
        co, none = (f.us_per_item(name, k) for k in ("coalesced_per_s", "no_watchers_per_s"))
        ratio = f.counter(name, "coalesced_vs_no_watchers")
        t.add(f"fan-out, {n:,} {watchers(n)}: coalesced event vs event with no watchers: "
              "added cost", f"coalesced {n}w cost", co, none, inverse_added_pct(ratio), "%",
              fmt_us(co) + "/ev", "no watchers " + fmt_us(none) + "/ev",
              names=[(name, "coalesced_vs_no_watchers")])
    for n in (1, 100, 10000):
        sw_name = f"fanout/coalesced/statewatch/watchers:{n}"
        ref_name = f"fanout/coalesced/sqlite_normal/watchers:{n}"
        sw = f.us_per_item(sw_name, "coalesced_per_s")
        ref = f.us_per_item(ref_name, "coalesced_per_s")
        t.add(f"fan-out, {n:,} {watchers(n)}: coalesced event: vs SQLite NORMAL",
              f"coalesced {n}w /sqlite", sw, ref, ratio_x(ref, sw), "x", fmt_us(sw) + "/ev",
              "SQLite " + fmt_us(ref) + "/ev",
              names=[(sw_name, "coalesced_per_s"), (ref_name, "coalesced_per_s")])
    for n in (1, 100, 10000):
        name = f"fanout/first/watchers:{n}"
        sw, ref = f.counter(name, "statewatch_us"), f.counter(name, "sqlite_us")
        t.add(f"fan-out: first notifying event, opening {n:,} notice{'s' if n > 1 else ''}: "
              "vs SQLite NORMAL", f"open {n} notices /sqlite", sw, ref,
              f.counter(name, "vs_sqlite"), "x", fmt_us(sw) + "/ev",
              "SQLite " + fmt_us(ref) + "/ev", names=[(name, "vs_sqlite")])
    name = "drain/watchers:10000"
    sw, ref = f.counter(name, "statewatch_per_s"), f.counter(name, "sqlite_per_s")
    t.add("drain (acknowledge) 10,000 watchers, one each: vs SQLite NORMAL", "drain /sqlite",
          sw, ref, f.counter(name, "vs_sqlite"), "x", fmt_rate(sw, "drains/s"),
          "SQLite " + fmt_rate(ref, "drains/s"), names=[(name, "vs_sqlite")])


def maintenance_rows(t, f):
    name = "verify/statewatch/events:50000"
    v = f.counter(name, "items_per_second")
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
          "Where both figures come from one benchmark the ratio is the median of the "
          "per-repetition ratios (each measured in alternation), so it can differ from the "
          "quotient of the two medians shown. "
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

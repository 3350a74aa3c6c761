#!/usr/bin/env python3
"""statewatch benchmark report: the ratio table of docs/benchmarks.md and the goals.

Reads Google Benchmark JSON (bench/results/raw.json, written by scripts/bench.sh) and, when
given, the HTTP benchmark's JSON (bench/results/http.json, from bench/http_bench.sh) and the
run's metadata (bench/results/meta.json: load average before and after, duration). Prints
markdown on stdout: the figure table (figure, statewatch, baseline, ratio) and the goals
table (goal, measured, met / not met); writes <out-dir>/summary.json and
<out-dir>/summary.png (a bar chart of the ratios, drawn by gnuplot when it is installed).
With --table FILE, replaces the text between the lines `<!-- bench:begin -->` and
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

The pieces: report_figures.py reads the results and formats figures, report_rows.py turns
each benchmark family into table rows, report_goals.py judges the goals; this file draws the
plot, writes the table block and summary.json.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from report_figures import NOISY_SPREAD, Figures, load, read_json, read_json_lines
from report_goals import GOALS, goals_markdown, judge
from report_rows import background_note, build_table

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


# ---- the table block ----------------------------------------------------------------------

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

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("raw", nargs="+", help="Google Benchmark JSON file(s)")
    ap.add_argument("--http", help="bench/http_bench.sh's JSON_OUT")
    ap.add_argument("--cluster", help="cluster_engine_measure's JSON, one run per line")
    ap.add_argument("--restart", help="bench/restart_bench.py's JSON")
    ap.add_argument("--meta", help="scripts/bench.sh's meta.json")
    ap.add_argument("--out-dir", default=None, help="where summary.json/.png go "
                    "(default: the directory of the first input)")
    ap.add_argument("--table", help="replace this file's bench:begin/end block")
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
    if args.table:
        with open(args.table) as fh:
            text = fh.read()
        try:
            text = replace_block(text, block)
        except ValueError as e:
            print(f"report: {args.table}: {e}", file=sys.stderr)
            return 1
        with open(args.table, "w") as fh:
            fh.write(text)
        print(f"report: updated {args.table}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

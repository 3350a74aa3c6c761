"""bench/report.py's reading side: the benchmark results over their repetitions (medians
and the spread that marks noise), the number formats, and the figure table the sections fill.
"""

import json
import os
import statistics

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

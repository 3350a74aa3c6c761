#!/usr/bin/env python3
"""Folds `perf script` output (samples with call graphs) into a per-system profile.

The record and concurrent benchmarks measure statewatch, the raw RocksDB floor and SQLite in
one loop, so a plain `perf report` mixes them. This reads each sample's stack and files it
under the system whose frame it holds (statewatch read: a changesSince page; statewatch: a
frame of statewatch::engine::EngineImpl;
floor: RawRocksdbFloor; sqlite: SqliteReference; background: RocksDB's own threads), then
prints, for each system, its share of the samples and
  - self: the leaf functions (where the CPU was), top N;
  - inclusive: the statewatch:: and rocksdb:: functions on the stack (what the time was
    spent under), top N.

    perf script -i perf.data | python3 bench/fold_profile.py [--top N] [--json OUT]
"""
import argparse
import collections
import json
import re
import sys

LANES = [
    # A read of a changesSince page, before "statewatch": the read benchmarks also build
    # their journal through the engine, and that is not the time measured.
    ("statewatch read", re.compile(r"EngineImpl::(ChangesSince|ReadChanges)|ChangesReader::")),
    ("sqlite read", re.compile(r"SqliteReference::(Changes|ReadChanges|Page)")),
    ("statewatch", re.compile(r"statewatch::engine::EngineImpl::|statewatch::engine::\w+::Record")),
    ("floor", re.compile(r"RawRocksdbFloor")),
    ("sqlite", re.compile(r"SqliteReference|sqlite3_")),
]
FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")
HEADER = re.compile(r"^(\S.*?)\s+\d+(?:/\d+)?\s+[\d.]+:")


def short(symbol, module):
    """A readable frame name: templates and offsets cut, unknowns named by their module."""
    if symbol.startswith("[unknown]"):
        return "[" + module.rsplit("/", 1)[-1] + "]"
    symbol = re.sub(r"\+0x[0-9a-f]+$", "", symbol)
    # Drop template arguments and parameter lists, which make frames unreadably long.
    out, depth = [], 0
    for ch in symbol:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
    name = "".join(out).strip() or symbol
    return name.replace("std::__cxx11::", "std::")


def samples(lines):
    comm, stack = None, []
    for line in lines:
        if not line.strip():
            if comm is not None:
                yield comm, stack
            comm, stack = None, []
            continue
        if comm is None:
            m = HEADER.match(line)
            comm = m.group(1) if m else line.split()[0]
            continue
        m = FRAME.match(line)
        if m:
            stack.append(short(m.group(1), m.group(2)))
    if comm is not None:
        yield comm, stack


def lane_of(comm, stack):
    joined = "\n".join(stack)
    for name, pattern in LANES:
        if pattern.search(joined):
            return name
    if comm.startswith("rocksdb:") or "BGWork" in joined or "BackgroundCallFlush" in joined \
            or "BackgroundCallCompaction" in joined:
        return "background"
    return "other"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json")
    args = parser.parse_args()

    total = 0
    per_lane = collections.Counter()
    self_counts = collections.defaultdict(collections.Counter)
    incl_counts = collections.defaultdict(collections.Counter)
    for comm, stack in samples(sys.stdin):
        if not stack:
            continue
        total += 1
        lane = lane_of(comm, stack)
        per_lane[lane] += 1
        self_counts[lane][stack[0]] += 1
        seen = set()
        for frame in stack:
            if frame in seen or not (frame.startswith("statewatch::") or
                                     frame.startswith("rocksdb::") or
                                     frame.startswith("flatbuffers::")):
                continue
            seen.add(frame)
            incl_counts[lane][frame] += 1

    result = {"samples": total, "lanes": {}}
    for lane, count in per_lane.most_common():
        entry = {
            "samples": count,
            "share": count / total if total else 0,
            "self": [(f, n / count) for f, n in self_counts[lane].most_common(args.top)],
            "inclusive": [(f, n / count) for f, n in incl_counts[lane].most_common(args.top)],
        }
        result["lanes"][lane] = entry
        print(f"== {lane}: {count} samples, {100 * entry['share']:.1f} % of all")
        print("   self (where the CPU was):")
        for f, s in entry["self"]:
            print(f"     {100 * s:5.1f} %  {f}")
        print("   inclusive (time spent under):")
        for f, s in entry["inclusive"]:
            print(f"     {100 * s:5.1f} %  {f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(result, out, indent=1)


if __name__ == "__main__":
    main()

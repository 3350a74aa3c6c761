"""What the cluster benchmarks (scripts/cluster-*-bench.py) share on their command line: the
binary they run, where the result goes, and their whole-number knobs; and a scratch directory
removed however the run ends. The result itself is printed and written by cluster_lib.report.
"""
import argparse
import contextlib
import shutil
import tempfile


def parse_args(doc, **knobs):
    """The command line of a bench whose --help shows `doc`: --statewatch (the binary,
    required), --out (a file for the result) and, for each keyword, an integer option of that
    name (`rounds=3` -> --rounds, default 3)."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--statewatch", required=True, help="the statewatch binary")
    ap.add_argument("--out", help="also write the result here, indented")
    for name, default in knobs.items():
        ap.add_argument("--" + name, type=int, default=default, help="default: %(default)s")
    return ap.parse_args()


@contextlib.contextmanager
def scratch(prefix):
    """A new temporary directory named `prefix`…, removed with what it holds at the end."""
    work = tempfile.mkdtemp(prefix=prefix)
    try:
        yield work
    finally:
        shutil.rmtree(work, ignore_errors=True)

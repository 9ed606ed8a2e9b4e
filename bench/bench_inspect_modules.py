#!/usr/bin/env python3
"""`tvmffi inspect --static --json` of a library whose `__tvm_ffi__library_bin`
holds many tiny modules (issue 23: 490,000 modules in 32 MB took 20-46 s,
920 MB and 112 MB of JSON). Prints wall time, peak RSS and output size of
the bounded default (first 1000 modules in detail, the rest counted by kind)
and, as the reference measured in the same run, of reading the same bytes
with `nm -D` (the cost of touching the file at all) and of the unbounded
listing (TVMFFI_MODULE_DETAIL_LIMIT set to the module count).

Usage: python bench/bench_inspect_modules.py [--modules N] [--runs N] [--no-full]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def run(cmd, env=None):
    """(seconds, peak RSS MiB of the child, bytes written to stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, env=env)
    dt = time.perf_counter() - t
    if p.returncode not in (0, 1):
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.decode()[:300]}")
    # ru_maxrss of children is the maximum over all of them: exact only when
    # this child is the biggest so far, so the bounded run goes first.
    rss = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    return dt, rss, len(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--modules", type=int, default=490_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-full", action="store_true", help="skip the unbounded reference")
    a = ap.parse_args()

    import tools_fixtures

    img = tools_fixtures.many_modules_image(a.modules)
    lib = tools_fixtures.incbin_library("bench-many-modules", img)
    print(f"library: {lib} ({len(img) / 2**20:.1f} MiB library_bin, {a.modules:,} modules)")
    exe = shutil.which("tvmffi", path=str(Path(sys.executable).parent)) or "tvmffi"
    cmd = [exe, "inspect", "--static", "--json", str(lib)]

    bounded = [run(cmd) for _ in range(a.runs)]
    t = statistics.median(r[0] for r in bounded)
    print(
        f"inspect --static --json (bounded): {t:.2f} s median of {a.runs}, "
        f"peak RSS {max(r[1] for r in bounded):.0f} MiB, {bounded[0][2] / 1e3:.0f} kB of JSON"
    )
    nm = shutil.which("nm")
    if nm:
        tn = statistics.median(run([nm, "-D", str(lib)])[0] for _ in range(a.runs))
        print(f"nm -D (reference): {tn:.3f} s; ratio inspect/nm {t / tn:.1f}")
    if not a.no_full:
        env = dict(os.environ, TVMFFI_MODULE_DETAIL_LIMIT=str(a.modules))
        tf, rf, of = run(cmd, env)
        print(
            f"unbounded listing (reference): {tf:.2f} s, peak RSS {rf:.0f} MiB, "
            f"{of / 1e6:.0f} MB of JSON; ratio bounded/unbounded {t / tf:.2f}"
        )


if __name__ == "__main__":
    main()

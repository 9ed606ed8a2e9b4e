#!/usr/bin/env python3
"""What `tvmffi diff`'s default range check (NEW loaded on each release of
OLD's range, OLD where NEW fails) costs, against the same diff with
`--symbols-range` (the reference, measured in the same run), and what the
loads side by side save against one after the other.

    diff:  median wall time of N interleaved runs of `tvmffi diff --json OLD
           NEW` by default and with --symbols-range, their ratio and exit codes;
    cover: inspect/ranges.py cover() alone (both libraries described once),
           one load at a time vs as many as there are CPUs, and the loads.

Default pair: the official test libraries of apache-tvm-ffi 0.1.6 and
0.1.15.post2 (from their wheels in the wheel cache, ~/.cache/tvmffi/wheels),
23 loads: 0.1.15's aborts on 0.1.0..0.1.12, so 0.1.6's is loaded there too.

Usage: python bench/bench_diff_range.py [-n 3] [OLD NEW]
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

TVMFFI = [sys.executable, "-m", "tvmffi_cli"]
MEMBER = "tvm_ffi/lib/libtvm_ffi_testing.so"


def testing_libs(d):
    """The two official test libraries, extracted into `d`; exit 2 when their
    wheels are not cached."""
    from tvmffi_cli.ffi import fetch

    out = []
    for v in ("0.1.6", "0.1.15.post2"):
        wheel = next(
            (w for w in (fetch.cached_wheel(x, fetch.DIST, v) for x in fetch.wheel_dirs()) if w),
            None,
        )
        if wheel is None:
            sys.exit(f"the apache-tvm-ffi {v} wheel is not cached; pass OLD NEW")
        target = Path(d) / v / "libtvm_ffi_testing.so"
        target.parent.mkdir()
        target.write_bytes(zipfile.ZipFile(wheel).read(MEMBER))
        out.append(str(target))
    return out


def timed(argv):
    t0 = time.perf_counter()
    r = subprocess.run(TVMFFI + argv, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, r


def diff_runs(old, new, n):
    times = {"default": [], "--symbols-range": []}
    codes = {}
    for _ in range(n):  # interleaved, so drift hits both
        for flag in times:
            t, r = timed(["diff", "--json", old, new, *([flag] if flag != "default" else [])])
            times[flag].append(t)
            doc = json.loads(r.stdout)
            check = doc["range_check"]
            codes[flag] = (r.returncode, doc["verdict"], check["loads"] if check else None)
    ref = statistics.median(times["--symbols-range"])
    for flag, ts in times.items():
        m = statistics.median(ts)
        rc, verdict, loads = codes[flag]
        print(
            f"diff {flag:16} median of {n}: {m:6.2f} s  ({m / ref:4.1f}x --symbols-range)  "
            f"exit {rc} {verdict}" + (f", {loads} loads" if loads is not None else "")
        )


def cover_runs(old, new, n):
    from tvmffi_cli.diff import engine
    from tvmffi_cli.inspect import loads, ranges
    from tvmffi_cli.inspect.api import load_api

    a, b = load_api(old), load_api(new)
    known = {**engine._known(ranges.OLD, a[0]), **engine._known(ranges.NEW, b[0])}
    widths = {1: [], loads.cpus(): []}
    made = 0
    for _ in range(n):
        for w, ts in widths.items():
            t0 = time.perf_counter()
            c = ranges.cover(
                old, new, a[1]["runtime_releases"], b[1]["runtime_releases"], known, width=w
            )
            ts.append(time.perf_counter() - t0)
            made = c.loads
    one = statistics.median(widths[1])
    for w, ts in widths.items():
        m = statistics.median(ts)
        print(f"cover, {w:2} at a time, median of {n}: {m:6.2f} s  ({m / one:4.2f}x one at a time)")
    print(f"cover: {made} loads")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("libs", nargs="*")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        old, new = a.libs if len(a.libs) == 2 else testing_libs(d)
        diff_runs(old, new, a.n)
        cover_runs(old, new, a.n)


if __name__ == "__main__":
    main()

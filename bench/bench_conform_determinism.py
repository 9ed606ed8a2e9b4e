"""Run `tvmffi conform LIB --json` N times at each -j given and count the
distinct verdict sets (issue 28: goal 1). A verdict set is every result's
(check, function, status, severity); the count with messages is printed too.
Where sets differ, the results that differ are listed.

    python bench/bench_conform_determinism.py LIB [--runs 20] [--jobs 1,2]
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import time


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("library")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--jobs", default="1,2", help="comma-separated -j values")
    ap.add_argument("--timeout", default=None, help="--timeout for conform")
    args = ap.parse_args(argv)
    full = collections.Counter()
    slim = collections.Counter()
    first = {}
    times = collections.defaultdict(list)
    for j in args.jobs.split(","):
        for i in range(args.runs):
            cmd = [sys.executable, "-m", "tvmffi_cli", "conform", args.library, "--json", "-j", j]
            if args.timeout:
                cmd += ["--timeout", args.timeout]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, text=True)
            times[j].append(time.perf_counter() - t0)
            if proc.returncode not in (0, 1):
                raise SystemExit(f"conform failed (exit {proc.returncode}): {proc.stderr}")
            doc = json.loads(proc.stdout)
            v = frozenset(
                (x["check"], x["function"], x["status"], x["severity"], x["message"])
                for x in doc["results"]
            )
            full[v] += 1
            slim[frozenset(x[:4] for x in v)] += 1
            first.setdefault(v, f"-j {j} run {i + 1}")
            errors = sum(x[2] in ("fail", "error") and x[3] == "error" for x in v)
            print(f"  -j {j} run {i + 1}: {times[j][-1]:.1f} s, {errors} error finding(s)")
    medians = ", ".join(f"-j {j} {sorted(t)[len(t) // 2]:.1f} s" for j, t in times.items())
    print(
        f"{os.path.basename(args.library)}: {args.runs} runs at each of -j {args.jobs}: "
        f"{len(slim)} distinct verdict set(s), {len(full)} with messages; wall median {medians}"
    )
    if len(full) > 1:
        common = frozenset.intersection(*full)
        for v, n in full.most_common():
            print(f"  {n} run(s), the first {first[v]}:")
            for x in sorted(v - common, key=str)[:10]:
                print(f"    {x[:4]} {x[4][:200]}")
    return 0 if len(slim) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())

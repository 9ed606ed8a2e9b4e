"""The planted-bug table of fixtures/conform/kernel_bugs.cc, and how stable it is.

Builds the fixture with and without TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1
(official headers, as tests/test_kernel_bugs.py does), runs `tvmffi conform
-j 2 --json` on each build --runs times, and prints, per planted bug, the
check expected to catch it and what each build said: caught (an error of
that check), warned (a warning of it), missed; then the good functions
(every one must pass every check), the library-level type-layout finding,
the number of distinct verdict sets over the runs (1: the same verdicts on
every run) and the wall time per function.

    python bench/kernel_bugs_table.py [--runs 20] [--python PY] [--lib-meta SO --lib-nometa SO]

--python runs another installation's tvmffi (a baseline checkout's venv)
on the same libraries.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_kernel_bugs import BAD_TYPE, BUGS, GOOD, WARNS  # noqa: E402

BUILDS = {"metadata": ("TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1",), "no-metadata": ()}


def build(defines, name):
    import fixturebuild

    return fixturebuild.build(
        "conform/kernel_bugs.cc", headers="official", defines=defines, name=name
    )


def conform(python, lib):
    """(wall s, JSON document)."""
    t0 = time.perf_counter()
    r = subprocess.run(
        [python, "-m", "tvmffi_cli", "conform", str(lib), "-j", "2", "--json"],
        capture_output=True,
        text=True,
        env=dict(os.environ, COLUMNS="100"),
    )
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"conform failed (exit {r.returncode}): {r.stderr[-2000:]}")
    return dt, json.loads(r.stdout)


def verdicts(doc):
    """(check, function) -> "fail:error" / "fail:warning" / "pass" / "skip" ..."""
    out = {}
    for x in doc["results"]:
        status = x["status"]
        if status in ("fail", "error"):
            status = f"{status}:{x['severity']}"
        out[(x["check"], x["function"])] = status
    return out


def word(v, check, fn):
    s = v.get((check, fn), "absent")
    if s == "fail:error":
        return "caught"
    if s == "fail:warning":
        return "warned"
    return f"missed ({s})"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--lib-meta")
    ap.add_argument("--lib-nometa")
    args = ap.parse_args(argv)
    libs = {
        "metadata": args.lib_meta or build(BUILDS["metadata"], "kernel_bugs_metadata"),
        "no-metadata": args.lib_nometa or build(BUILDS["no-metadata"], "kernel_bugs_no-metadata"),
    }
    runs = {}
    times = {}
    for b, lib in libs.items():
        runs[b] = []
        times[b] = []
        for _ in range(args.runs):
            dt, doc = conform(args.python, lib)
            runs[b].append(verdicts(doc))
            times[b].append(dt / max(1, len(doc["functions"]) + len(doc.get("globals") or ())))
    first = {b: r[0] for b, r in runs.items()}
    print("| planted bug | expected check | with metadata | without metadata |")
    print("|---|---|---|---|")
    for fn, check in {**BUGS, **WARNS}.items():
        print(
            f"| `{fn}` | `{check}` | {word(first['metadata'], check, fn)} | "
            f"{word(first['no-metadata'], check, fn)} |"
        )
    print(
        f"| `{BAD_TYPE}` (a type) | `type-layout` | "
        f"{word(first['metadata'], 'type-layout', None)} | "
        f"{word(first['no-metadata'], 'type-layout', None)} |"
    )
    print()
    for b in libs:
        bad = sorted(
            (fn, c)
            for (c, fn), s in first[b].items()
            if fn in GOOD and s.startswith(("fail", "error"))
        )
        print(
            f"good functions, {b}: {len(GOOD) - len({f for f, _ in bad})} of {len(GOOD)} "
            f"pass every check" + (f"; findings: {bad}" if bad else "")
        )
    print()
    for b in libs:
        sets = {tuple(sorted(v.items())) for v in runs[b]}
        med = statistics.median(times[b]) * 1000
        print(
            f"{b}: {args.runs} run(s), {len(sets)} distinct verdict set(s); "
            f"median {med:.0f} ms per function (wall, -j 2)"
        )
        if len(sets) > 1:
            keys = set().union(*runs[b])
            for k in sorted(keys, key=str):
                seen = {v.get(k) for v in runs[b]}
                if len(seen) > 1:
                    counts = {s: sum(1 for v in runs[b] if v.get(k) == s) for s in seen}
                    print(f"  flips: {k}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Compare our libtvm_ffi.so with the official one on the ABI hot paths.

Builds bench/runtime/bench_abi.c once against the OFFICIAL headers and
libtvm_ffi.so, then runs that same binary alternately on the official runtime
and on ours (LD_LIBRARY_PATH picks which libtvm_ffi.so it binds to) and prints
the median ns/op of each case and the ratio ours/official.

Usage: python bench/bench_runtime.py [--runs N] [--scale K] [--ours PATH] [--json]
Exit status 1 when a ratio misses its target (--check).
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "bench" / "runtime" / "bench_abi.c"

# Upper bounds on ours/official (issue 2).
TARGETS = {"call": 1.0, "string": 1.0, "incref_decref": 1.0, "lookup": 1.0, "raise_fetch": 0.25}
LABELS = {
    "call": "TVMFFIFunctionCall (trivial C function)",
    "string": "heap String create (32 B) + release",
    "incref_decref": "IncRef + DecRef",
    "lookup": "TVMFFIFunctionGetGlobal + release",
    "raise_fetch": "raise (SetRaisedFromCStr) + fetch + release",
}


def official_dirs():
    import importlib.util

    spec = importlib.util.find_spec("tvm_ffi")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench_runtime: apache-tvm-ffi is not installed (pip install '.[test]')")
    pkg = Path(list(spec.submodule_search_locations)[0])
    inc, lib = pkg / "include", pkg / "lib" / "libtvm_ffi.so"
    if not (inc / "tvm" / "ffi" / "c_api.h").is_file() or not lib.is_file():
        sys.exit(f"bench_runtime: no headers/runtime in {pkg}")
    return inc, lib


def our_runtime():
    sys.path.insert(0, str(ROOT / "src"))
    from tvmffi_cli.ffi import paths

    return Path(paths.runtime_library())


def build(inc, lib, out):
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit("bench_runtime: no C compiler on PATH")
    cmd = [
        cc,
        "-O2",
        "-std=c11",
        "-Wall",
        "-Wextra",
        f"-I{inc}",
        str(SRC),
        f"-L{lib.parent}",
        "-ltvm_ffi",
        "-o",
        str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"bench_runtime: build failed:\n{' '.join(cmd)}\n{proc.stderr}")


def run_once(exe, libdir, scale):
    env = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
    env.pop("LD_PRELOAD", None)
    proc = subprocess.run(
        [str(exe), str(scale)], capture_output=True, text=True, env=env, timeout=600
    )
    if proc.returncode != 0:
        sys.exit(f"bench_runtime: benchmark failed on {libdir}:\n{proc.stderr}")
    res = {}
    for line in proc.stdout.splitlines():
        name, val = line.split()
        res[name] = float(val)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs per runtime (interleaved)")
    ap.add_argument("--scale", type=int, default=1, help="iteration multiplier")
    ap.add_argument("--ours", type=Path, help="our libtvm_ffi.so (default: the installed one)")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)

    inc, off_lib = official_dirs()
    ours = (args.ours or our_runtime()).resolve()
    if ours.name != "libtvm_ffi.so" or not ours.is_file():
        sys.exit(f"bench_runtime: {ours} is not a libtvm_ffi.so")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_abi"
        build(inc, off_lib, exe)
        samples = {"official": [], "ours": []}
        for _ in range(max(1, args.runs)):
            samples["official"].append(run_once(exe, off_lib.parent, args.scale))
            samples["ours"].append(run_once(exe, ours.parent, args.scale))

    rows = []
    for case in TARGETS:
        off = statistics.median(s[case] for s in samples["official"])
        our = statistics.median(s[case] for s in samples["ours"])
        ratio = our / off if off > 0 else float("inf")
        rows.append(
            {
                "case": case,
                "official_ns": off,
                "ours_ns": our,
                "ratio": ratio,
                "target": TARGETS[case],
                "ok": ratio <= TARGETS[case],
            }
        )
    if args.json:
        print(
            json.dumps(
                {"official": str(off_lib), "ours": str(ours), "runs": args.runs, "rows": rows},
                indent=2,
            )
        )
    else:
        print(f"official: {off_lib}\nours:     {ours}\nmedian of {args.runs} interleaved runs\n")
        print(f"{'case':<46} {'official ns':>12} {'ours ns':>10} {'ours/off':>9} {'target':>7}")
        for r in rows:
            print(
                f"{LABELS[r['case']]:<46} {r['official_ns']:>12.2f} {r['ours_ns']:>10.2f} "
                f"{r['ratio']:>8.3f}x {'<=' + format(r['target'], 'g'):>7} "
                f"{'ok' if r['ok'] else 'MISS'}"
            )
    if args.check and not all(r["ok"] for r in rows):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

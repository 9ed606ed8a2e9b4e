#!/usr/bin/env python3
"""Benchmarks of `tvmffi inspect` (issue 3, "Must show").

1. Large library: a generated ELF with 200,000 dynamic symbols, 20,000 of them
   `__tvm_ffi_` functions. `tvmffi inspect --static --json` against
   `nm -D --defined-only` on the same file: the median of the wall-time
   ratios of 7 pairs, alternating which runs first; the target is <= 1.0.
   Also checks that inspect finds all 20,000 functions. Prints the load
   average and whether the package's bytecode is cached (without it every
   run compiles the modules it imports: PYTHONDONTWRITEBYTECODE and an
   editable install).
2. Start-up: `tvmffi inspect --static` (and --json) on a small library against
   `python3 -c pass`; the target is <= 3x. Measured against the interpreter
   running tvmffi (sys.executable) and against whatever `python3` is on PATH.

Usage: python bench/bench_inspect.py [--symbols N] [--functions N] [--runs N] [--large-only]
Prints one line per measurement and the ratios; exits 1 when a target is missed.
"""

import argparse
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("TVMFFI_BENCH_CACHE", Path(tempfile.gettempdir()) / "tvmffi-bench"))


def tvmffi_cmd():
    exe = shutil.which("tvmffi", path=str(Path(sys.executable).parent)) or shutil.which("tvmffi")
    return [exe] if exe else [sys.executable, "-m", "tvmffi_cli"]


def generate_big_elf(nsym, nfunc):
    """Assemble a shared library with `nsym` exported functions, `nfunc` of
    them named __tvm_ffi_<name> and spread through the table."""
    key = hashlib.sha256(f"v1 {nsym} {nfunc}".encode()).hexdigest()[:10]
    out = CACHE / f"big-{nsym}-{nfunc}-{key}.so"
    if out.exists():
        return out
    CACHE.mkdir(parents=True, exist_ok=True)
    step = nsym // nfunc
    lines = [".text"]
    for i in range(nsym):
        if i % step == 0 and i // step < nfunc:
            name = f"__tvm_ffi_kernel_{i // step:05d}_fused_add_multiply"
        else:
            name = f"other_library_symbol_{i:06d}_with_a_typical_length"
        lines.append(f".globl {name}\n.type {name},@function\n{name}:\n ret\n.size {name},1")
    asm = CACHE / f"big-{key}.s"
    asm.write_text("\n".join(lines) + "\n")
    tmp = out.with_suffix(".tmp")
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", str(tmp), str(asm)], check=True)
    asm.unlink()
    os.replace(tmp, out)
    return out


def small_lib():
    src = CACHE / "small.c"
    out = CACHE / "small.so"
    if not out.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        src.write_text(
            "int __tvm_ffi_add(void*h,const void*a,int n,void*r){return 0;}\n"
            "int __tvm_ffi_sub(void*h,const void*a,int n,void*r){return 0;}\n"
        )
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    return out


def wall(cmd):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def interleaved(cmds, runs):
    """Median wall time of each command, running them in turn `runs` times."""
    times = {name: [] for name in cmds}
    for name, cmd in cmds.items():  # warm the page cache once
        wall(cmd)
    for _ in range(runs):
        for name, cmd in cmds.items():
            times[name].append(wall(cmd))
    return {name: statistics.median(v) for name, v in times.items()}


def bytecode_cached():
    """Whether the tvmffi_cli modules the fast path imports have .pyc files."""
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.util as u, os, tvmffi_cli.cli.main as m; "
            "print(os.path.exists(u.cache_from_source(m.__file__)))",
        ],
        capture_output=True,
        text=True,
    )
    dont = os.environ.get("PYTHONDONTWRITEBYTECODE")
    return r.stdout.strip() + (f" (PYTHONDONTWRITEBYTECODE={dont})" if dont else "")


def paired(a, b, runs):
    """Wall times of commands a and b in `runs` pairs, alternating which goes
    first so load from other users hits both alike; returns (times of a,
    times of b, per-pair ratios a/b)."""
    wall(a), wall(b)  # warm the page cache once
    ta, tb = [], []
    for i in range(runs):
        if i % 2:
            tb.append(wall(b))
            ta.append(wall(a))
        else:
            ta.append(wall(a))
            tb.append(wall(b))
    return ta, tb, [x / y for x, y in zip(ta, tb)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--symbols", type=int, default=200_000)
    ap.add_argument("--functions", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--startup-runs", type=int, default=21)
    ap.add_argument("--large-only", action="store_true", help="skip the start-up measurement")
    ap.add_argument(
        "--tvmffi",
        help="command to run as tvmffi, e.g. 'env PYTHONPATH=/other/src python -S -m tvmffi_cli' "
        "to measure another checkout the same way",
    )
    args = ap.parse_args()
    ok = True
    tv = shlex.split(args.tvmffi) if args.tvmffi else tvmffi_cmd()

    big = generate_big_elf(args.symbols, args.functions)
    r = subprocess.run(
        tv + ["inspect", "--static", "--json", str(big)], capture_output=True, text=True
    )
    found = len(json.loads(r.stdout)["functions"]) if r.returncode == 0 else -1
    print(
        f"large ELF: {big.name} ({big.stat().st_size / 1e6:.1f} MB), "
        f"{args.symbols} dynamic symbols, inspect found {found}/{args.functions} functions"
    )
    ok &= found == args.functions
    ta, tb, ratios = paired(
        tv + ["inspect", "--static", "--json", str(big)],
        ["nm", "-D", "--defined-only", str(big)],
        args.runs,
    )
    ratio = statistics.median(ratios)
    print(
        f"  tvmffi inspect --static --json: {statistics.median(ta) * 1e3:8.1f} ms (median of "
        f"{args.runs} alternating pairs)"
    )
    print(f"  nm -D --defined-only:           {statistics.median(tb) * 1e3:8.1f} ms")
    print(f"  pair ratios: {' '.join(f'{r:.2f}' for r in sorted(ratios))}")
    print(
        f"  ratio inspect/nm = {ratio:.2f} (median of the {args.runs} pair ratios; "
        f"target <= 1.00) {'OK' if ratio <= 1 else 'MISSED'}"
    )
    load = os.getloadavg()
    print(f"  load average: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    print(f"  bytecode cached: {bytecode_cached()}")
    ok &= ratio <= 1.0
    if args.large_only:
        return 0 if ok else 1

    small = small_lib()
    cmds = {
        "python3 -c pass (PATH)": ["python3", "-c", "pass"],
        "python -c pass (same interpreter)": [sys.executable, "-c", "pass"],
        "inspect --static": tv + ["inspect", "--static", str(small)],
        "inspect --static --json": tv + ["inspect", "--static", "--json", str(small)],
    }
    med = interleaved(cmds, args.startup_runs)
    print(f"start-up on a small library (median of {args.startup_runs}, interleaved):")
    for name, t in med.items():
        print(f"  {name:36s} {t * 1e3:7.1f} ms")
    for base in ("python3 -c pass (PATH)", "python -c pass (same interpreter)"):
        for name in ("inspect --static", "inspect --static --json"):
            ratio = med[name] / med[base]
            print(f"  {name} / {base}: {ratio:.2f}x (target <= 3)")
    ratio = med["inspect --static --json"] / med["python -c pass (same interpreter)"]
    ok &= ratio <= 3.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

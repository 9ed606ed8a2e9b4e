#!/usr/bin/env python3
"""Figures of the hardening work (issue 6), measured on this machine:

1. Mutated-library corpus: inputs per library, outcome counts (exit 0/1/2),
   contract violations, and the slowest input (in-process fast path), plus a
   sample through real `tvmffi` processes (wall time per process).
2. Bounded resources: peak RSS and bytes read for `inspect --static --json`
   of a 2 GiB sparse library, and of one whose .dynsym claims the 2 GiB.
3. valgrind memcheck over tests/c_hard/capi_all.c: error and leak counts.
4. Thread stress (tests/c_hard/stress.c, 8 threads x 1,000,000): time per
   phase, median of --runs.

Usage: python bench/bench_hardening.py [--seeds N] [--runs N]
Exits 1 when a figure misses its bound (corpus contract, 10 s per input,
200 MB RSS, valgrind 0 errors / 0 definite / 0 indirect, stress output).
"""

import argparse
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "fixtures" / "hardening"))

import corpus  # noqa: E402

import test_hardening_corpus as tc  # noqa: E402
import test_hardening_resources as tr  # noqa: E402
import test_hardening_stress as ts  # noqa: E402
import test_hardening_valgrind as tv  # noqa: E402

failed = []


def bound(ok, what):
    if not ok:
        failed.append(what)
    return "OK" if ok else "MISSED"


def bench_corpus(seeds, work):
    print("1. mutated-library corpus (inspect --static --json)")
    libs = tc.corpus_libraries()
    total, worst, worst_id, problems = 0, 0.0, None, []
    codes = {0: 0, 1: 0, 2: 0}
    for name, lib in sorted(libs.items()):
        n_lib = 0
        for seed in range(tc.SEED, tc.SEED + seeds):
            d = work / f"{name}-{seed}"
            d.mkdir()
            rows, probs = tc.run_batch(lib, d, seed=seed)
            problems += probs
            n_lib += len(rows)
            for r in rows:
                codes[r["rc"]] = codes.get(r["rc"], 0) + 1
                if r["seconds"] > worst:
                    worst, worst_id = r["seconds"], f"{name} {r['id']}"
        total += n_lib
        print(f"  {name:16s} {lib.stat().st_size:>9,d} bytes  {n_lib:5d} inputs")
    print(
        f"  total {total} inputs over {seeds} seed(s): exit 0={codes[0]} 1={codes[1]} "
        f"2={codes[2]}; contract violations {len(problems)} "
        f"{bound(not problems, 'corpus contract')}"
    )
    for p in problems[:5]:
        print("    " + p.splitlines()[0])
    print(
        f"  slowest input in-process: {worst * 1000:.1f} ms ({worst_id}) "
        f"{bound(worst < tc.LIMIT_S, 'corpus time')}"
    )
    # real processes on a sample
    times, bad = [], 0
    for name, lib in sorted(libs.items()):
        data = lib.read_bytes()
        for i, spec in enumerate(corpus.specs(data, tc.SEED)[:: tc.CLI_EVERY * 2]):
            p = work / f"cli-{name}-{i}.so"
            p.write_bytes(corpus.apply(data, spec))
            rc, out, err, dt = tc.run_cli(p)
            times.append(dt)
            bad += rc == "timeout" or bool(tc.check_result(rc, out, err, name))
            p.unlink()
    print(
        f"  real `tvmffi` processes: {len(times)} inputs, median {statistics.median(times) * 1000:.0f}"
        f" ms, max {max(times) * 1000:.0f} ms, violations {bad} "
        f"{bound(bad == 0 and max(times) < tc.LIMIT_S, 'cli sample')}"
    )


def bench_resources(work):
    print("2. bounded resources (inspect --static --json)")
    lib = (
        tr.fixturebuild.build(
            "cpp/kitchen.cc", headers="official", defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"]
        )
        if tr.fixturebuild.official_include()
        else tr.fixturebuild.build("c/basic.c")
    )
    big = tr.sparse_copy(lib, work / "big.so")
    small = tr.measure(["inspect", "--static", "--json", lib], work, probe=True)
    r = tr.measure(["inspect", "--static", "--json", big], work, probe=True)
    print(
        f"  library {lib.name} ({lib.stat().st_size:,d} bytes): RSS {small['maxrss'] / 1e6:.1f} MB,"
        f" read {small['rchar'] / 1e6:.2f} MB"
    )
    print(
        f"  2 GiB sparse copy: exit {r['rc']}, RSS {r['maxrss'] / 1e6:.1f} MB, read "
        f"{r['rchar'] / 1e6:.2f} MB of {big.stat().st_size / 1e6:.0f} MB, {r['seconds']:.2f} s "
        f"{bound(r['rc'] == 0 and r['maxrss'] < tr.RSS_LIMIT and r['rchar'] < 64 << 20, '2 GiB')}"
    )
    data = lib.read_bytes()
    with open(big, "r+b") as f:
        for at, sh in tr._shdrs(data):
            if sh[1] == 11:
                f.seek(at + 32)
                f.write(struct.pack("<Q", 2 * tr.GIB - sh[4]))
    r = tr.measure(["inspect", "--static", "--json", big], work, probe=True)
    print(
        f"  .dynsym claiming 2 GiB: exit {r['rc']}, RSS {r['maxrss'] / 1e6:.1f} MB, read "
        f"{r['rchar'] / 1e6:.2f} MB, {r['seconds']:.2f} s "
        f"{bound(r['rc'] == 1 and r['maxrss'] < tr.RSS_LIMIT, 'dynsym claim')}"
    )
    big.unlink()


def bench_valgrind():
    print("3. valgrind memcheck (tests/c_hard/capi_all.c, all 50 C API functions)")
    if tv.shutil.which("valgrind") is None:
        print("  skipped: valgrind is not installed")
        return
    t0 = time.monotonic()
    proc, s = tv.run_valgrind([tv.capi_all_program(), tv.basic_library()])
    dt = time.monotonic() - t0
    ok = proc.returncode == 0 and s["errors"] == 0 and s["definite"] == 0 and s["indirect"] == 0
    print(
        f"  errors {s['errors']}, invalid accesses {s['invalid']}, definitely lost "
        f"{s['definite']} B, indirectly lost {s['indirect']} B, possibly lost {s['possible']} B,"
        f" still reachable {s['reachable']} B; {dt:.1f} s {bound(ok, 'valgrind')}"
    )


def bench_stress(runs):
    print("4. thread stress (8 threads x 1,000,000 IncRef/DecRef, errors, globals, types)")
    exe = ts.stress_program()
    per = {}
    ok = True
    for _ in range(runs):
        t0 = time.monotonic()
        proc = ts.run_stress(exe)
        wall = time.monotonic() - t0
        ok &= proc.returncode == 0 and proc.stdout == ts.EXPECTED_STRESS
        for k, v in ts.timings(proc.stderr).items():
            per.setdefault(k, []).append(v)
        per.setdefault("whole program (wall)", []).append(wall * 1000)
    for k, v in per.items():
        extra = ""
        if k.startswith("refcount-") and k != "refcount-mixed":
            extra = f"  ({8e6 / statistics.median(v) / 1e3:.0f} M ops/s)"
        print(f"  {k:22s} {statistics.median(v):8.1f} ms{extra}")
    print(f"  exact output in all {runs} runs: {bound(ok, 'stress')}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=1, help="corpus seeds per library")
    ap.add_argument("--runs", type=int, default=5, help="stress runs (median)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        bench_corpus(a.seeds, work)
        bench_resources(work)
    bench_valgrind()
    bench_stress(a.runs)
    if failed:
        print("missed:", ", ".join(failed))
        sys.exit(1)


if __name__ == "__main__":
    main()

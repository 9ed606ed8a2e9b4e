#!/usr/bin/env python3
"""Peak memory of `tvmffi call` on a 1 GiB tensor.

Writes a 1 GiB float32 .npy, then runs

    tvmffi call libkernels.so scale2 --tensor big.npy [--out DIR]

where scale2 reads x and returns a new tensor 2 * x (1 GiB more). One copy of
each is the floor: the input mapped from the file, the output the kernel
allocates. The CLI runs in-process under a small wrapper so that its own peak
(ru_maxrss of RUSAGE_SELF: the parent) and the worker's (RUSAGE_CHILDREN: the
child that hosts the library) are both known; their sum bounds the total.

    pass when  parent peak + child peak <= 2.3 GiB

Usage: python bench/bench_call_rss.py [--gib 1] [--out] [--keep DIR]
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GIB = 1 << 30

WRAPPER = r"""
import json, resource, sys
from tvmffi_cli import cli
code = 0
try:
    cli.main(sys.argv[1:])
except SystemExit as e:
    code = e.code or 0
# ru_maxrss is in KiB on Linux.
self_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
child_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps({"exit": code, "parent_kib": self_kib, "child_kib": child_kib}), file=sys.stderr)
"""


def build(tmp):
    from tvmffi_cli.ffi import paths

    so = tmp / "libkernels.so"
    r = subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-O2",
            "-shared",
            "-fPIC",
            f"-I{paths.include_dir()}",
            str(ROOT / "fixtures" / "call" / "kernels.c"),
            "-o",
            str(so),
            f"-L{paths.runtime_library().parent}",
            "-ltvm_ffi",
        ],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        sys.exit(r.stderr)
    return so


WRITER = r"""
import sys
import numpy as np
n = int(sys.argv[2])
arr = np.lib.format.open_memmap(sys.argv[1], mode="w+", dtype=np.float32, shape=(n,))
chunk = 1 << 24
for i in range(0, n, chunk):
    m = min(chunk, n - i)
    arr[i:i + m] = np.arange(i, i + m, dtype=np.float32)
arr.flush()
"""


def write_big_npy(path, nbytes):
    """A float32 .npy of nbytes data. Written by another process: on Linux a
    process's peak RSS survives fork+exec, so this script must never grow big
    itself or the measured CLI would inherit its peak."""
    subprocess.run([sys.executable, "-c", WRITER, str(path), str(nbytes // 4)], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0, help="input size in GiB")
    ap.add_argument("--out", action="store_true", help="also write arg0.npy and result.npy")
    ap.add_argument("--limit-gib", type=float, default=2.3)
    a = ap.parse_args()
    nbytes = int(a.gib * GIB) // 4 * 4
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        so = build(tmp)
        big = tmp / "big.npy"
        write_big_npy(big, nbytes)
        mtime = big.stat().st_mtime_ns
        cmd = [
            sys.executable,
            "-c",
            WRAPPER,
            "call",
            str(so),
            "scale2",
            "--tensor",
            str(big),
            "--timeout",
            "600",
        ]
        if a.out:
            cmd += ["--out", str(tmp / "out")]
        r = subprocess.run(cmd, capture_output=True, text=True)
        stats = json.loads(r.stderr.strip().splitlines()[-1])
        if stats["exit"] != 0:
            sys.exit(f"tvmffi call failed:\n{r.stdout}\n{r.stderr}")
        lines = r.stdout.splitlines()
        if not lines or not lines[0].startswith(f"<Tensor float32[{nbytes // 4}]"):
            sys.exit(f"unexpected output:\n{r.stdout}")
        if big.stat().st_mtime_ns != mtime:
            sys.exit("the input file was modified")
        if a.out:
            import numpy as np

            res = np.load(tmp / "out" / "result.npy", mmap_mode="r")
            x = np.load(big, mmap_mode="r")
            n = nbytes // 4
            for i in (0, 1, n // 2, n - 1):
                if res[i] != 2 * x[i]:
                    sys.exit(f"result.npy[{i}] = {res[i]}, want {2 * x[i]}")
            del res, x
    parent, child = stats["parent_kib"] * 1024, stats["child_kib"] * 1024
    total = parent + child
    limit = a.limit_gib * GIB
    print(
        f"tvmffi call scale2 on a {nbytes / GIB:.2f} GiB float32 .npy"
        f"{' with --out' if a.out else ''} (result: another {nbytes / GIB:.2f} GiB)"
    )
    print(
        f"  peak RSS: parent {parent / GIB:.3f} GiB + worker {child / GIB:.3f} GiB "
        f"= {total / GIB:.3f} GiB (limit {a.limit_gib} GiB, floor {2 * nbytes / GIB:.2f} GiB)"
        f" -> {'PASS' if total <= limit else 'FAIL'}"
    )
    return 0 if total <= limit else 1


if __name__ == "__main__":
    sys.exit(main())

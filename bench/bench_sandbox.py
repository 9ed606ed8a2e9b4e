#!/usr/bin/env python3
"""The cost of the sandbox on `tvmffi call` of a trivial function, and the
figures of issue 15.

    overhead: median wall time of N runs of `tvmffi call LIB hello` with the
              default sandbox vs `--no-sandbox` (fixtures/hostile/hostile.c's
              hello returns 1), and their ratio. The reference is the same
              command without confinement; process lifetime (PID namespace,
              supervisor) is in both.
    --figures: peak RSS of a memory bomb under --memory-limit 1G; seconds of
              `conform --timeout 3` of a never-returning metadata getter;
              seconds, peak RSS and output bytes of `inspect --static --json`
              of a library whose __tvm_ffi__library_bin is 32+ MB
              (300,000 kernels).

    --matrix: issue 23's table, every case as root and nobody, with and
              without namespaces (bench/sandbox_matrix.py).

Usage: python bench/bench_sandbox.py [-n 20] [--figures] [--matrix]
"""

import argparse
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import fixturebuild  # noqa: E402

TVMFFI = [sys.executable, "-m", "tvmffi_cli"]


def timed(argv):
    t0 = time.perf_counter()
    r = subprocess.run(TVMFFI + argv, capture_output=True, check=False)
    return time.perf_counter() - t0, r


def overhead(n):
    lib = str(fixturebuild.build("hostile/hostile.c"))
    timed(["call", lib, "hello"])  # warm caches
    on, off = [], []
    for _ in range(n):  # interleaved, so drift hits both
        t, r = timed(["call", lib, "hello"])
        assert r.returncode == 0, r.stderr
        on.append(t)
        t, r = timed(["call", "--no-sandbox", lib, "hello"])
        assert r.returncode == 0, r.stderr
        off.append(t)
    m_on, m_off = statistics.median(on), statistics.median(off)
    print(
        f"tvmffi call hello, median of {n}: sandbox {m_on * 1000:.1f} ms, "
        f"--no-sandbox {m_off * 1000:.1f} ms, ratio {m_on / m_off:.3f} "
        f"(+{(m_on - m_off) * 1000:.1f} ms)"
    )


def child_peak_kb(argv):
    """Run and return (seconds, max RSS of the largest descendant in KiB, result)."""
    code = (
        "import resource,subprocess,sys,time;t=time.perf_counter();"
        "r=subprocess.run(sys.argv[1:],capture_output=True);"
        "print(time.perf_counter()-t,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,"
        "len(r.stdout),r.returncode);sys.stderr.buffer.write(r.stderr[-400:])"
    )
    r = subprocess.run(
        [sys.executable, "-c", code, *TVMFFI, *argv], capture_output=True, text=True, check=True
    )
    secs, kb, out, rc = r.stdout.split()
    return float(secs), int(kb), int(out), int(rc), r.stderr.strip()


def big_library_bin(d, n=300_000):
    def u64(*xs):
        return struct.pack(f"<{len(xs)}Q", *xs)

    def s(b):
        b = b.encode() if isinstance(b, str) else b
        return u64(len(b)) + b

    parts = [s("cubin"), u64(n)]
    for i in range(n):
        name = f"kernel_{i:07d}"
        parts.append(
            s(name)
            + s(name)
            + u64(3)
            + struct.pack("<BBHBBHBBH", 2, 32, 1, 2, 32, 1, 0, 32, 1)
            + u64(2)
            + s("blockIdx.x")
            + s("threadIdx.x")
            + u64(3)
            + struct.pack("<3i", 0, 0, 0)
        )
    parts.append(s(b"\x7fELF" + bytes(60)))
    cuda = b"".join(parts)
    body = u64(3, 0, 1, 1) + u64(1, 1) + s("_lib") + s("cuda") + s(cuda)
    blob = u64(len(body)) + body
    (d / "bin").write_bytes(blob)
    (d / "big.c").write_text(
        '__asm__(".section .rodata\\n.globl __tvm_ffi__library_bin\\n'
        '__tvm_ffi__library_bin:\\n.incbin \\"' + str(d / "bin") + '\\"\\n.text\\n");\n'
        '__attribute__((visibility("default"))) void* __tvm_ffi__library_ctx = 0;\n'
    )
    subprocess.run(
        ["gcc", "-shared", "-fPIC", str(d / "big.c"), "-o", str(d / "big.so")], check=True
    )
    return d / "big.so", len(blob)


def figures():
    hostile = str(fixturebuild.build("hostile/hostile.c"))
    secs, kb, _, rc, err = child_peak_kb(["call", hostile, "memory_bomb", "--memory-limit", "1G"])
    print(
        f"memory bomb under --memory-limit 1G: exit {rc} after {secs:.2f} s, peak RSS "
        f"{kb // 1024} MiB; {err.splitlines()[-1] if err else ''}"
    )
    stuck = str(fixturebuild.build("hostile/stuck.c"))
    secs, _, _, rc, _ = child_peak_kb(["conform", stuck, "--timeout", "3"])
    print(f"conform --timeout 3 of a never-returning metadata getter: exit {rc} after {secs:.2f} s")
    with tempfile.TemporaryDirectory() as td:
        lib, size = big_library_bin(Path(td))
        secs, kb, out, rc, _ = child_peak_kb(["inspect", "--static", "--json", str(lib)])
        print(
            f"inspect --static --json, library_bin of {size / 1e6:.1f} MB (300,000 kernels; "
            f"file {os.path.getsize(lib) / 1e6:.1f} MB): exit {rc}, {secs:.2f} s, peak RSS "
            f"{kb // 1024} MiB, output {out} bytes"
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("--figures", action="store_true")
    ap.add_argument("--matrix", action="store_true", help="issue 23's table (sandbox_matrix.py)")
    a = ap.parse_args()
    overhead(a.n)
    if a.figures:
        figures()
    if a.matrix:
        import sandbox_matrix

        sandbox_matrix.main()


if __name__ == "__main__":
    main()

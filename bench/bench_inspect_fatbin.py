#!/usr/bin/env python3
"""`tvmffi inspect --static --json` of a library full of CUDA code: the public
liger-cute-kernels 0.8.5 `libliger_cute_kernels_sm90a.so` (49 MB, 43 MB of
fat binaries in 26 entries, one LZ4 image of 17 MB that holds 81 MB), from
the wheel cache (fetched with pip when missing). Prints median wall time
and peak RSS of

- the default (kernel names of the uncompressed entries; the 81 MB image is
  over the 32 MiB decompression budget),
- no decompression at all (TVMFFI_FATBIN_DECOMPRESS_LIMIT=0),
- every loaded entry decompressed (TVMFFI_FATBIN_DECOMPRESS_LIMIT=128 MiB),

against references measured in the same run: `nm -D --defined-only` of the
same file (the cost of touching it at all) and, when installed,
`cuobjdump --list-elf --list-ptx` (NVIDIA's lister); the share of the CUDA
code in `static_report` in this process. Then the reader alone on generated
.nv_fatbin sections of 5,000 and 20,000 entries (linear: a ratio of about
4; past 20,000 entries are only counted, which costs less).

Usage: python bench/bench_inspect_fatbin.py [--runs N] [--lib PATH]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
WHEEL = ("liger-cute-kernels", "0.8.5")
MEMBER = "liger_cute_kernels/libliger_cute_kernels_sm90a.so"


def liger():
    cache = Path(os.environ.get("TVMFFI_WHEEL_CACHE") or Path.home() / ".cache/tvmffi/wheels")
    cache.mkdir(parents=True, exist_ok=True)
    found = sorted(cache.glob("liger_cute_kernels-0.8.5-*.whl"))
    if not found:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "-q",
                f"{WHEEL[0]}=={WHEEL[1]}",
                "-d",
                str(cache),
            ],
            check=False,
        )
        found = sorted(cache.glob("liger_cute_kernels-0.8.5-*.whl"))
    if not found:
        sys.exit("liger-cute-kernels 0.8.5 is not cached and could not be downloaded")
    out = cache / "extracted" / found[0].stem / MEMBER
    if not out.is_file():
        with zipfile.ZipFile(found[0]) as z:
            z.extract(MEMBER, out.parents[1])
    return out


def run(cmd, env=None):
    """(seconds, peak RSS MiB of the child so far)."""
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, env=env)
    dt = time.perf_counter() - t
    if p.returncode not in (0, 1):
        sys.exit(f"{cmd[0]} failed ({p.returncode}): {p.stderr.decode()[:300]}")
    return dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def median(cmd, runs, env=None):
    rows = [run(cmd, env) for _ in range(runs)]
    return statistics.median(r[0] for r in rows), max(r[1] for r in rows)


def cuobjdump():
    sys.path.insert(0, str(ROOT / "tests"))
    from test_fatbin import cuobjdump as find

    return find()


def synthetic(n):
    from tvmffi_cli.binary import Binary, Section, fatbin

    cubin = b"\x7fELF" + b"\0" * 60
    entry = (
        fatbin.ENTRY.pack(fatbin.KIND_ELF, 0x101, 64, len(cubin), 0, 0, 8, 1, 90, 0, 0, 0x11, 0, 0)
        + cubin
    )
    body = entry * n
    sec = fatbin.CONTAINER.pack(fatbin.FATBIN_MAGIC, 1, 16, len(body)) + body
    b = Binary("synthetic.so", sec)
    b.sections = [Section(".nv_fatbin", 0x1000, len(sec), 0, len(sec))]
    t = time.perf_counter()
    code = fatbin.read(b)
    return time.perf_counter() - t, code.entry_count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lib", help="another library (default: liger-cute-kernels' sm90a library)")
    a = ap.parse_args()
    lib = Path(a.lib) if a.lib else liger()
    print(f"library: {lib} ({lib.stat().st_size / 2**20:.1f} MiB)")
    exe = shutil.which("tvmffi", path=str(Path(sys.executable).parent)) or "tvmffi"
    cmd = [exe, "inspect", "--static", "--json", str(lib)]
    env = dict(os.environ)

    ref, _ = median(["nm", "-D", "--defined-only", str(lib)], a.runs)
    print(f"reference nm -D --defined-only: {ref:.3f} s")
    for label, limit in (
        ("no decompression", "0"),
        ("default budget", None),
        ("every loaded entry", str(128 << 20)),
    ):
        e = dict(env)
        e.pop("TVMFFI_FATBIN_DECOMPRESS_LIMIT", None)
        if limit is not None:
            e["TVMFFI_FATBIN_DECOMPRESS_LIMIT"] = limit
        t, rss = median(cmd, a.runs, e)  # growing RSS: the maximum so far is this run's
        print(
            f"inspect --static --json, {label + ':':22s} {t:.3f} s = {t / ref:5.1f}x nm -D, "
            f"peak RSS {rss:.0f} MiB"
        )
    tool = cuobjdump()
    if tool:
        t, _ = median([tool, "--list-elf", "--list-ptx", str(lib)], a.runs)
        print(f"reference cuobjdump --list-elf --list-ptx: {t:.3f} s = {t / ref:.1f}x nm -D")

    # The reader's share, in this process: static_report of the same file with
    # and without it, alternating.
    from tvmffi_cli.binary import fatbin, open_binary
    from tvmffi_cli.inspect.engine import static_report

    real = fatbin.read
    with_, without = [], []
    for _ in range(a.runs):
        for reader, into in ((real, with_), (lambda b, names=True: None, without)):
            fatbin.read = reader
            t = time.perf_counter()
            with open_binary(lib) as b:
                static_report(b)
            into.append(time.perf_counter() - t)
    fatbin.read = real
    w, wo = statistics.median(with_), statistics.median(without)
    print(
        f"static_report in process: {w:.3f} s with the CUDA code, {wo:.3f} s without "
        f"(ratio {w / wo:.2f})"
    )

    small, n1 = synthetic(5_000)
    big, n2 = synthetic(20_000)
    print(
        f"reader alone: {n1:,} entries {small:.3f} s, {n2:,} entries {big:.3f} s "
        f"(ratio {big / small:.1f} for 4x the entries)"
    )


if __name__ == "__main__":
    main()

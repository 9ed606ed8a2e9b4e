"""Benchmark: what one hanging function costs `tvmffi conform` (issue 28).

Builds bench_conform.py's generated library twice: as is (the reference),
and with one more function, typed with metadata and docs, whose every call
sleeps forever (so each of its probe steps would hang). Runs conform on
both at --timeout T (default 10) and -j 1 and reports the difference: the
hanging function must add at most T + 2 seconds (one timeout for the first
call that hangs; the function's other calls share a short budget).

    python bench/bench_conform_hang.py [--functions 34] [--timeout 10] [--repeat 1]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_conform

HANG = r"""
#include <unistd.h>
EXPORT int __tvm_ffi_hangs(void* self, const TVMFFIAny* args, int32_t num_args,
                           TVMFFIAny* result) {
  (void)self; (void)args; (void)num_args; (void)result;
  for (;;) sleep(1);
}
EXPORT int __tvm_ffi__metadata_hangs(void* s, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) {
  (void)s; (void)a; (void)n;
  return getter("%s", r);
}
EXPORT int __tvm_ffi__doc_hangs(void* s, const TVMFFIAny* a, int32_t n, TVMFFIAny* r) {
  (void)s; (void)a; (void)n;
  return getter("never returns", r);
}
"""


def run(lib, timeout):
    cmd = [sys.executable, "-m", "tvmffi_cli", "conform", str(lib), "-j", "1", "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + ["--timeout", str(timeout)], capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"conform failed (exit {proc.returncode}): {proc.stderr}")
    return dt, proc.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--functions", type=int, default=34)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    meta = bench_conform.schema("int", ["int", "int"])
    with tempfile.TemporaryDirectory(prefix="bench_conform_hang_") as d:
        ref_src, hang_src = Path(d) / "ref.c", Path(d) / "hang.c"
        ref_lib, hang_lib = Path(d) / "libref.so", Path(d) / "libhang.so"
        body = bench_conform.generate(args.functions)
        ref_src.write_text("#define _DEFAULT_SOURCE\n" + body)
        hang_src.write_text("#define _DEFAULT_SOURCE\n" + body + HANG % meta)
        bench_conform.build(ref_src, ref_lib)
        bench_conform.build(hang_src, hang_lib)
        refs, hangs = [], []
        for _ in range(args.repeat):
            refs.append(run(ref_lib, args.timeout)[0])
            dt, rc = run(hang_lib, args.timeout)
            hangs.append(dt)
    ref, hang = statistics.median(refs), statistics.median(hangs)
    extra = hang - ref
    limit = args.timeout + 2.0
    print(f"library:   {args.functions} generated functions, + 1 that never returns, -j 1")
    print(f"reference: {ref:.2f} s without it (median of {args.repeat})")
    print(f"with it:   {hang:.2f} s at --timeout {args.timeout:g} (exit {rc})")
    print(f"extra:     {extra:.2f} s (limit --timeout + 2 = {limit:g} s)")
    ok = rc == 1 and extra <= limit
    print("RESULT:    " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

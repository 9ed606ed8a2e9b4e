#!/usr/bin/env python3
"""`tvmffi bench` with CUDA tensors against a hand-written CUDA-event loop.

Needs a CUDA device (run by tools/gpu_check.sh; without one it prints the
reason and exits 2). Builds the pack of fixtures/cuda/pack.cu with nvcc (or
takes PACK), and a C program (DRIVER below) that dlopens it, puts two float32
tensors of N elements in device memory, publishes a non-blocking stream
through TVMFFIEnvSetStream (what tvmffi does) and times R rounds of C calls
of the exported symbol `__tvm_ffi_add_one` between two CUDA events on that
stream, after a warm-up round (the driver API is reached by dlopen: no CUDA
toolkit is needed to build it). Then `tvmffi bench PACK add_one
float32[N]:ones@cuda float32[N]:ones@cuda --repeat C --rounds R` with the
same round sizes; the two alternate T times and the medians are compared:

    pass when  |tvmffi_median / loop_median - 1| <= 5%   (for each N)

Usage: python bench/bench_gpu.py [--pack PACK] [--func F --tensors K] [--n N ...]
                                [--calls C] [--rounds R] [--trials T]
(TVMFFI_CUDA_DRIVER=stand-in --pack standin_kernels.so --tensors 1 runs it without
a GPU, as a check of the script only.)
Exit status 0 when every N holds, 1 when one misses, 2 without a GPU.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

DRIVER = r"""
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

/* The driver API, by dlopen (no CUDA toolkit needed to build this). */
typedef int (*fn_t)();
static void* drv;
static fn_t sym(const char* a, const char* b) {
  fn_t f = (fn_t)dlsym(drv, a);
  return f ? f : (fn_t)dlsym(drv, b);
}
typedef int (*safe_call_t)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
#define CK(x) do { int e_ = (x); if (e_) { fprintf(stderr, "%s: %d\n", #x, e_); return 2; } } while (0)

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

/* argv: DRIVER PACK FUNC N TENSORS CALLS ROUNDS */
int main(int argc, char** argv) {
  if (argc != 8) return 2;
  int64_t n = atoll(argv[4]), calls = atoll(argv[6]);
  int nt = atoi(argv[5]), rounds = atoi(argv[7]);
  if (nt < 1 || nt > 4 || rounds < 1) return 2;
  drv = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
  if (!drv) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  int (*init)(unsigned) = (int (*)(unsigned))sym("cuInit", "cuInit");
  int (*dget)(int*, int) = (int (*)(int*, int))sym("cuDeviceGet", "cuDeviceGet");
  int (*retain)(void**, int) = (int (*)(void**, int))sym("cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain");
  int (*setcur)(void*) = (int (*)(void*))sym("cuCtxSetCurrent", "cuCtxSetCurrent");
  int (*alloc)(unsigned long long*, size_t) = (int (*)(unsigned long long*, size_t))sym("cuMemAlloc_v2", "cuMemAlloc");
  int (*set32)(unsigned long long, unsigned, size_t) = (int (*)(unsigned long long, unsigned, size_t))sym("cuMemsetD32_v2", "cuMemsetD32");
  int (*screate)(void**, unsigned) = (int (*)(void**, unsigned))sym("cuStreamCreate", "cuStreamCreate");
  int (*ecreate)(void**, unsigned) = (int (*)(void**, unsigned))sym("cuEventCreate", "cuEventCreate");
  int (*erecord)(void*, void*) = (int (*)(void*, void*))sym("cuEventRecord", "cuEventRecord");
  int (*esync)(void*) = (int (*)(void*))sym("cuEventSynchronize", "cuEventSynchronize");
  int (*elapsed)(float*, void*, void*) = (int (*)(float*, void*, void*))sym("cuEventElapsedTime_v2", "cuEventElapsedTime");
  int (*csync)(void) = (int (*)(void))sym("cuCtxSynchronize", "cuCtxSynchronize");
  int dev; void *ctx, *s, *a, *b;
  CK(init(0)); CK(dget(&dev, 0)); CK(retain(&ctx, dev)); CK(setcur(ctx));
  int64_t shape[1] = {n}, strides[1] = {1};
  DLTensor t[4];
  TVMFFIAny args[4], res;
  for (int i = 0; i < nt; ++i) {
    unsigned long long p;
    CK(alloc(&p, (size_t)n * 4));
    CK(set32(p, 0x3f800000u, (size_t)n)); /* 1.0f */
    DLTensor ti = {(void*)(uintptr_t)p, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, shape, strides, 0};
    t[i] = ti;
    args[i].type_index = kTVMFFIDLTensorPtr; args[i].zero_padding = 0; args[i].v_ptr = &t[i];
  }
  CK(screate(&s, 1 /* CU_STREAM_NON_BLOCKING */));
  CK(ecreate(&a, 0)); CK(ecreate(&b, 0));
  void* h = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  char name[256];
  snprintf(name, sizeof name, "__tvm_ffi_%s", argv[3]);
  safe_call_t f = (safe_call_t)dlsym(h, name);
  if (!f) { fprintf(stderr, "no %s\n", name); return 2; }
  if (TVMFFIEnvSetStream(kDLCUDA, 0, s, NULL) != 0) return 2;
  double* per = malloc(sizeof(double) * (size_t)rounds);
  for (int r = -1; r < rounds; ++r) { /* one warm-up round, like tvmffi bench */
    CK(erecord(a, s));
    for (int64_t i = 0; i < calls; ++i) {
      res.type_index = kTVMFFINone; res.zero_padding = 0; res.v_int64 = 0;
      if (f(NULL, args, nt, &res) != 0) { fprintf(stderr, "the call raised\n"); return 2; }
    }
    CK(erecord(b, s));
    CK(esync(b));
    float ms;
    CK(elapsed(&ms, a, b));
    if (r >= 0) per[r] = ms * 1e6 / (double)calls;
  }
  CK(csync());
  qsort(per, (size_t)rounds, sizeof(double), cmp);
  printf("{\"median_ns\": %.3f, \"min_ns\": %.3f}\n", per[rounds / 2], per[0]);
  return 0;
}
"""


def loop(exe, pack, func, n, tensors, calls, rounds):
    import os

    driver = os.environ.get("TVMFFI_CUDA_DRIVER") or "libcuda.so.1"
    r = subprocess.run(
        [str(exe), driver, str(pack), func, str(n), str(tensors), str(calls), str(rounds)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        raise SystemExit(f"the event loop failed: {r.stderr.strip()}")
    return json.loads(r.stdout)["median_ns"]


def tvmffi_bench(pack, func, n, tensors, calls, rounds, extra):
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "bench", str(pack), func,
         *[f"float32[{n}]:ones@cuda"] * tensors,
         "--repeat", str(calls), "--rounds", str(rounds), "--json", *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"tvmffi bench failed: {r.stderr.strip()}")
    doc = json.loads(r.stdout)
    return doc["ns_per_call"]["median"], doc["host_ns_per_call"]["median"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pack", help="a built fixtures/cuda/pack.cu (default: build it)")
    ap.add_argument("--func", default="add_one", help="the function (float32 tensors only)")
    ap.add_argument("--tensors", type=int, default=2, help="its number of tensor arguments")
    ap.add_argument("--n", type=int, nargs="+", default=[1 << 16, 1 << 24])
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--tvmffi-flag", action="append", default=[], help="passed to tvmffi bench")
    a = ap.parse_args()

    import fixturebuild
    import gpu_pack

    # TVMFFI_CUDA_DRIVER (the tests' stand-in) is honoured, to try the script
    # without a GPU; its figures are no GPU's.
    why = gpu_pack.no_device(keep_driver=True)
    if why is not None:
        print(f"bench_gpu: no CUDA device: {why}")
        return 2
    with tempfile.TemporaryDirectory(prefix="tvmffi-bench-gpu-") as tmp:
        pack = Path(a.pack) if a.pack else gpu_pack.build(tmp)
        src = Path(tmp) / "gpu_event_loop.c"
        src.write_text(DRIVER)
        exe = Path(tmp) / "gpu_event_loop"
        rt = fixturebuild.our_runtime()
        cmd = [
            "gcc", "-O2", "-std=c11", f"-I{fixturebuild.our_include()}", str(src),
            f"-L{rt.parent}", "-ltvm_ffi", f"-Wl,-rpath,{rt.parent}", "-ldl", "-o", str(exe),
        ]  # fmt: skip
        subprocess.run(cmd, check=True)
        ok = True
        print(
            "| N (float32) | event loop ns/call | tvmffi bench ns/call | ratio | host launch ns | ok |"
        )
        print("|---|---|---|---|---|---|")
        for n in a.n:
            ref, got, host = [], [], []
            for _ in range(a.trials):  # alternate, so drift hits both
                ref.append(loop(exe, pack, a.func, n, a.tensors, a.calls, a.rounds))
                dev, h = tvmffi_bench(pack, a.func, n, a.tensors, a.calls, a.rounds, a.tvmffi_flag)
                got.append(dev)
                host.append(h)
            r, g = statistics.median(ref), statistics.median(got)
            ratio = g / r
            good = abs(ratio - 1) <= 0.05
            ok &= good
            print(
                f"| {n:,} | {r:,.0f} | {g:,.0f} | {ratio:.3f} | "
                f"{statistics.median(host):,.0f} | {'yes' if good else 'NO'} |"
            )
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""`tvmffi bench` against a plain C loop, in the same run.

Builds fixtures/call/kernels.c (add_int: a 2-argument scalar function) against
tvmffi's runtime, and a small C driver that dlopens the same library and calls
the exported symbol `__tvm_ffi_add_int` directly in a timed loop. Then it runs
`tvmffi bench LIB add_int 1 2` and the driver alternately, several times, with
the same round sizes, and compares the medians:

    pass when  tvmffi_median <= 1.5 * direct_median + 2 ns

The reference is the cheapest way C can call the function at all; what
tvmffi adds is TVMFFIFunctionCall's dispatch through the Function object.

Usage: python bench/bench_call.py [--calls N] [--rounds R] [--trials T]
Exit status 0 when the bound holds, 1 otherwise.
"""

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DRIVER = r"""
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <tvm/ffi/c_api.h>

typedef int (*safe_call_t)(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  int64_t calls = atoll(argv[2]);
  int rounds = atoi(argv[3]);
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  safe_call_t f = (safe_call_t)dlsym(h, "__tvm_ffi_add_int");
  if (!f) { fprintf(stderr, "no __tvm_ffi_add_int\n"); return 2; }
  TVMFFIAny args[2];
  args[0].type_index = kTVMFFIInt; args[0].zero_padding = 0; args[0].v_int64 = 1;
  args[1].type_index = kTVMFFIInt; args[1].zero_padding = 0; args[1].v_int64 = 2;
  int64_t check = 0;
  /* One warm-up round, like tvmffi bench, then the timed rounds. */
  for (int r = -1; r < rounds; ++r) {
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < calls; ++i) {
      TVMFFIAny res;
      res.type_index = kTVMFFINone;
      if (f(NULL, args, 2, &res) != 0) return 3;
      check += res.v_int64;
    }
    int64_t dt = now_ns() - t0;
    if (r >= 0) printf("%s%lld", r ? "," : "[", (long long)dt);
  }
  printf("]\n");
  /* The sum proves every call ran (and keeps the loop from being elided). */
  fprintf(stderr, "check %lld\n", (long long)check);
  return 0;
}
"""


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"command failed: {' '.join(map(str, cmd))}\n{r.stderr}")
    return r


def build(tmp):
    from tvmffi_cli.ffi import paths

    inc, lib = paths.include_dir(), paths.runtime_library()
    so = tmp / "libkernels.so"
    sh(
        [
            "gcc",
            "-std=c11",
            "-O2",
            "-shared",
            "-fPIC",
            f"-I{inc}",
            str(ROOT / "fixtures" / "call" / "kernels.c"),
            "-o",
            str(so),
            f"-L{lib.parent}",
            "-ltvm_ffi",
        ]
    )
    exe = tmp / "direct"
    (tmp / "direct.c").write_text(DRIVER)
    sh(
        [
            "gcc",
            "-std=c11",
            "-O2",
            f"-I{inc}",
            str(tmp / "direct.c"),
            "-o",
            str(exe),
            # --no-as-needed: load the runtime at start-up (nothing here calls it), so the
            # dlopened library finds its libtvm_ffi.so by soname, as in any host process.
            f"-L{lib.parent}",
            "-Wl,--no-as-needed",
            "-ltvm_ffi",
            f"-Wl,-rpath,{lib.parent}",
            "-ldl",
        ]
    )
    return so, exe


def run_direct(exe, so, calls, rounds):
    r = sh([str(exe), str(so), str(calls), str(rounds)])
    per_round = json.loads(r.stdout)
    expect = 3 * calls * (rounds + 1)
    if r.stderr.strip() != f"check {expect}":
        sys.exit(f"direct loop returned wrong sums: {r.stderr.strip()} (want {expect})")
    return statistics.median(ns / calls for ns in per_round)


def run_tvmffi(so, calls, rounds):
    r = sh(
        [
            sys.executable,
            "-m",
            "tvmffi_cli",
            "bench",
            str(so),
            "add_int",
            "1",
            "2",
            "--repeat",
            str(calls),
            "--rounds",
            str(rounds),
            "--json",
        ]
    )
    doc = json.loads(r.stdout)
    assert doc["calls"] == calls * rounds, doc
    return doc["ns_per_call"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2_000_000, help="calls per round")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument(
        "--trials",
        type=int,
        default=5,
        help="alternating runs of each side; the medians of all are compared",
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        so, exe = build(Path(d))
        direct, ours = [], []
        for _ in range(a.trials):
            direct.append(run_direct(exe, so, a.calls, a.rounds))
            ours.append(run_tvmffi(so, a.calls, a.rounds))
    d_med, t_med = statistics.median(direct), statistics.median(ours)
    bound = 1.5 * d_med + 2.0
    print(f"add_int(1, 2), {a.trials} alternating trials x {a.rounds} rounds x {a.calls:,} calls")
    print(
        f"  direct C loop calling __tvm_ffi_add_int: median {d_med:.2f} ns/call "
        f"(trials: {', '.join(f'{x:.2f}' for x in direct)})"
    )
    print(
        f"  tvmffi bench (C loop via TVMFFIFunctionCall): median {t_med:.2f} ns/call "
        f"(trials: {', '.join(f'{x:.2f}' for x in ours)})"
    )
    print(
        f"  ratio {t_med / d_med:.2f}x; bound 1.5 x {d_med:.2f} + 2 = {bound:.2f} ns -> "
        f"{'PASS' if t_med <= bound else 'FAIL'}"
    )
    return 0 if t_med <= bound else 1


if __name__ == "__main__":
    sys.exit(main())

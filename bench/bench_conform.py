"""Benchmark: `tvmffi conform` on a generated, well-behaved 300-function C library.

Generates C source (four kinds of functions, all with metadata getters, a
third with docs), builds it with gcc against our headers, runs the full check
set with `-j 2` (median of --repeat runs, wall time of the whole command),
once with `--json` and once with the people's table, alternating, and
reports milliseconds per function. Passes when the library conforms and both
costs are <= 5 ms per function (issue 12; it was 2.24 ms before the object,
global and thread probes were added).

    python bench/bench_conform.py [--functions 300] [--jobs 2] [--repeat 3] [--untyped] [--vs-shared]

--vs-shared also runs each repeat with TVMFFI_CONFORM_ZYGOTE=0 (functions
share a worker process, no probe child each): the reference the cost of
per-function isolation is printed against, measured in the same run.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIMIT_MS = 5.0

HEADER = r"""
#include <stdint.h>
#include <string.h>
#include <tvm/ffi/c_api.h>
#define EXPORT __attribute__((visibility("default")))
static int fail(const char* kind, const char* msg) {
  TVMFFIErrorSetRaisedFromCStr(kind, msg);
  return -1;
}
static int getter(const char* s, TVMFFIAny* result) {
  TVMFFIByteArray ba = {s, strlen(s)};
  return TVMFFIStringFromByteArray(&ba, result);
}
static int str_arg(const TVMFFIAny* a, const char** d, size_t* n) {
  if (a->type_index == kTVMFFISmallStr) { *d = a->v_bytes; *n = a->small_str_len; return 1; }
  if (a->type_index == kTVMFFIStr) {
    const TVMFFIByteArray* ba = (const TVMFFIByteArray*)((const char*)a->v_obj + sizeof(TVMFFIObject));
    *d = ba->data; *n = ba->size; return 1;
  }
  if (a->type_index == kTVMFFIRawStr) { *d = a->v_c_str; *n = strlen(a->v_c_str); return 1; }
  return 0;
}
"""

T = {k: '{\\"type\\":\\"%s\\"}' % k for k in ("int", "float", "ffi.String", "DLTensor*")}


def schema(ret, params):
    return (
        '{\\"type_schema\\":\\"{\\\\\\"type\\\\\\":\\\\\\"ffi.Function\\\\\\",'
        '\\\\\\"named_args\\\\\\":{\\\\\\"return\\\\\\":[%s],\\\\\\"params\\\\\\":[%s]}}\\"}'
        % (_esc(T[ret]), ",".join(_esc(T[p]) for p in params))
    )


def _esc(s):
    # One more level of JSON-in-a-C-string escaping for the inner schema.
    return s.replace('\\"', '\\\\\\"')


def function(i, untyped=False):
    kind = i % 4
    name = f"f{i:04d}"
    if kind == 0:  # (int, int) -> int
        body = f"""
  if (num_args != 2) return fail("TypeError", "{name} expects 2 arguments");
  if (args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt)
    return fail("TypeError", "{name} expects ints");
  memset(result, 0, sizeof *result);
  result->type_index = kTVMFFIInt;
  result->v_int64 = args[0].v_int64 * {i} + args[1].v_int64;
  return 0;"""
        meta = schema("int", ["int", "int"])
    elif kind == 1:  # (float) -> float
        body = f"""
  double x;
  if (num_args != 1) return fail("TypeError", "{name} expects 1 argument");
  if (args[0].type_index == kTVMFFIFloat) x = args[0].v_float64;
  else if (args[0].type_index == kTVMFFIInt || args[0].type_index == kTVMFFIBool) x = (double)args[0].v_int64;
  else return fail("TypeError", "{name} expects a float");
  memset(result, 0, sizeof *result);
  result->type_index = kTVMFFIFloat;
  result->v_float64 = x * {i}.5;
  return 0;"""
        meta = schema("float", ["float"])
    elif kind == 2:  # (str, int) -> str
        body = f"""
  const char* d; size_t n; char buf[64];
  if (num_args != 2) return fail("TypeError", "{name} expects 2 arguments");
  if (!str_arg(&args[0], &d, &n) || args[1].type_index != kTVMFFIInt)
    return fail("TypeError", "{name} expects (str, int)");
  if (n > 32) n = 32;
  memcpy(buf, d, n);
  memcpy(buf + n, "-{name}", 6);
  TVMFFIByteArray ba = {{buf, n + 6}};
  return TVMFFIStringFromByteArray(&ba, result);"""
        meta = schema("ffi.String", ["ffi.String", "int"])
    else:  # (DLTensor*) -> int
        body = f"""
  DLTensor* t; int64_t n = 1;
  if (num_args != 1) return fail("TypeError", "{name} expects 1 argument");
  if (args[0].type_index == kTVMFFIDLTensorPtr) t = (DLTensor*)args[0].v_ptr;
  else if (args[0].type_index == kTVMFFITensor) t = (DLTensor*)((char*)args[0].v_obj + sizeof(TVMFFIObject));
  else return fail("TypeError", "{name} expects a tensor");
  for (int k = 0; k < t->ndim; ++k) n *= t->shape[k];
  memset(result, 0, sizeof *result);
  result->type_index = kTVMFFIInt;
  result->v_int64 = n + {i};
  return 0;"""
        meta = schema("int", ["DLTensor*"])
    out = [
        f"EXPORT int __tvm_ffi_{name}(void* self, const TVMFFIAny* args, int32_t num_args, "
        f"TVMFFIAny* result) {{\n  (void)self;{body}\n}}"
    ]
    if not untyped:
        out.append(
            f"EXPORT int __tvm_ffi__metadata_{name}(void* s, const TVMFFIAny* a, "
            f"int32_t n, TVMFFIAny* r) {{\n  (void)s; (void)a; (void)n;\n"
            f'  return getter("{meta}", r);\n}}'
        )
    if i % 3 == 0:
        out.append(
            f"EXPORT int __tvm_ffi__doc_{name}(void* s, const TVMFFIAny* a, int32_t n, "
            f"TVMFFIAny* r) {{\n  (void)s; (void)a; (void)n;\n"
            f'  return getter("{name}: generated function {i}", r);\n}}'
        )
    return "\n".join(out)


def generate(n, untyped=False):
    """C source of n functions; untyped: without metadata getters (probed with
    object arguments instead of typed calls)."""
    return HEADER + "\n".join(function(i, untyped) for i in range(n)) + "\n"


def build(src, out):
    from tvmffi_cli.ffi import paths

    inc = paths.include_dir()
    libdir = paths.runtime_library().parent
    cmd = [
        "gcc",
        "-std=c11",
        "-O1",
        "-Wall",
        "-Wextra",
        "-Werror",
        "-shared",
        "-fPIC",
        f"-I{inc}",
        str(src),
        "-o",
        str(out),
        f"-L{libdir}",
        "-ltvm_ffi",
    ]
    subprocess.run(cmd, check=True)


def run_conform(lib, jobs, as_json=True, env=None):
    """(wall s, CPU s of the command and its workers, report, exit code)."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    cmd = [sys.executable, "-m", "tvmffi_cli", "conform", str(lib), "-j", str(jobs)]
    proc = subprocess.run(
        cmd + (["--json"] if as_json else []),
        capture_output=True,
        text=True,
        env=dict(os.environ, COLUMNS="100", **(env or {})),
    )
    dt = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"conform failed (exit {proc.returncode}): {proc.stderr}")
    return dt, cpu, json.loads(proc.stdout) if as_json else None, proc.returncode


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--functions", type=int, default=300)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--untyped", action="store_true", help="generate the functions without metadata getters"
    )
    ap.add_argument(
        "--vs-shared",
        action="store_true",
        help="reference: the same runs with TVMFFI_CONFORM_ZYGOTE=0 (no probe child per function)",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench_conform_") as d:
        src = Path(d) / "gen.c"
        lib = Path(d) / "libgen.so"
        src.write_text(generate(args.functions, args.untyped))
        build(src, lib)
        times = []
        cpus = []
        people = []
        shared = []
        shared_cpus = []
        doc = rc = None
        for _ in range(args.repeat):
            dt, cpu, doc, rc = run_conform(lib, args.jobs)
            times.append(dt)
            cpus.append(cpu)
            people.append(run_conform(lib, args.jobs, as_json=False)[0])
            if args.vs_shared:
                dt, cpu, _, _ = run_conform(lib, args.jobs, env={"TVMFFI_CONFORM_ZYGOTE": "0"})
                shared.append(dt)
                shared_cpus.append(cpu)
    med = statistics.median(times)
    per_fn = 1000.0 * med / args.functions
    per_fn_people = 1000.0 * statistics.median(people) / args.functions
    s = doc["summary"]
    found = len(doc["functions"])
    print(f"library: {args.functions} generated functions ({found} found), -j {args.jobs}")
    print(
        f"checks:  {s['pass']} pass, {s['fail']} fail, {s['error']} error, {s['skip']} skip; "
        f"passed={doc['passed']} (exit {rc})"
    )
    print(
        f"wall:    median {med:.2f} s of {args.repeat} runs "
        f"({', '.join(f'{t:.2f}' for t in times)})"
    )
    print(f"cost:    {per_fn:.2f} ms per function with --json (limit {LIMIT_MS:.0f} ms)")
    print(f"         {per_fn_people:.2f} ms per function with the people's table")
    # CPU time depends less on other load of the machine than wall time.
    print(
        f"cpu:     {1000.0 * statistics.median(cpus) / args.functions:.2f} ms per function "
        f"(median user+sys of the command and its workers, --json)"
    )
    if shared:
        ref = statistics.median(shared)
        print(
            f"shared:  {1000.0 * ref / args.functions:.2f} ms per function without a probe "
            f"child per function (TVMFFI_CONFORM_ZYGOTE=0), cpu "
            f"{1000.0 * statistics.median(shared_cpus) / args.functions:.2f}; isolation costs "
            f"x{med / ref:.2f} wall, x{statistics.median(cpus) / statistics.median(shared_cpus):.2f} cpu"
        )
    ok = (
        doc["passed"]
        and rc == 0
        and found == args.functions
        and s["fail"] == 0
        and s["error"] == 0
        and max(per_fn, per_fn_people) <= LIMIT_MS
    )
    if not ok:
        for r in doc["results"]:
            if r["status"] in ("fail", "error"):
                print(f"  {r['status']} {r['check']} {r['function']}: {r['message']}")
    print("RESULT:  " + ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

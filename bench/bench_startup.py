#!/usr/bin/env python3
"""Start-up cost of a command (issue 22), against references measured in the same run.

1. `tvmffi call LIB mul3 2 3 7` (the console script) / the official one-liner
   `python -c "import tvm_ffi; print(tvm_ffi.load_module(LIB).mul3(2, 3, 7))"`
   (median of --pairs alternating pairs; goal <= 0.5);
2. `tvmffi inspect LIB --json` (loaded) / the official load
   `python -c "import tvm_ffi; tvm_ffi.load_module(LIB)"`;
3. `tvmffi conform` per function on a large real library (apache-tvm's
   libtvm_compiler.so or tilelang's libtvm_runtime.so from the wheel cache,
   skipped when neither is there) / per function on the 300-function library
   of bench/bench_conform.py (goal <= 3x).

Each tvmffi ratio is printed for the fork start (the default) and, with
--exec-too, for the exec start (TVMFFI_WORKER_EXEC=1) as well.

    python bench/bench_startup.py [--pairs 10] [--exec-too] [--no-conform]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import bench_conform  # noqa: E402
import fixturebuild  # noqa: E402

PY = sys.executable


def wall(cmd, env=None):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"{cmd[:4]} failed ({r.returncode}): {r.stderr[-2000:]}")
    return dt, r


def pairs(a, b, n):
    """Medians of a and b over n alternating runs (one warm-up each), and of a/b."""
    wall(a[0], a[1])
    wall(b[0], b[1])
    ta, tb = [], []
    for i in range(n):
        for cmd, env, out in ((*a, ta), (*b, tb)) if i % 2 == 0 else ((*b, tb), (*a, ta)):
            out.append(wall(cmd, env)[0])
    return (
        statistics.median(ta),
        statistics.median(tb),
        statistics.median(ta) / statistics.median(tb),
    )


def envs(exec_too):
    base = dict(os.environ)
    base.pop("TVMFFI_RUNTIME", None)
    base.pop("TVMFFI_WORKER_EXEC", None)
    out = [("fork", base)]
    if exec_too:
        out.append(("exec", dict(base, TVMFFI_WORKER_EXEC="1")))
    return out


def tvmffi_cmd():
    """The console script users run (`python -m tvmffi_cli` where there is none)."""
    script = Path(PY).parent / "tvmffi"
    return [str(script)] if script.exists() else [PY, "-m", "tvmffi_cli"]


def bytecode_ready():
    """Compile tvmffi_cli's modules as `pip install` does: with
    PYTHONDONTWRITEBYTECODE set, a source checkout would otherwise compile
    every module on every run (the official package has its .pyc files).
    Prints where tvmffi_cli comes from and how it is installed."""
    import compileall
    import importlib.util

    spec = importlib.util.find_spec("tvmffi_cli")
    pkg = Path(spec.origin).parent
    compileall.compile_dir(str(pkg), quiet=1)
    editable = not str(pkg).startswith(sys.prefix)
    how = "editable (its import hook costs every module a little)" if editable else "installed"
    print(f"tvmffi_cli: {pkg} ({how}); python {sys.version.split()[0]}")


def official_lib():
    return fixturebuild.build("inspect/funcs.c", headers="ours")


def large_library():
    """A large real library from the wheel cache (no download here), or None."""
    import releases

    cache = releases.cache_dir()
    for dist, version, member in (
        ("apache-tvm", "0.27.0", "tvm/lib/libtvm_compiler.so"),
        ("tilelang", "0.1.15", "tilelang/lib/libtvm_runtime.so"),
    ):
        found = sorted(cache.glob(f"{dist.replace('-', '_')}-{version}-*.whl"))
        if found:
            try:
                return releases.extract(found[0], member)
            except Exception as e:  # a member moved: try the next one
                print(f"  ({dist} {version}: {e})")
    return None


def conform_ms_per_function(lib, env):
    t0 = time.perf_counter()
    r = subprocess.run(
        [PY, "-m", "tvmffi_cli", "conform", str(lib), "-j", "2", "--json"],
        capture_output=True,
        text=True,
        env=env,
    )
    dt = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(f"conform {lib} failed ({r.returncode}): {r.stderr[-2000:]}")
    doc = json.loads(r.stdout)
    # functions the library exports plus the globals it registers
    n = len(doc.get("functions") or []) + len(doc.get("globals") or []) or 1
    return dt * 1000 / n, n, dt


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--exec-too", action="store_true")
    ap.add_argument("--no-conform", action="store_true")
    args = ap.parse_args(argv)
    bytecode_ready()
    lib = str(official_lib())
    official_call = [PY, "-c", f"import tvm_ffi; print(tvm_ffi.load_module({lib!r}).mul3(2, 3, 7))"]
    official_load = [PY, "-c", f"import tvm_ffi; tvm_ffi.load_module({lib!r})"]
    base = envs(False)[0][1]
    ok = True
    for name, env in envs(args.exec_too):
        _, r = wall([*tvmffi_cmd(), "call", lib, "mul3", "2", "3", "7"], env)
        assert r.stdout.strip() == "42", r.stdout
        a, b, ratio = pairs(
            ([*tvmffi_cmd(), "call", lib, "mul3", "2", "3", "7"], env),
            (official_call, base),
            args.pairs,
        )
        print(
            f"call ({name}):    tvmffi {a * 1000:.0f} ms / official one-liner {b * 1000:.0f} ms "
            f"= {ratio:.2f} (goal <= 0.5, {args.pairs} pairs)"
        )
        ok &= ratio <= 0.5 or name != "fork"
        a, b, ratio = pairs(
            ([*tvmffi_cmd(), "inspect", lib, "--json"], env),
            (official_load, base),
            args.pairs,
        )
        print(
            f"inspect ({name}): tvmffi {a * 1000:.0f} ms / official load {b * 1000:.0f} ms "
            f"= {ratio:.2f} ({args.pairs} pairs)"
        )
    if args.no_conform:
        return 0 if ok else 1
    big = large_library()
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as d:
        src, small = Path(d) / "gen.c", Path(d) / "libgen.so"
        src.write_text(bench_conform.generate(300))
        bench_conform.build(src, small)
        for name, env in envs(args.exec_too):
            s_ms, s_n, s_dt = conform_ms_per_function(small, env)
            if big is None:
                print(
                    f"conform ({name}): no large real library in the wheel cache: skipped "
                    f"(300-function library: {s_ms:.2f} ms per function)"
                )
                continue
            b_ms, b_n, b_dt = conform_ms_per_function(big, env)
            print(
                f"conform ({name}): {Path(big).name} {b_ms:.2f} ms/function ({b_n} in {b_dt:.1f} s) "
                f"/ 300-function library {s_ms:.2f} ms/function ({s_dt:.1f} s) "
                f"= {b_ms / s_ms:.1f}x (goal <= 3x)"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Per function of the CUDA pack (fixtures/cuda/pack.cu): the official Python
package (tvm_ffi.load_module, PyTorch CUDA tensors) against `tvmffi call`
(the same inputs as .npy files placed with @cuda, results back with --out),
both against the expected values computed by PyTorch. Prints a Markdown
table; exit 0 when every row matches, 1 otherwise, 2 when PyTorch, the
official package or a GPU is missing (the reason printed).

Usage: python tools/gpu_compare.py PACK [--tvmffi-flag FLAG ...]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

RNG = np.random.default_rng(0)
X = RNG.random(1000, dtype=np.float32)
Y = RNG.random(1000, dtype=np.float32)
M = RNG.random((64, 33), dtype=np.float32)

#: function -> (arguments, {output: expected}); arrays go to the GPU, an
#: output is an argument index or "result".
CASES = {
    "add_one": ([X, np.zeros_like(X)], {1: X + 1}),
    "mul2": ([X.copy()], {0: 2 * X}),
    "saxpy": ([2.5, X, Y.copy()], {2: 2.5 * X + Y}),
    "scale_alloc": ([X, 3.0], {"result": 3 * X}),
    "row_sum": ([M, np.zeros(64, np.float32)], {1: M.sum(axis=1)}),
}


def official(pack, name, args):
    import torch
    import tvm_ffi

    mod = tvm_ffi.load_module(str(pack))
    targs = [torch.from_numpy(a.copy()).cuda() if isinstance(a, np.ndarray) else a for a in args]
    r = getattr(mod, name)(*targs)
    torch.cuda.synchronize()
    out = {i: t.cpu().numpy() for i, t in enumerate(targs) if isinstance(t, torch.Tensor)}
    if r is not None:
        out["result"] = torch.from_dlpack(r).cpu().numpy()
    return out


def ours(pack, name, args, flags, tmp):
    argv = []
    for i, a in enumerate(args):
        if isinstance(a, np.ndarray):
            p = Path(tmp) / f"{name}{i}.npy"
            np.save(p, a)
            argv.append(f"{p}@cuda")
        else:
            argv.append(repr(a))
    out = Path(tmp) / f"out-{name}"
    r = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "call", str(pack), name, *argv, "--out", str(out),
         "--force", "--json", *flags],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    if r.returncode != 0:
        line = (r.stderr.strip().splitlines() or ["?"])[0]
        raise RuntimeError(f"exit {r.returncode}: {line}")
    doc = json.loads(r.stdout)
    got = {}
    for f in doc.get("files", []):
        what = f["what"]
        got["result" if what == "result" else int(what[3:])] = np.load(f["path"])
    return got


def verdict(got, want):
    worst = 0.0
    for k, v in want.items():
        if k not in got:
            return f"no output {k}", None
        d = float(np.max(np.abs(got[k].astype(np.float64) - v))) if v.size else 0.0
        worst = max(worst, d)
    return ("ok" if worst <= 1e-4 else f"off by {worst:.3g}"), worst


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("--tvmffi-flag", action="append", default=[])
    a = ap.parse_args()
    try:
        import torch
        import tvm_ffi  # noqa: F401
    except ImportError as e:
        print(f"gpu_compare: {e} (the official package and PyTorch are needed)")
        return 2
    if not torch.cuda.is_available():
        print("gpu_compare: PyTorch sees no CUDA device")
        return 2
    ok = True
    print("| function | official + PyTorch | tvmffi call | official vs tvmffi |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="tvmffi-gpu-compare-") as tmp:
        for name, (args, want) in CASES.items():
            row = [name]
            outs = []
            for side in ("official", "tvmffi"):
                try:
                    if side == "official":
                        got = official(a.pack, name, args)
                    else:
                        got = ours(a.pack, name, args, a.tvmffi_flag, tmp)
                    text, _ = verdict(got, want)
                    outs.append(got)
                except Exception as e:  # a row per function whatever fails
                    text = f"FAILED: {type(e).__name__}: {str(e)[:120]}"
                    outs.append(None)
                row.append(text)
                ok &= text == "ok"
            if outs[0] is not None and outs[1] is not None:
                diffs = [
                    float(np.max(np.abs(outs[0][k] - outs[1][k]))) if outs[0][k].size else 0.0
                    for k in want
                    if k in outs[0] and k in outs[1]
                ]
                row.append(f"max |diff| {max(diffs, default=0.0):.3g}")
            else:
                row.append("-")
            print("| " + " | ".join(row) + " |")
    print(f"\n(device: {torch.cuda.get_device_name(0)}; pid {os.getpid()})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

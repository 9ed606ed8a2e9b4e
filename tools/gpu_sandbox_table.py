#!/usr/bin/env python3
"""The sandbox table for a CUDA call: `tvmffi call PACK scale_alloc
float32[64]:arange@cuda 3` (a function that cudaMallocs its result) as root
and as nobody, with namespaces and inside the wrapper that refuses them (a
default container, tests/unprivileged.py), sandboxed and with --no-sandbox.
Each cell: ok (and what the sandbox applied / missed) or the one-line error.
Markdown on stdout; exit 0 when every sandboxed cell is ok, 1 otherwise, 2
when a case cannot run here (not root, no setpriv: the reason printed).

Usage: python tools/gpu_sandbox_table.py PACK [--func F --arg A ...] [--tvmffi-flag FLAG ...]
(TVMFFI_CUDA_DRIVER=stand-in, PACK the stand-in kernels, --func scale2 --arg
float32[64]:arange@cuda tries the script without a GPU; the driver file must
then be readable by nobody.)
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import unprivileged  # noqa: E402

CONFIGS = [("root", False), ("root", True), ("nobody", False), ("nobody", True)]


def cell(r):
    if r.returncode != 0:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        return f"exit {r.returncode}: {(lines or ['?'])[0][:140]}"
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return "exit 0, no JSON"
    sb = doc.get("sandbox") or {}
    data = ((doc.get("result") or {}).get("data") or [None, None])[:2]
    what = f"ok {data}"
    if sb.get("enabled"):
        what += f"; applied {len(sb.get('applied', []))}"
        if sb.get("missing"):
            what += f", missing {', '.join(sb['missing'])}"
    return what


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pack")
    ap.add_argument("--func", default="scale_alloc")
    ap.add_argument("--arg", action="append", help="default: float32[64]:arange@cuda 3")
    ap.add_argument("--tvmffi-flag", action="append", default=[])
    a = ap.parse_args()
    why = unprivileged.unavailable("nobody")
    if why:
        print(f"gpu_sandbox_table: {why}")
        return 2
    base = tempfile.mkdtemp(prefix="tvmffi-gpu-sandbox-")
    os.chmod(base, 0o755)
    try:
        pack = unprivileged.shared_copy(a.pack, os.path.join(base, "lib"))
        call = a.arg or ["float32[64]:arange@cuda", "3"]
        args = ["call", pack, a.func, *call, "--json"]
        print("| user | namespaces | sandboxed | --no-sandbox |")
        print("|---|---|---|---|")
        ok = True
        for user, wrap in CONFIGS:
            row = [user, "refused (container)" if wrap else "allowed"]
            for extra in ([], ["--no-sandbox"]):
                home = os.path.join(base, f"home-{user}-{int(wrap)}-{len(extra)}")
                r = unprivileged.run(
                    *args, *a.tvmffi_flag, *extra, user=user, wrap=wrap, home=home, timeout=300
                )
                text = cell(r)
                row.append(text.replace("|", "/"))
                if not extra:
                    ok &= text.startswith("ok")
            print("| " + " | ".join(row) + " |")
        return 0 if ok else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

"""The CUDA pack of fixtures/cuda/pack.cu, built with nvcc against the official
headers (tests/test_gpu_device.py, tools/gpu_check.sh, bench/bench_gpu.py),
and whether this machine has a CUDA device at all."""

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACK_SOURCE = ROOT / "fixtures" / "cuda" / "pack.cu"


def nvcc():
    return shutil.which("nvcc") or next(
        (p for p in ("/usr/local/cuda/bin/nvcc",) if os.access(p, os.X_OK)), None
    )


@functools.cache
def no_device(keep_driver=False):
    """Why tvmffi cannot use a CUDA device here (None when it can): the one
    line tvmffi itself prints, asked in a fresh interpreter (CUDA must not be
    initialized in the test process, which forks workers). The real driver
    only, unless keep_driver (then TVMFFI_CUDA_DRIVER counts)."""
    env = {k: v for k, v in os.environ.items() if keep_driver or k != "TVMFFI_CUDA_DRIVER"}
    r = subprocess.run(
        [sys.executable, "-c", "from tvmffi_cli.ffi import cuda; print(cuda.context(0).name())"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    if r.returncode == 0:
        return None
    last = (r.stderr.strip().splitlines() or ["CUDA failed to start"])[-1]
    return last.split(": ", 1)[-1]


def compute_capability():
    """'90' for the first GPU (nvidia-smi), else '90' (H100/H200, what gpu_check targets)."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.split()
        return out[0].replace(".", "") if out else "90"
    except (OSError, subprocess.SubprocessError):
        return "90"


def build(out_dir, cc=None):
    """nvcc-build the pack into out_dir/pack.so against the official headers
    and runtime (apache-tvm-ffi); returns the path. Raises RuntimeError."""
    import fixturebuild

    exe = nvcc()
    if exe is None:
        raise RuntimeError("no nvcc here")
    inc, rt = fixturebuild.official_include(), fixturebuild.official_runtime()
    if inc is None or rt is None:
        raise RuntimeError("apache-tvm-ffi (the official headers) is not installed")
    cc = cc or compute_capability()
    out = Path(out_dir) / "pack.so"
    cmd = [
        exe, "-O2", "-std=c++17", "-shared", "-Xcompiler", "-fPIC",
        f"-gencode=arch=compute_{cc},code=sm_{cc}",
        f"-gencode=arch=compute_{cc},code=compute_{cc}",
        "-DTVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1", f"-I{inc}", str(PACK_SOURCE),
        f"-L{rt.parent}", "-ltvm_ffi", "-o", str(out),
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"nvcc failed:\n{' '.join(cmd)}\n{r.stderr}")
    return out

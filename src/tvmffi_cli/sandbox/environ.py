"""The worker's environment: an allow-list, never tvmffi's whole environment.

A library can print any variable it sees into a CI log, so the worker gets
only what the loader and GPU runtimes read (PATH, locale, LD_LIBRARY_PATH,
CUDA_*/NVIDIA_*/ROCm/HIP variables, TVM_FFI_*/TVMFFI_*), never a name that
looks like a credential, plus the names the user passes with --env. HOME and
TMPDIR point to the worker's scratch directory, so caches a library writes
under ~ land there (and are removed with it).

    worker_env(os.environ, scratch="/tmp/tvmffi-scratch-x", passthrough=("FOO",))
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import InputError

#: Passed through as they are.
ALLOWED = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TZ",
        "LD_LIBRARY_PATH",
        "GLIBC_TUNABLES",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
    }
)
#: Passed through by prefix: locale, GPU runtimes, tvm-ffi and tvmffi itself.
ALLOWED_PREFIXES = (
    "LC_",
    "CUDA_",
    "NVIDIA_",
    "CUDNN_",
    "NCCL_",
    "ROCM_",
    "ROCR_",
    "HIP_",
    "HSA_",
    "TVM_FFI_",
    "TVMFFI_",
)
#: Never passed unless named with --env: anything that looks like a secret.
_CREDENTIAL = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)KEY($|_)|APIKEY|AUTH|COOKIE|SESSION|PRIVATE|^AWS_",
    re.IGNORECASE,
)
#: The words of _CREDENTIAL: a name holding one may hold a secret value (every
#: AWS_* is kept from the worker, but AWS_REGION or AWS_CA_BUNDLE hold none).
_SECRET_WORD = re.compile(
    r"TOKEN|SECRET|PASSW|CREDENTIAL|(^|_)KEY($|_)|APIKEY|AUTH|COOKIE|SESSION|PRIVATE",
    re.IGNORECASE,
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def looks_secret(name: str) -> bool:
    return bool(_CREDENTIAL.search(name))


def may_hold_secret(name: str) -> bool:
    """The value of `name` may be a secret (a forked worker must not hold a copy)."""
    return bool(_SECRET_WORD.search(name))


def allowed(name: str) -> bool:
    """Whether `name` reaches the worker without --env."""
    if looks_secret(name):
        return False
    return name in ALLOWED or name.startswith(ALLOWED_PREFIXES)


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """--env values as given: NAME or NAME=VALUE; InputError for anything else."""
    out = []
    for n in names:
        if not _NAME.fullmatch(n.split("=", 1)[0]):
            raise InputError(f"--env {n!r}: expected a variable name (or NAME=VALUE)")
        out.append(n)
    return tuple(out)


def worker_env(
    environ: Mapping[str, str], scratch: str | None, passthrough: Iterable[str] = ()
) -> dict[str, str]:
    """The environment a worker starts with."""
    env = {k: v for k, v in environ.items() if allowed(k)}
    if scratch:
        env["HOME"] = scratch
        env["TMPDIR"] = scratch
    for item in passthrough:
        name, eq, value = item.partition("=")
        if eq:
            env[name] = value
        elif name in environ:
            env[name] = environ[name]
    return env


_STATIC_TLS_RESERVE = 65536


def child_env(
    runtime: str | os.PathLike[str] | None,
    env: dict[str, str] | None,
    scratch: str | None = None,
    passthrough: Iterable[str] = (),
) -> dict[str, str]:
    """The worker's whole environment: the allow-list, `env`, the runtime to
    load, and a larger static TLS reserve."""
    e = worker_env(os.environ, scratch, passthrough)
    if env:
        e.update(env)
    if runtime is not None:
        e["TVMFFI_RUNTIME"] = str(Path(runtime).resolve())
    # Libraries (and runtimes) built with initial-exec TLS need static TLS
    # space when dlopen'ed after start-up; glibc reserves little by default and
    # fails with "cannot allocate memory in static TLS block". Reserve more.
    if "glibc.rtld.optional_static_tls" not in e.get("GLIBC_TUNABLES", ""):
        tun = f"glibc.rtld.optional_static_tls={_STATIC_TLS_RESERVE}"
        e["GLIBC_TUNABLES"] = f"{e['GLIBC_TUNABLES']}:{tun}" if e.get("GLIBC_TUNABLES") else tun
    return e

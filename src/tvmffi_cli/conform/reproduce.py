"""Severity for this run and the reproducer command of each finding."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace

from . import registry
from .config import Config
from .results import Result

#: The default of --timeout and --threads (runner.py re-exports them).
DEFAULT_TIMEOUT = 10.0
DEFAULT_THREADS = 4


@dataclass(frozen=True)
class Options:
    """What to run, beyond the library path (the CLI fills it from its options
    and the configuration)."""

    select: frozenset[str] = frozenset()
    ignore: frozenset[str] = frozenset()
    timeout: float = DEFAULT_TIMEOUT
    jobs: int | None = None
    threads: int | None = None  # --threads N: thread-safety is then an error
    min_runtime: str | None = None
    runtime: str | None = None  # libtvm_ffi.so for the workers (None: ours)
    only: frozenset[str] = frozenset()  # --function: restrict to these functions
    strict: bool = False  # warnings fail the run too
    config: Config = field(default_factory=Config)
    runtime_arg: str | None = None  # --runtime as given ("official"), for reproducers
    max_runtime: str | None = None  # --max-runtime: the newest release it must run on
    #: GPU steps for functions with tensors: None = when the library looks like
    #: CUDA code (checks_gpu.looks_cuda); they run where a CUDA device is present
    gpu: bool | None = None
    sanitizer: str | None = None  # --sanitizer memcheck (conform/sanitizer.py)


def _finish(r: Result, path: str, o: Options) -> Result:
    """Severity for this run and the reproducer of a finding."""
    sev = None
    if r.check == "thread-safety" and o.threads or o.strict and r.severity == registry.WARNING:
        sev = registry.ERROR
    if sev is not None:
        r = replace(r, severity_override=sev)
    if r.bad:
        r = replace(r, reproduce=reproducer(r, path, o))
    return r


#: Checks whose finding one call shows again (`tvmffi call` exits 1).
CALL_CHECKS = ("no-crash", "no-hang", "tensor-bounds")


def reproducer(r: Result, path: str, o: Options) -> str:
    """A command that shows the finding again and exits 1: `tvmffi call` with
    the arguments of the call that crashed or hung when the command line can
    build them (`--guard` puts tensor data at guard pages, as the probe did),
    else `tvmffi conform` narrowed to the check and the function."""
    d = r.details or {}
    argv = d.get("call")
    if r.check in CALL_CHECKS and isinstance(argv, list) and r.function:
        cmd = ["tvmffi", "call", path, r.function, *map(str, argv)]
        args = d.get("args")
        if isinstance(args, list) and any(isinstance(a, dict) and "dtype" in a for a in args):
            cmd.append("--guard")
        if r.check == "no-hang":
            cmd += ["--timeout", f"{o.timeout:g}"]
        if o.runtime:
            cmd += ["--runtime", o.runtime_arg or o.runtime]
        return " ".join(shlex.quote(c) for c in cmd)
    cmd = ["tvmffi", "conform", path, "--select", r.check]
    if r.function is not None:
        cmd += ["--function", r.function]
    if r.check == "min-runtime" and o.min_runtime:
        cmd += ["--min-runtime", o.min_runtime]
    if r.check == "max-runtime" and o.max_runtime:
        cmd += ["--max-runtime", o.max_runtime]
    if r.check == "thread-safety":
        cmd += ["--threads", str(o.threads or DEFAULT_THREADS)]
    elif r.severity == registry.WARNING or (o.strict and r.severity_override):
        cmd += ["--strict"]
    if o.runtime:
        cmd += ["--runtime", o.runtime_arg or o.runtime]
    if o.timeout != DEFAULT_TIMEOUT:
        cmd += ["--timeout", f"{o.timeout:g}"]
    return " ".join(shlex.quote(c) for c in cmd)

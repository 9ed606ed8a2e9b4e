"""`conform --sanitizer memcheck` (parent side): each function whose CUDA
call succeeded in the probe is called once more, alone, in a sandboxed
worker started under NVIDIA's compute-sanitizer (the worker's interpreter
is a wrapper that execs `compute-sanitizer --tool memcheck ... python`);
the sanitizer's log decides the memcheck check. One worker per function, so
a report names its function (the sanitizer's start-up costs seconds).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys

from .checks_crash import FunctionFacts
from .checks_gpu import VALID, check_memcheck
from .messages import Memcheck, MemcheckRequest, MemcheckSkipped, decode_memcheck_reply
from .reproduce import Options
from .results import Result

#: Where compute-sanitizer is looked for besides PATH.
CANDIDATES = ("/usr/local/cuda/bin/compute-sanitizer",)
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


def find() -> str | None:
    exe = shutil.which("compute-sanitizer")
    if exe:
        return exe
    return next((c for c in CANDIDATES if os.access(c, os.X_OK)), None)


def run(
    path: str,
    o: Options,
    facts: dict[str, FunctionFacts],
    per_function: dict[str, list[Result]],
) -> dict[str, list[Result]]:
    exe = find()
    for name, f in sorted(facts.items()):
        dev = f.obs.get(VALID) or {}
        if f.gpu is None or VALID not in (f.plan or ()):
            continue  # device-call says why no CUDA call ran
        if dev.get("rc") != 0 or dev.get("cuda_error"):
            f.memcheck = Memcheck(skipped="the CUDA call did not succeed (see device-call)")
        elif exe is None:
            f.memcheck = Memcheck(skipped="compute-sanitizer is not installed (not on PATH)")
        else:
            f.memcheck = one(exe, path, f, o)
        per_function[name] = [
            check_memcheck(f) if r.check == "memcheck" else r for r in per_function.get(name, [])
        ]
    return per_function


def one(exe: str, path: str, f: FunctionFacts, o: Options) -> Memcheck:
    from ..binary.deps import load_read_paths
    from ..ffi.cuda import driver_read_paths
    from ..sandbox import process as sandbox
    from ..sandbox.files import private_dir

    logdir = private_dir("tvmffi-memcheck-")
    try:
        wrapper = os.path.join(logdir, "python")
        with open(wrapper, "w") as w:
            w.write(
                "#!/bin/sh\n"
                f'exec "{exe}" --tool memcheck --leak-check no --print-limit 20 '
                f'--log-file "{logdir}/memcheck.%p.log" "{sys.executable}" "$@"\n'
            )
        os.chmod(wrapper, 0o700)
        request = MemcheckRequest(path, f.name, tuple(sorted(f.getters)), f.is_global)
        try:
            with sandbox.Worker(
                python=wrapper,
                runtime=o.runtime,
                read_paths=[*load_read_paths(path), *driver_read_paths(), path],
                write_paths=[logdir],
            ) as worker:
                raw = worker.call(
                    "conform.memcheck_task", request.to_json(), max(60.0, 10 * o.timeout)
                )
            reply = decode_memcheck_reply(raw)
        except Exception as e:  # the sanitizer or the worker failed: say so, do not guess
            return Memcheck(error=f"compute-sanitizer run failed: {type(e).__name__}: {e}")
        if isinstance(reply, MemcheckSkipped):
            return Memcheck(skipped=reply.why)
        return read_logs(logdir)
    finally:
        sandbox.remove_tree(logdir)


def read_logs(logdir: str) -> Memcheck:
    """The errors the sanitizer's logs count (and the first, and the log's
    head), or an error when it wrote no summary."""
    from .. import text

    errors, lines, summaries = 0, [], 0
    for log in sorted(glob.glob(os.path.join(logdir, "memcheck.*.log"))):
        with open(log, errors="replace") as fh:
            body = fh.read(1 << 20)
        for m in _SUMMARY.finditer(body):
            summaries += 1
            errors += int(m.group(1))
        lines += [ln for ln in body.splitlines() if ln.strip("= ")]
    if not summaries:
        return Memcheck(
            error="compute-sanitizer wrote no ERROR SUMMARY (it may not run inside the "
            "sandbox here: try --no-sandbox)"
        )
    first = next((ln.strip("= ") for ln in lines if "Invalid" in ln or "Error" in ln), "")
    report, _ = text.cap("\n".join(lines[:40]), 4000)
    return Memcheck(errors=errors, first=text.one_line(first)[:300], report=report)

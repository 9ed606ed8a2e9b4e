"""`tvmffi bench LIB FUNC [ARGS...]`: time one function. Arguments are built
once in a child process; the runtime's C loop (tvmffi_rt_time_calls) makes the
calls, so the figures are the function's and the ABI's, not Python's."""

from __future__ import annotations

import os
from dataclasses import replace

from ..call import argv, engine, literals
from ..call.messages import Raised
from ..errors import EXIT_FAILED, InputError
from . import sandbox_opts
from .call import (
    SHARED_OPTIONS,
    STREAM_HELP,
    Shared,
    base_request,
    emit_json,
    lazy_command,
    note_runtime,
    run_in_child,
    with_runtime,
)
from .fastpath import echo
from .sandbox_opts import CONFINE_ROWS

BENCH_OPTIONS = {**SHARED_OPTIONS, "--repeat": True, "--rounds": True}

OPTION_HELP = [
    ("--repeat N", "Calls per timed round (default: calibrated to about 20 ms a round)."),
    ("--rounds R", "Timed rounds (default 10); min/median/max are over rounds."),
    ("--json", 'Print {"ns_per_call": {"min", "median", "max"}, "calls": N, ...}.'),
    ("--timeout SECONDS", "Kill the benchmark after this long (default 600)."),
    ("--owned-tensors", "Pass tensors as owned ffi.Tensor objects instead of DLTensor* views."),
    STREAM_HELP,
    (
        "--runtime auto|builtin|official|VERSION|PATH",
        (
            "Runtime that hosts the library (default auto; VERSION such as 0.1.12 fetches "
            "that official release). Only tvmffi's runtime times calls "
            "in C; under another one the loop runs through ctypes (slower, marked in the output)."
        ),
    ),
    *sandbox_opts.HELP_ROWS,
    ("-v, --verbose", "Show the backtrace of a raised error."),
    *CONFINE_ROWS,
    ("-h, --help", "Show this message and exit."),
]

MAX_ROUNDS = 100_000


def run(tokens: list[str]) -> int | None:
    """The command: its exit code, or None when help was asked for."""

    parsed = argv.parse_argv(list(tokens), BENCH_OPTIONS, cwd=os.getcwd())
    if parsed.help:
        return None
    assert parsed.func is not None  # parse_argv sets LIB and FUNC unless --help
    opts = parsed.options
    as_json = bool(opts.get("--json"))
    verbose = bool(opts.get("-v") or opts.get("--verbose"))
    job = base_request(parsed, Shared.of(parsed, timeout="600"))
    request = replace(
        job.request,
        repeat=_positive_int(opts.get("--repeat"), "--repeat", literals.INT64_MAX),
        rounds=_positive_int(opts.get("--rounds"), "--rounds", MAX_ROUNDS),
    )
    job = replace(job, request=request)
    reply = run_in_child(job, as_json, verbose, engine.run_bench)
    if isinstance(reply, int):
        return reply
    from ..render import call as render

    if isinstance(reply, Raised):
        if as_json:
            emit_json(with_runtime(engine.raised_json(reply, details=False), job), request.path)
        else:
            echo(render.raised_text(reply.error, verbose), err=True)
        return EXIT_FAILED
    if as_json:
        emit_json(with_runtime(engine.bench_json(reply, parsed.func, request.path), job))
    else:
        from ..render.common import fit_lines

        echo(fit_lines(render.bench_text(reply, parsed.func)))
        note_runtime(job, verbose)
    return 0


def _positive_int(text: str | None, flag: str, limit: int) -> int | None:
    if text is None:
        return None
    try:
        v: int = literals.parse_int(text)
    except InputError:
        raise InputError(f"{flag} {text}: not an integer") from None
    if not 1 <= v <= limit:
        raise InputError(f"{flag} {text}: must be between 1 and {limit}")
    return v


HELP = """Time FUNC of the library LIB: nanoseconds per call, timed in C.

    \b
    tvmffi bench LIB FUNC [ARGS...] [--repeat N] [--rounds R] [--json]
    tvmffi bench lib.so add_int 1 2
    tvmffi bench lib.so add_one --tensor float32[1024]:zeros --rounds 20

    ARGS use the syntax of `tvmffi call`. The function is called once first; if
    it raises, the error is reported (exit 1) and nothing is timed. With CUDA
    tensors (float32[N]:rand@cuda) the figure is device time from CUDA events
    on the call's stream, the host launch time apart (docs/gpu.md).
"""


__getattr__ = lazy_command(globals(), "bench", OPTION_HELP, run, HELP)

"""`tvmffi conform LIB`: check a library against the TVM-FFI ABI rules."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from ..text import JsonValue
from . import sandbox_opts

MAX_JOBS = 256


@click.command("conform")
@click.argument("library", type=click.Path(dir_okay=True, path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout.")
@click.option(
    "--junit-xml",
    "junit_xml",
    metavar="PATH",
    help="Also write a JUnit XML report (one testcase per check and function).",
)
@click.option(
    "--select",
    "select",
    multiple=True,
    metavar="IDS",
    help="Run only these check ids (comma-separated, repeatable).",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="IDS",
    help="Do not run these check ids (comma-separated, repeatable).",
)
@click.option(
    "--function",
    "functions",
    multiple=True,
    metavar="NAME",
    help="Check only these functions (exports or globals; repeatable).",
)
@click.option(
    "--config",
    "config_path",
    metavar="PATH",
    help="Settings and suppressions (default: [tool.tvmffi.conform] of the "
    "nearest pyproject.toml).",
)
@click.option(
    "--timeout",
    type=str,
    default=None,
    metavar="SECONDS",
    help="Seconds each probe call may take before it counts as a hang [10].",
)
@click.option(
    "-j",
    "--jobs",
    type=str,
    default=None,
    metavar="N",
    help="Worker processes probing in parallel (default: number of CPUs).",
)
@click.option(
    "--threads",
    type=str,
    default=None,
    metavar="N",
    help="Call each function from N threads at once; thread-safety then fails "
    "the run (without it, a 4-thread check only warns).",
)
@click.option(
    "--min-runtime",
    "min_runtime",
    metavar="VERSION",
    help="Fail when the library needs an apache-tvm-ffi runtime newer than VERSION.",
)
@click.option(
    "--max-runtime",
    "max_runtime",
    metavar="VERSION",
    help="Fail when the apache-tvm-ffi runtime of VERSION lacks a symbol the library "
    "imports (a C++ symbol a newer release dropped).",
)
@click.option(
    "--runtime",
    "runtimes",
    multiple=True,
    metavar="auto|builtin|official|VERSION|PATH",
    help="Run the checks with this libtvm_ffi.so (default auto; VERSION such as "
    "0.1.12 fetches that official release; checks that need tvmffi's instrumented "
    "runtime are skipped with the reason). Repeat it for one run per runtime and "
    "a table with a column per runtime.",
)
@click.option("--strict", is_flag=True, help="Warnings fail the run too.")
@click.option(
    "--sanitizer",
    type=click.Choice(["memcheck"]),
    default=None,
    help="Run each function's CUDA call once more under compute-sanitizer (the memcheck "
    "check; needs a CUDA device and compute-sanitizer, docs/gpu.md).",
)
@click.option("-v", "--verbose", is_flag=True, help="List skipped checks with their reasons.")
@click.option("--no-sandbox", "no_sandbox", is_flag=True, help=sandbox_opts.NO_SANDBOX_HELP)
@click.option(
    "--memory-limit", "memory_limit", metavar="SIZE", default=None, help=sandbox_opts.MEMORY_HELP
)
@sandbox_opts.confine_options
def command(
    library: str,
    as_json: bool,
    junit_xml: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    functions: tuple[str, ...],
    config_path: str | None,
    timeout: str | None,
    jobs: str | None,
    threads: str | None,
    min_runtime: str | None,
    max_runtime: str | None,
    runtimes: tuple[str, ...],
    strict: bool,
    sanitizer: str | None,
    verbose: bool,
    no_sandbox: bool,
    memory_limit: str | None,
    **confine: Any,
) -> int:
    """Check LIBRARY against the TVM-FFI ABI rules. Every check, why it
    matters and how to fix a finding: checks.md; what the sandbox confines:
    security.md. Both are installed with tvmffi, in:

    \b
    DOCS_DIR

    LIBRARY may be a wheel (.whl) or a directory: every TVM-FFI library in it
    is checked, and a wheel's Requires-Dist on apache-tvm-ffi against the
    releases they run on (declared-runtime).

    Exit 0 when no error-severity check fails, 1 when one does (library-load
    fails for a library that cannot be loaded, e.g. for a missing dependency),
    2 when what was given is wrong (not a shared library, a bad runtime,
    option value or configuration) or when no function could be exercised
    (verdict "not exercised": every valid call raised, e.g. a CUDA pack on a
    machine without a GPU).
    """
    from ..conform import config as conf
    from ..conform import registry, runner
    from ..conform.results import github_annotations
    from ..errors import InputError
    from .numbers import count, seconds

    cfg = conf.load(config_path)
    sel = frozenset(registry.parse_ids(select)) or cfg.select
    ign = frozenset(registry.parse_ids(ignore)) | cfg.ignore
    secs = (
        seconds(timeout, "--timeout")
        if timeout is not None
        else (cfg.timeout or runner.DEFAULT_TIMEOUT)
    )
    n_jobs = None if jobs is None else count(jobs, "--jobs", MAX_JOBS)
    n_threads = count(threads, "--threads", 256) if threads is not None else cfg.threads
    if n_threads is not None and not 2 <= n_threads <= 256:
        raise InputError(f"--threads {n_threads}: must be between 2 and 256")
    if min_runtime is not None:
        min_runtime = conf.check_version(min_runtime, "--min-runtime")
    min_runtime = min_runtime or cfg.min_runtime
    if max_runtime is not None:
        max_runtime = conf.check_version(max_runtime, "--max-runtime")
    max_runtime = max_runtime or cfg.max_runtime
    runtime = runtimes[-1] if runtimes else None
    if len(runtimes) > 1 and junit_xml:
        raise InputError("--junit-xml takes one --runtime (repeat the command per runtime)")

    def options_for(lib: str) -> runner.Options:
        rt = resolve_runtime(runtime, lib) if len(runtimes) <= 1 else None
        return runner.Options(
            sel,
            ign,
            secs,
            n_jobs,
            n_threads,
            min_runtime,
            rt,
            frozenset(functions),
            strict,
            cfg,
            runtime,
            max_runtime,
            sanitizer=sanitizer,
        )

    from . import wheel_input

    if wheel_input.is_bundle(library):
        if len(runtimes) > 1:
            raise InputError("a wheel or a directory takes one --runtime")
        sandbox_opts.apply(
            no_sandbox, memory_limit, cfg.sandbox.under(sandbox_opts.confine_given(**confine))
        )
        declared = "declared-runtime" in registry.selected(sel, ign)
        return wheel_input.conform(library, options_for, declared, as_json, junit_xml, verbose)
    opts = options_for(library)
    sandbox_opts.apply(
        no_sandbox, memory_limit, cfg.sandbox.under(sandbox_opts.confine_given(**confine))
    )
    if len(runtimes) > 1:
        return _matrix(library, list(runtimes), opts, as_json)

    progress = None
    bar = None
    if not as_json and sys.stderr.isatty() and not os.environ.get("CI"):
        bar = _ProgressBar()
        progress = bar.update
    try:
        report = runner.run(library, progress=progress, options=opts)
    finally:
        if bar is not None:
            bar.close()

    if junit_xml:
        from ..conform import junit

        junit.write(report, junit_xml)
    if as_json:
        from . import jsonout

        doc = report.to_json()
        errors: list[JsonValue] = [
            {"check": r.check, "function": r.function, "message": r.message}
            for r in report.results
            if r.status == "error"
        ]
        jsonout.emit(
            doc, library=library, runtime=sandbox_opts.runtime_json(runtime, library), errors=errors
        )
    else:
        from ..render.common import make_console
        from ..render.conform import render

        render(report, make_console(), verbose=verbose)
        sandbox_opts.report(verbose)
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(report):
            # Workflow commands are read from stdout; with --json keep stdout pure JSON.
            print(line, file=sys.stderr if as_json else sys.stdout)
    return report.exit_code()


def _docs_dir() -> str:
    from pathlib import Path

    # The folder of conform/registry.py's DOCS, without importing the checks
    # for --help; the folder, not the file: a path cannot be broken to fit.
    return str(Path(__file__).resolve().parents[1] / "docs") + "/"


command.help = (command.help or "").replace("DOCS_DIR", _docs_dir())


def _matrix(library: str, runtimes: list[str], opts: Any, as_json: bool) -> int:
    """One run per --runtime, one report with a column per runtime."""
    from ..conform.matrix import run_matrix

    m = run_matrix(library, runtimes, opts)
    if as_json:
        from . import jsonout

        # each report is the document one run prints
        runs: list[JsonValue] = [
            {
                **r.to_json(),
                "report": jsonout.contract(
                    r.report.to_json(), library=library, runtime=r.choice.to_json()
                ),
            }
            for r in m.runs
        ]
        jsonout.emit({**m.to_json(), "runtimes": runs}, library=library)
    else:
        from ..render import matrix
        from ..render.common import make_console

        matrix.render(
            make_console(),
            f"tvmffi conform {m.library}",
            m.columns(),
            m.rows(),
            [r.report.passed for r in m.runs],
            [f"{r.choice.label()}: {n}" for r in m.runs for n in r.choice.notes()],
        )
        for r in m.runs:
            click.echo(f"{r.choice.label()}: {r.report.summary_line()}")
    return m.exit_code()


def resolve_runtime(value: str | None, library: str | None = None) -> str | None:
    """--runtime auto|builtin|official|PATH, resolved by ffi.hosts (auto: the
    builtin runtime unless it lacks a runtime symbol the library imports):
    None for tvmffi's own runtime, else the path of the libtvm_ffi.so."""
    from ..ffi.hosts import choose_runtime

    if library is not None and not os.path.isfile(library):
        library = None  # the run reports the missing file itself
    choice = choose_runtime(value, library)
    return None if choice.kind == "builtin" else choice.path


#: Below this many functions the run is short: no progress bar.
PROGRESS_MIN = 10


class _ProgressBar:
    """A rich progress bar on stderr, created on the first update of a long
    run (static checks alone, or a few functions, never show one)."""

    def __init__(self) -> None:
        self._p: Any = None
        self._task: Any = None

    def update(self, done: int, total: int, name: str) -> None:
        if total < PROGRESS_MIN:
            return
        if self._p is None:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
            )

            from ..render.common import make_console

            self._p = Progress(
                TextColumn("probing"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.description}"),
                console=make_console(stderr=True),
                transient=True,
            )
            self._p.start()
            self._task = self._p.add_task("", total=total)
        from .. import text

        self._p.update(self._task, completed=done, description=text.one_line(name))

    def close(self) -> None:
        if self._p is not None:
            self._p.stop()

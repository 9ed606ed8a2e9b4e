"""`tvmffi inspect`: what a library exports, embeds and imports.

The engine is tvmffi_cli.inspect.engine; this module holds the click command
and the click-free fast path the entry point uses for the plain forms.
`--static` never runs any code of the library.

Exit codes: 0 fully understood; 1 read but something in it is malformed (or
loading it failed, crashed or hung: a missing dependency such as libcuda.so.1);
2 what was given is wrong: cannot be read as a library, a program rather than
a shared library, a bad runtime or option value (InputError/FormatError,
reported by the CLI).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..inspect.engine import run as run_report

if TYPE_CHECKING:
    from ..inspect.report import Report


def emit(rep: Report, as_json: bool, path: str) -> int:
    """Print the report and return the exit code (0, or 1 with one stderr line)."""
    import sys

    if as_json:
        from ..inspect.report import as_json as json_of
        from . import jsonout

        # `path` stays for existing readers; `library` is the contract's name.
        doc = json_of(rep)
        assert isinstance(doc, dict)
        jsonout.emit(doc, library=rep["path"], runtime=json_of(rep.get("runtime")))
    else:
        from .. import text
        from ..render.inspect import render

        rep = text.terminal_clean(rep)  # the same document, its strings made inert
        render(rep)
        if rep.get("mode") == "loaded":
            from . import sandbox_opts

            sandbox_opts.report(False)
    if rep["errors"]:
        first = rep["errors"][0]
        more = len(rep["errors"]) - 1
        sys.stdout.flush()
        from .. import text

        sys.stderr.write(
            f"tvmffi: error: {path}: {text.one_line(str(first['message']))}"
            + (f" (and {more} more problem{'s' if more > 1 else ''})" if more else "")
            + "\n"
        )
        return 1
    return 0


def run(argv: list[str]) -> int | None:
    """`inspect` without click (cli/fastpath.py): handles the plain forms (PATH
    with --static/--json/--timeout S/--runtime P/--no-sandbox/--memory-limit
    SIZE) and returns the exit code, or None for anything else (e.g. --help)
    so the caller falls back to the click command."""
    static = as_json = no_sandbox = verify_range = False
    valued: dict[str, str] = {}  # --timeout, --runtime, --memory-limit: their text
    paths: list[str] = []
    it = iter(argv)
    for a in it:
        if a == "--static":
            static = True
        elif a == "--json":
            as_json = True
        elif a == "--no-sandbox":
            no_sandbox = True
        elif a == "--verify-range":
            verify_range = True
        elif a in ("--timeout", "--runtime", "--memory-limit"):
            v = next(it, None)
            if v is None:
                return None
            valued[a] = v
        elif a.startswith("-") and a != "-":
            return None
        else:
            paths.append(a)
    if len(paths) != 1:
        return None
    if static:
        import gc

        # A static read makes ~5 objects per exported function, freed by
        # reference counting, and the process then exits: the ~80 cyclic
        # collections of a 200k-symbol library only cost time (a tenth of it).
        gc.disable()
    from .numbers import seconds

    timeout = seconds(valued.get("--timeout", 30.0), "--timeout")
    runtime = valued.get("--runtime")
    memory_limit = valued.get("--memory-limit")
    if no_sandbox or memory_limit is not None:
        from . import sandbox_opts

        sandbox_opts.apply(no_sandbox, memory_limit)
    from . import wheel_input

    _check_verify(verify_range, static, wheel_input.is_bundle(paths[0]))
    if wheel_input.is_bundle(paths[0]):
        return wheel_input.inspect(paths[0], static, as_json, timeout, runtime)
    rep = run_report(
        paths[0], static=static, timeout=timeout, runtime=runtime, verify_range=verify_range
    )
    return emit(rep, as_json, paths[0])


def _check_verify(verify_range: bool, static: bool, bundle: bool) -> None:
    from ..errors import InputError

    if verify_range and static:
        raise InputError(
            "--static never loads the library and --verify-range loads it on every "
            "release of its range: give one of them"
        )
    if verify_range and bundle:
        raise InputError(
            "--verify-range takes one library; for a wheel, `tvmffi conform WHEEL "
            "--select declared-runtime` loads its libraries on the releases it admits"
        )


def fast_main(argv: list[str]) -> int | None:
    """run(argv) with the CLI's one-line errors and exit codes."""
    from . import fastpath

    return fastpath.run(run, argv)


def _make_command() -> Any:
    import click

    from . import sandbox_opts

    @click.command("inspect")
    @click.argument("path", type=click.Path(dir_okay=True))
    @click.option(
        "--static",
        "static",
        is_flag=True,
        help="Read the file only; never load or run any of its code.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
    @sandbox_opts.load_timeout()
    @sandbox_opts.runtime()
    @sandbox_opts.verify_range()
    @click.option("--no-sandbox", "no_sandbox", is_flag=True, help=sandbox_opts.NO_SANDBOX_HELP)
    @click.option(
        "--memory-limit",
        "memory_limit",
        metavar="SIZE",
        default=None,
        help=sandbox_opts.MEMORY_HELP,
    )
    @sandbox_opts.confine_options
    def command(
        path: str,
        static: bool,
        as_json: bool,
        timeout: str,
        runtime: str | None,
        verify_range: bool,
        no_sandbox: bool,
        memory_limit: str | None,
        **confine: Any,
    ) -> int:
        """Show what a library exports, embeds and imports.

        PATH may be a wheel (.whl) or a directory: every TVM-FFI library in it
        is inspected, with the libraries it ships next to it.

        Exit 0 when the file was fully understood, 1 when it was read but
        something in it is malformed or loading it failed or crashed (a
        missing dependency such as libcuda.so.1; results are still printed),
        2 when what was given is wrong (not a shared library, bad runtime or
        option value).
        """
        from .numbers import seconds

        secs = seconds(timeout, "--timeout")
        sandbox_opts.apply(no_sandbox, memory_limit, **confine)
        from . import wheel_input

        _check_verify(verify_range, static, wheel_input.is_bundle(path))
        if wheel_input.is_bundle(path):
            return wheel_input.inspect(path, static, as_json, secs, runtime)
        rep = run_report(
            path, static=static, timeout=secs, runtime=runtime, verify_range=verify_range
        )
        return emit(rep, as_json, path)

    return command


def __getattr__(name: str) -> Any:
    # The click command is built on first use, so importing this module (the
    # fast path, tests) does not import click.
    if name == "command":
        cmd = _make_command()
        globals()["command"] = cmd
        return cmd
    raise AttributeError(name)

"""Command-line entry point: runs the click application (app.py) and turns the
project's errors into one stderr line and an exit code.

`tvmffi inspect`, `call` and `bench` in their plain forms skip click entirely
(cli/fastpath.py): importing click alone costs about twice a bare interpreter
start, inspect --static has to start within 3x of `python3 -c pass`, and
`tvmffi call` within half of the official one-liner.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ..errors import EXIT_USAGE

# Options of the whole program, accepted before or after the subcommand
# (`tvmffi --debug call ...` and `tvmffi call ... --debug`): main moves them in
# front, where the click group reads them. Not after "--", and not as the value
# of an option that takes any text.
GLOBAL_FLAGS = ("--debug", "-q", "--quiet")
_TEXT_VALUED = ("--str", "--bytes", "--runtime", "--out", "--junit-xml", "--select", "--ignore")


def hoist_global_flags(argv: list[str]) -> tuple[list[str], list[str]]:
    """(global flags found, argv with them moved to the front)."""
    found: list[str] = []
    rest: list[str] = []
    for i, a in enumerate(argv):
        if a == "--":
            rest += argv[i:]
            break
        if a in GLOBAL_FLAGS and not (rest and rest[-1] in _TEXT_VALUED):
            found.append(a)
        else:
            rest.append(a)
    return found, found + rest


# Commands whose module has run(argv) -> exit code | None (None: let click
# handle it, e.g. --help).
_FAST = ("inspect", "call", "bench")


def _debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("TVMFFI_DEBUG") == "1"


def main(argv: list[str] | None = None) -> Any:
    from . import jsonout  # stdlib only: cheap on the inspect fast path

    jsonout.STARTED = time.perf_counter()  # the elapsed_s of every --json
    # Run as the program (not called with arguments, as tests do): the
    # process may end without the interpreter's teardown.
    whole_process = argv is None
    if whole_process:
        from .fastpath import on_sigterm

        on_sigterm()
    argv = list(sys.argv[1:] if argv is None else argv)
    flags, argv = hoist_global_flags(argv)
    if "-q" in flags or "--quiet" in flags:
        # Quiet: the normal output goes nowhere; one-line errors still reach
        # stderr and the exit code tells the result.
        sys.stdout = open(os.devnull, "w")  # lives as long as the process
    if "--debug" in flags:
        os.environ["TVMFFI_DEBUG"] = "1"
    cmd = argv[len(flags) :]
    if not cmd and not os.environ.get("_TVMFFI_COMPLETE"):
        # `tvmffi` alone asks what there is, as `pip` alone does: a short
        # usage on stdout, exit 0 (`tvmffi --help` has the whole help).
        # (Shell completion also runs it alone, asking click for a script.)
        from .app import short_usage

        sys.stdout.write(short_usage())
        sys.stdout.flush()
        sys.exit(0)
    if cmd[:1] and cmd[0] in _FAST:
        import gc
        import importlib

        # A command of one process lifetime: the collector's passes over the
        # objects of every import cost a twentieth of a `tvmffi call`, and
        # what the command makes is freed by reference counting (a forked
        # worker turns collection back on).
        gc.disable()

        from . import fastpath

        mod = importlib.import_module(f"tvmffi_cli.cli.{cmd[0]}")
        rc = fastpath.run(mod.run, cmd[1:], cmd[0])
        if rc is not None:
            if whole_process:
                fastpath.exit_now(rc)
            sys.exit(rc)
    _run_click(argv)


def _run_click(argv: list[str]) -> Any:
    import click

    from . import fastpath
    from .app import cli

    debug = _debug_requested(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    try:
        rv = cli.main(args=argv, prog_name="tvmffi", standalone_mode=False)
    except click.exceptions.Abort:
        from .fastpath import ABORTED

        click.echo(ABORTED, err=True)
        sys.exit(EXIT_USAGE)
    except click.NoSuchOption as e:
        # The line of every unknown option, whichever parser met it.
        from .fastpath import unknown_option_line

        known: list[str] = []
        if e.ctx is not None:
            for p in e.ctx.command.get_params(e.ctx):
                known += [*p.opts, *p.secondary_opts]
        import difflib

        close = difflib.get_close_matches(e.option_name, known, n=1)
        where = e.ctx.command_path[len("tvmffi") :].strip() if e.ctx is not None else ""
        line = unknown_option_line(where, e.option_name, close[0] if close else None)
        click.echo(line, err=True)
        sys.exit(EXIT_USAGE)
    except click.UsageError as e:
        # One line, as for every other input error (click's own form adds the
        # usage and a hint on three more lines).
        where = e.ctx.command_path if e.ctx is not None else "tvmffi"
        click.echo(
            f"{where}: error: {e.format_message().rstrip('.')} (see {where} --help)", err=True
        )
        sys.exit(EXIT_USAGE)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except fastpath.Terminated:
        fastpath.end_terminated()
    except Exception as e:  # ours (TvmffiError) or a bug in tvmffi: one line unless --debug
        if debug:
            import traceback

            traceback.print_exc()
        from .fastpath import error_line

        line, code = error_line(e, command)
        click.echo(line, err=True)
        sys.exit(code)
    sys.exit(rv if isinstance(rv, int) else 0)

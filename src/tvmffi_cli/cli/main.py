"""Command-line entry point: runs the click application (app.py) and turns the
project's errors into one stderr line and an exit code.

`tvmffi inspect` in its plain forms skips click entirely: importing click alone
costs about twice a bare interpreter start, and inspect --static has to start
within 3x of `python3 -c pass`.
"""

import os
import sys

from ..errors import EXIT_INTERNAL, EXIT_USAGE, TvmffiError


def _debug_requested(argv):
    return "--debug" in argv or os.environ.get("TVMFFI_DEBUG") == "1"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["inspect"]:
        from .inspect import fast_main

        rc = fast_main(argv[1:])
        if rc is not None:
            sys.exit(rc)
    _run_click(argv)


def _run_click(argv):
    import click

    from .app import cli

    debug = _debug_requested(argv)
    try:
        rv = cli.main(args=argv, prog_name="tvmffi", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("tvmffi: aborted", err=True)
        sys.exit(EXIT_USAGE)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except TvmffiError as e:
        if debug:
            import traceback

            traceback.print_exc()
        click.echo(f"tvmffi: error: {e}", err=True)
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as e:  # a bug in tvmffi: one line unless --debug
        if debug:
            import traceback

            traceback.print_exc()
        click.echo(f"tvmffi: internal error: {type(e).__name__}: {e} (rerun with --debug)",
                   err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)

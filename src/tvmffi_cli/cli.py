"""Command-line entry point. Commands live in tvmffi_cli.commands.<name> and are
imported only when run, so `tvmffi inspect --static` does not pay for the others."""

import importlib
import os
import sys

import click

from . import __version__
from .errors import EXIT_INTERNAL, EXIT_USAGE, TvmffiError

# name -> (module under tvmffi_cli.commands, one-line help shown by --help)
COMMANDS = {
    "inspect": ("inspect", "Show what a library exports, embeds and imports."),
    "call": ("call", "Call one function of a library with typed arguments."),
    "bench": ("bench", "Time one function of a library (timing loop in C)."),
    "conform": ("conform", "Check a library against the TVM-FFI ABI rules."),
    "config": ("config", "Print paths and flags to build against our runtime."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        mod = importlib.import_module(f"tvmffi_cli.commands.{entry[0]}")
        return mod.command

    def format_commands(self, ctx, formatter):
        # Help text without importing every command module.
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="tvmffi")
@click.option("--debug", is_flag=True, help="Show Python tracebacks on errors.")
@click.pass_context
def cli(ctx, debug):
    """tvmffi: a toolkit for libraries that speak the TVM-FFI stable C ABI.

    Exit codes: 0 success; 1 the checked thing failed (call raised, conformance
    failed, file malformed); 2 usage or input error; 3 internal error.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def _debug_requested(argv):
    return "--debug" in argv or os.environ.get("TVMFFI_DEBUG") == "1"


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
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
        click.echo(f"tvmffi: internal error: {type(e).__name__}: {e} (rerun with --debug)", err=True)
        sys.exit(EXIT_INTERNAL)
    sys.exit(rv if isinstance(rv, int) else 0)

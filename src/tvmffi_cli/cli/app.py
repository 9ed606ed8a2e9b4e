"""The click application. Commands live in tvmffi_cli.cli.<name> and are
imported only when run, so one command does not pay for the others."""

from __future__ import annotations

import importlib
from typing import Any

import click

from .. import __version__

# name -> (module under tvmffi_cli.cli, one-line help shown by --help)
COMMANDS = {
    "inspect": ("inspect", "Show what a library exports, embeds and imports."),
    "call": ("call", "Call one function of a library with typed arguments."),
    "bench": ("bench", "Time one function of a library (timing loop in C)."),
    "conform": ("conform", "Check a library against the TVM-FFI ABI rules."),
    "config": ("config", "Print paths and flags to build against our runtime."),
    "stubs": ("stubs", "Write a typed .pyi stub of a library."),
    "diff": ("diff", "Is a new build compatible with an old one?"),
    "extract": ("extract", "Write embedded modules and GPU binaries to files."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, name: str) -> Any:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        mod = importlib.import_module(f"tvmffi_cli.cli.{entry[0]}")
        return mod.command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        # Help text without importing every command module.
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="tvmffi")
@click.option(
    "--debug", is_flag=True, help="Show Python tracebacks on errors (also after the subcommand)."
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    help="Print nothing on stdout; errors still go to stderr and the exit code "
    "tells the result (also after the subcommand).",
)
@click.pass_context
def cli(ctx: Any, debug: bool, quiet: bool) -> None:
    """tvmffi: a toolkit for libraries that speak the TVM-FFI stable C ABI.

    Exit codes: 0 success; 1 the checked thing failed (call raised, conformance
    failed, file malformed); 2 what you gave is wrong (bad flag or value, not a
    library, wrong format, bad runtime path); 3 internal error.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    ctx.obj["quiet"] = quiet  # applied by main (stdout is already /dev/null)


def short_usage() -> str:
    """What `tvmffi` with no arguments prints: the commands, one line each."""
    width = max(len(n) for n in COMMANDS)
    rows = "".join(f"  {n:<{width}}  {h}\n" for n, (_, h) in COMMANDS.items())
    return (
        "usage: tvmffi [-V] [-q] [--debug] COMMAND [ARGS]...\n\n"
        f"commands:\n{rows}\n"
        "`tvmffi COMMAND --help` shows a command's options; `tvmffi --help` the rest.\n"
    )

"""`tvmffi stubs LIB`: a typed .pyi of the library (engine: tvmffi_cli.stubs)."""

from __future__ import annotations

import dataclasses
import sys

import click

from .. import text
from . import sandbox_opts


@click.command("stubs")
@click.argument("path", type=click.Path(dir_okay=True))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the stub to this file (default: standard output); for a wheel or a "
    "directory, a directory that gets one stub per library.",
)
@click.option(
    "--static", is_flag=True, help="Read the file only (exports, untyped); never load the library."
)
@click.option(
    "--check",
    "check_file",
    type=click.Path(),
    default=None,
    help="Exit 1 when FILE differs from the stub that would be written, 0 when equal.",
)
@sandbox_opts.load_timeout("timeout_text")
@sandbox_opts.runtime()
@sandbox_opts.confinement()
def command(
    path: str,
    output: str | None,
    static: bool,
    check_file: str | None,
    timeout_text: str,
    runtime: str | None,
    no_sandbox: bool,
    memory_limit: str | None,
) -> int:
    """Write a .pyi stub of a library's exports, globals and object types.

    PATH may be a wheel (.whl) or a directory of libraries: one stub per
    TVM-FFI library in it. Types come from the type schemas in the library's metadata (loaded in a
    child process unless --static). Exit 0 on success (or --check: equal),
    1 when --check finds a difference or loading failed, 2 on bad input.
    """
    from ..stubs import check, generate, write
    from .numbers import seconds

    timeout = seconds(timeout_text, "--timeout")
    sandbox_opts.apply(no_sandbox, memory_limit)
    from . import wheel_input

    if wheel_input.is_bundle(path):
        if check_file is not None:
            from ..errors import InputError

            raise InputError("--check compares one library's stub; give a library, not a wheel")
        return wheel_input.stubs(path, static, timeout, runtime, output)

    r = generate(path, static=static, timeout=timeout, runtime=runtime)
    # A docstring line of library text must not start a workflow command when
    # the stub is printed in a CI log (the docstring's value is unchanged).
    r = dataclasses.replace(r, text=text.no_commands(r.text))
    if check_file is not None:
        c = check(r, check_file)
        if c.up_to_date:
            click.echo(f"{check_file} is up to date", err=True)
            return 0
        if c.diff:
            sys.stdout.write(c.diff)
        click.echo(
            f"tvmffi: {check_file} is out of date ({c.reason}); regenerate it with "
            f"tvmffi stubs {path} -o {check_file}",
            err=True,
        )
        return 1
    if output is None:
        sys.stdout.write(r.text)
    else:
        try:
            write(r, output)
        except OSError as e:
            from ..errors import InputError

            raise InputError(f"{output}: cannot write ({e.strerror or e})") from None
        from ..render.tools import render_stub_summary

        render_stub_summary(r, output)
    return 0

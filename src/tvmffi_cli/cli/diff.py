"""`tvmffi diff OLD NEW`: compatibility of two builds (engine: tvmffi_cli.diff)."""

from __future__ import annotations

import click

from . import sandbox_opts


@click.command("diff")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (schemas/diff).")
@click.option(
    "--static", is_flag=True, help="Compare the files only (exports, modules, kernels, imports)."
)
@click.option(
    "--symbols-range",
    is_flag=True,
    help="Compare the runtime ranges by symbols only: do not load NEW (and OLD) on "
    "each release of OLD's range (the default, which fetches runtimes not at hand).",
)
@click.option(
    "--verify-range",
    is_flag=True,
    help="The default (the runtime range checked by loading); kept for scripts.",
)
@sandbox_opts.load_timeout("timeout_text", "each library")
@sandbox_opts.runtime("the libraries")
@sandbox_opts.confinement()
@click.option(
    "--suppress",
    "suppress_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File of accepted changes, one `KIND [SUBJECT]` glob per line; they are "
    "listed but do not make the exit code 1.",
)
def command(
    old: str,
    new: str,
    as_json: bool,
    static: bool,
    symbols_range: bool,
    verify_range: bool,
    timeout_text: str,
    runtime: str | None,
    no_sandbox: bool,
    memory_limit: str | None,
    suppress_file: str | None,
) -> int:
    """Compare two builds of a library: is NEW a drop-in replacement for OLD?

    Exit 0 when NEW is compatible (no changes, or additions only), 1 when
    something a caller of OLD uses was removed or changed, or NEW does not run
    on an official release OLD runs on; 2 on bad input, or when tvmffi cannot
    judge: a library could not be loaded, so its globals, object types and
    type schemas were not compared, or NEW could not be loaded on a release
    of OLD's range (the output says which). NEW is loaded on each release of
    OLD's range, OLD where NEW fails (a worker each, side by side). --static
    compares the files only, --symbols-range the runtime ranges by symbols
    only, and each says so.
    """
    from ..diff import Suppression, parse_suppressions, run, suppress
    from .numbers import seconds

    timeout = seconds(timeout_text, "--timeout")
    if verify_range and (static or symbols_range):
        from ..errors import InputError

        given = "--static" if static else "--symbols-range"
        raise InputError(
            f"{given} compares the runtime ranges by symbols and --verify-range by "
            "loading: give one of them"
        )
    sandbox_opts.apply(no_sandbox, memory_limit)

    rules: tuple[Suppression, ...] = ()
    if suppress_file is not None:
        from ..errors import InputError

        try:
            with open(suppress_file, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"{suppress_file}: cannot read ({e})") from None
        rules = parse_suppressions(text, suppress_file)
    r = suppress(
        run(old, new, static, timeout, runtime, symbols_range),
        rules,
    )
    if as_json:
        from . import jsonout

        # `library` is NEW (the build under review); `old` and `new` stay;
        # `runtime` is the one that hosted NEW (`runtimes` has both).
        jsonout.emit(r.to_json(), library=new, runtime=r.runtimes[1])
    else:
        from ..render.tools import render_diff

        render_diff(r)
    return r.exit_code

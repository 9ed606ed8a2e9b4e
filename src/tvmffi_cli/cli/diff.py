"""`tvmffi diff OLD NEW`: compatibility of two builds (engine: tvmffi_cli.diff)."""

from __future__ import annotations

import click


@click.command("diff")
@click.argument("old", type=click.Path(dir_okay=False))
@click.argument("new", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (schemas/diff).")
@click.option("--static", is_flag=True,
              help="Compare the files only (exports, modules, kernels, imports).")
@click.option("--timeout", type=float, default=30.0, show_default=True,
              help="Seconds allowed for loading each library in a child process.")
@click.option("--runtime", type=click.Path(exists=True, dir_okay=False), default=None,
              help="libtvm_ffi.so to load the libraries with.")
def command(old: str, new: str, as_json: bool, static: bool, timeout: float,
            runtime: str | None) -> int:
    """Compare two builds of a library: is NEW a drop-in replacement for OLD?

    Exit 0 when NEW is compatible (no changes, or additions only), 1 when
    something a caller of OLD uses was removed or changed, 2 on bad input.
    """
    from ..diff import run

    r = run(old, new, static=static, timeout=timeout, runtime=runtime)
    if as_json:
        import json

        click.echo(json.dumps(r.to_json(), ensure_ascii=False))
    else:
        from ..render.tools import render_diff

        render_diff(r)
    return r.exit_code

"""`tvmffi extract LIB -o DIR`: embedded modules and GPU binaries to files
(engine: tvmffi_cli.extract). Never runs library code."""

from __future__ import annotations

import click


@click.command("extract")
@click.argument("path", type=click.Path(dir_okay=True))
@click.option(
    "-o",
    "--output",
    "directory",
    type=click.Path(file_okay=False),
    required=True,
    help="Directory to write into (created when missing).",
)
@click.option("--force", is_flag=True, help="Overwrite files that exist in the directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def command(path: str, directory: str, force: bool, as_json: bool) -> int:
    """Write every embedded module, GPU binary (cubin, fatbin, PTX) and a
    manifest.json to a directory, reading the file only. A wheel (.whl) or
    a directory of libraries gives one subdirectory per TVM-FFI library.

    Exit 0 on success, 1 when the embedded data is malformed (what could be
    read is still written), 2 on bad input or when files would be overwritten.
    """
    from . import wheel_input

    if wheel_input.is_bundle(path):
        return wheel_input.extract(path, directory, force, as_json)
    from ..extract import run

    r = run(path, directory, force=force)
    if as_json:
        from . import jsonout

        jsonout.emit(r.to_json(), library=path)
    else:
        from ..render.tools import render_extract

        render_extract(r)
    return r.exit_code

"""`tvmffi conform` (filled in by its own issue)."""

import click


@click.command("conform", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args):
    """Not implemented yet."""
    from ..errors import InputError

    raise InputError("tvmffi conform is not implemented yet")

"""`tvmffi bench` (filled in by its own issue)."""

import click


@click.command("bench", context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args):
    """Not implemented yet."""
    from ..errors import InputError

    raise InputError("tvmffi bench is not implemented yet")

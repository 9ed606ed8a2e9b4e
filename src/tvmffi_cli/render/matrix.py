"""People-facing output of a run on several runtimes (`conform` and `call`
with a repeated --runtime): one table, a column per runtime, a verdict row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import text

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

_STYLE = {"pass": "green", "ok": "green", "FAIL": "bold red", "warn": "yellow", "skip": "dim"}


def _clean(value: str) -> str:
    return text.terminal(value, one_line=True)


def _cell(value: str) -> Text:
    from rich.text import Text

    word = value.split(" ", 1)[0]
    return Text(_clean(value), style=_STYLE.get(word, ""))


def render(
    console: Console,
    title: str,
    columns: list[str],
    rows: list[tuple[str, list[str]]],
    verdicts: list[bool],
    notes: list[str] | None = None,
) -> None:
    """A table: a row per item (check, or what a call gave), a column per
    runtime, and a last row with each runtime's verdict."""
    from rich.table import Table
    from rich.text import Text

    # The title on a line of its own, wrapped at its blanks only: a path in it
    # is never broken to the table's width.
    console.print(Text(_clean(title)), crop=False, overflow="ignore")
    table = Table(expand=False)
    table.add_column("")
    for c in columns:
        table.add_column(Text(_clean(c)), overflow="fold")
    for name, cells in rows:
        table.add_row(Text(_clean(name)), *(_cell(c) for c in cells))
    table.add_row("verdict", *(_cell("pass" if ok else "FAIL") for ok in verdicts))
    console.print(table)
    for n in notes or ():
        console.print(Text(f"note: {_clean(n)}"))

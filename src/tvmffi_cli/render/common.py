"""Shared rich console for people-facing output.

Colour follows the usual conventions: none when NO_COLOR is set (any value),
none when the stream is not a terminal (pipes, files, CI logs), forced with
FORCE_COLOR or TVMFFI_COLOR=1. Output to a non-terminal is not wrapped to 80
columns (COLUMNS or 160 wide) so piped tables stay readable.
"""

from __future__ import annotations

import os
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


def color_wanted(stream: IO[str] | None = None) -> bool:
    stream = stream or sys.stdout
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TVMFFI_COLOR") == "1" or os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # closed stream
        return False


def make_console(stderr: bool = False, file: IO[str] | None = None,
                 width: int | None = None) -> Console:
    """A rich Console on stdout (or stderr) that respects NO_COLOR and non-terminals."""
    from rich.console import Console

    stream = file or (sys.stderr if stderr else sys.stdout)
    color = color_wanted(stream)
    if width is None and not color:
        isatty = getattr(stream, "isatty", None)
        if not (isatty and isatty()):
            try:
                width = int(os.environ.get("COLUMNS", "0")) or 160
            except ValueError:
                width = 160
    return Console(file=stream, color_system="auto" if color else None, force_terminal=color,
                   no_color=not color, highlight=False, width=width, soft_wrap=False)


def human_size(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n} B"

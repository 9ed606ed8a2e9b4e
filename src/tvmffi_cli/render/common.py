"""Shared rich console for people-facing output.

Colour follows the usual conventions: none when NO_COLOR is set (any value),
none when the stream is not a terminal (pipes, files, CI logs), forced with
FORCE_COLOR or TVMFFI_COLOR=1. Output to a non-terminal is as wide as
COLUMNS, else as the terminal the command runs in (`tvmffi inspect lib |
head`: stderr's, stdin's or /dev/tty's width), else 160 (CI logs, files).
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO, TYPE_CHECKING, cast

if TYPE_CHECKING:
    from rich.console import Console

# Spaces at the end of a line, possibly followed by colour codes (rich pads the
# last cell of a table and the width of a rule).
_TRAILING = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$")


def strip_trailing(line: str) -> str:
    """`line` without the blanks at its end (colour codes kept)."""
    while True:
        out = _TRAILING.sub(r"\1", line)
        if out == line:
            return out
        line = out


class NoTrailingSpace:
    """A text stream that passes whole lines on without their trailing blanks.
    A partial line waits for its end (or a flush)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            self._stream.write("\n".join(strip_trailing(ln) for ln in lines) + "\n")
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self._stream.write(self._pending)
            self._pending = ""
        self._stream.flush()

    def isatty(self) -> bool:
        isatty = getattr(self._stream, "isatty", None)
        return bool(isatty and isatty())

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return str(getattr(self._stream, "encoding", None) or "utf-8")


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


def make_console(
    stderr: bool = False, file: IO[str] | None = None, width: int | None = None
) -> Console:
    """A rich Console on stdout (or stderr) that respects NO_COLOR and non-terminals."""
    from rich.console import Console

    stream = file or (sys.stderr if stderr else sys.stdout)
    color = color_wanted(stream)
    if width is None and not color:
        isatty = getattr(stream, "isatty", None)
        if not (isatty and isatty()):
            width = piped_width()
    if not stderr and file is None:
        # Lines of people's output end with their last character; stderr keeps
        # the raw stream for live displays (progress bars rewrite their line).
        stream = cast("IO[str]", NoTrailingSpace(stream))
    return Console(
        file=stream,
        color_system="auto" if color else None,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        width=width,
        soft_wrap=False,
    )


def text_width(stream: IO[str] | None = None) -> int:
    """Columns people's output may use on `stream`: the terminal's, else
    piped_width() (the rule make_console follows)."""
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    if isatty and isatty():
        import shutil  # here: it imports the compressors too

        return shutil.get_terminal_size().columns
    return piped_width()


def piped_width() -> int:
    """The width of output that does not go to a terminal: COLUMNS when set
    (shells do not export it), else the width of the terminal the command
    runs in (`tvmffi inspect lib | head` is read there), else 160 (CI logs,
    files: nothing to fit)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    return columns if columns > 0 else terminal_columns() or 160


def terminal_columns() -> int | None:
    """Columns of the terminal this process runs in, asked of stderr, stdin,
    then the controlling terminal (/dev/tty); None without one."""
    for fd in (2, 0):
        try:
            if os.isatty(fd):
                return os.get_terminal_size(fd).columns or None
        except OSError:
            pass
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return None  # no controlling terminal (CI, a daemon, a new session)
    try:
        return os.get_terminal_size(fd).columns or None
    except OSError:
        return None
    finally:
        os.close(fd)


def fit_lines(text: str, width: int | None = None) -> str:
    """Plain text with every line longer than `width` broken at blanks, the
    continuation indented two more than the line; no line ends in a blank."""
    width = max(20, width or text_width())
    out: list[str] = []
    for line in text.splitlines():
        line = line.rstrip()
        if len(line) <= width:
            out.append(line)
            continue
        import textwrap  # only for a line to break: its patterns cost a call's output ~5 ms

        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        out += textwrap.wrap(
            line,
            width=width,
            subsequent_indent=indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
    return "\n".join(out)


def human_size(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return f"{n} B"

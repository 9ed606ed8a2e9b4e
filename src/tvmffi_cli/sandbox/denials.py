"""Which option would have let a library reach the path it failed on.

The worker cannot be trusted to say what the sandbox refused, so the parent
judges from what it sees: the library's error text and output. A path there,
on a line that says the access was denied, that lies outside what the
sandbox lets the worker read (or write) is reported with the option that
would allow it:

    suggest("cannot open /etc/hostname: Permission denied", reads, writes)
    -> [Denial("/etc/hostname", "--allow-read")]

Limits: only paths the library prints are seen (a library that fails
silently, or prints a relative path, gets no hint); a path printed but
refused for another reason (a file mode) is reported too when it lies
outside the allowed set; at most MAX_DENIALS are named.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_DENIALS = 5
# EROFS: outside the write paths every mount is read-only (read-only-fs).
_DENIED = re.compile(
    r"permission denied|operation not permitted|read-only file system|\b(EACCES|EPERM|EROFS)\b",
    re.I,
)
_PATH = re.compile(r"(?<![\w.])(/[^\s'\"`:,;()\[\]<>]+)")


@dataclass(frozen=True)
class Denial:
    path: str
    option: str  # "--allow-read" or "--allow-write"
    value: str  # what to pass to the option

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "option": self.option, "value": self.value}

    def hint(self) -> str:
        return (
            f"the sandbox denies {self.path}: if the library needs it, "
            f"rerun with {self.option} {self.value}"
        )


def _under(path: str, roots: Iterable[str]) -> bool:
    for r in roots:
        r = r.rstrip("/") or "/"
        if path == r or path.startswith(r + "/") or r == "/":
            return True
    return False


def _existing_dir(path: str) -> str:
    d = path
    while d not in ("", "/") and not os.path.isdir(d):
        d = os.path.dirname(d)
    return d or "/"


def suggest(text: str, readable: Iterable[str], writable: Iterable[str]) -> list[Denial]:
    """Denials named in `text` (the library's words) outside the sandbox's
    readable / writable paths, with the option that would allow each."""
    reads = [os.path.realpath(p) for p in readable]
    writes = [os.path.realpath(p) for p in writable]
    out: list[Denial] = []
    for line in text.splitlines():
        if not _DENIED.search(line):
            continue
        for m in _PATH.finditer(line):
            raw = m.group(1).rstrip(".")
            if len(raw) > 4096 or "\x00" in raw:
                continue
            path = os.path.realpath(raw)
            if any(d.path == path for d in out):
                continue
            if os.path.exists(path):
                if not _under(path, reads + writes):
                    out.append(Denial(path, "--allow-read", path))
                elif not _under(path, writes):
                    target = path if os.path.isdir(path) else os.path.dirname(path)
                    out.append(Denial(path, "--allow-write", target))
            elif not _under(path, writes):
                out.append(Denial(path, "--allow-write", _existing_dir(os.path.dirname(path))))
            if len(out) >= MAX_DENIALS:
                return out
    return out

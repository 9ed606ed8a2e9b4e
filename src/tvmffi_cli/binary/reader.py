"""Bounded little-endian byte reader shared by the library_bin decoder
(libbin.py) and the module-kind decoders (modformats.py).

Every read is checked against the bytes that remain; a count is checked
against them before anything is allocated. Failures raise LibBinError
with the byte offset where decoding stopped.
"""

from __future__ import annotations

import builtins
import struct
from typing import TypedDict


class Problem(TypedDict):
    """A problem of a symbol's content, as inspect's --json lists it: the byte
    offset from the start of the symbol and what is wrong there."""

    offset: int
    message: str


class LibBinError(Exception):
    """Decoding cannot go on; carries the byte offset where it stopped."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(message)
        self.offset = offset
        self.message = message


class Reader:
    """Bounded little-endian reader over bytes[pos:end]."""

    def __init__(self, data: bytes, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def u64(self, what: str) -> int:
        if self.remaining < 8:
            raise LibBinError(
                self.pos,
                f"{what}: needs 8 bytes at offset {self.pos}, {max(0, self.remaining)} left",
            )
        v: int = struct.unpack_from("<Q", self.data, self.pos)[0]
        self.pos += 8
        return v

    def u32(self, what: str) -> int:
        if self.remaining < 4:
            raise LibBinError(
                self.pos,
                f"{what}: needs 4 bytes at offset {self.pos}, {max(0, self.remaining)} left",
            )
        v: int = struct.unpack_from("<I", self.data, self.pos)[0]
        self.pos += 4
        return v

    def count(self, what: str, item_size: int) -> int:
        """A u64 count of items of `item_size` bytes, checked against what remains
        (so a count claiming 2**40 entries is reported, never allocated)."""
        at = self.pos
        n = self.u64(what)
        if item_size and n > self.remaining // item_size:
            raise LibBinError(
                at,
                f"{what}: {'size' if item_size == 1 else 'count'} {n} at offset {at} needs {n * item_size} "
                f"bytes, only {self.remaining} left",
            )
        return n

    def raw(self, what: str) -> tuple[int, bytes]:
        """<size: u64> <bytes>: returns (offset of content, content bytes)."""
        n = self.count(what, 1)
        at = self.pos
        self.pos += n
        return at, self.data[at : at + n]

    def str(self, what: str) -> str:
        at, b = self.raw(what)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError:
            raise LibBinError(at, f"{what} at offset {at} is not UTF-8")

    def vec_u64(self, what: builtins.str) -> list[int]:
        n = self.count(what, 8)
        at = self.pos
        self.pos += 8 * n
        return list(struct.unpack_from(f"<{n}Q", self.data, at)) if n else []

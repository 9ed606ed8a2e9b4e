"""Readers of library files behind one symbol model (see model.py).

`open_binary(path)` picks the reader from the file's magic bytes. Every reader
raises tvmffi_cli.errors.FormatError for input it cannot use, never another
exception; a missing or unreadable file is an InputError.
"""

from __future__ import annotations

import os
import stat
import struct
from typing import TYPE_CHECKING

from ..errors import FormatError, InputError
from .model import CODE, DATA, OTHER, Binary, Section, Symbol

if TYPE_CHECKING:
    from .model import FileData

__all__ = [
    "CODE",
    "DATA",
    "OTHER",
    "Binary",
    "Section",
    "Symbol",
    "open_binary",
    "parse_bytes",
    "require_library",
]

_MMAP_FROM = 1 << 20  # small files are read whole; large ones are mapped


def _reader_for(data: FileData) -> type[Binary] | None:
    head = bytes(data[:8])
    if head[:4] == b"\x7fELF":
        from .elf import ElfBinary

        return ElfBinary
    if head[:2] == b"MZ":
        from .pe import PeBinary

        return PeBinary
    if head[:4] in (
        b"\xfe\xed\xfa\xce",
        b"\xce\xfa\xed\xfe",
        b"\xfe\xed\xfa\xcf",
        b"\xcf\xfa\xed\xfe",
        b"\xca\xfe\xba\xbe",
        b"\xbe\xba\xfe\xca",
    ):
        from .macho import MachOBinary

        return MachOBinary
    return None


def parse_bytes(data: FileData, path: str = "<bytes>") -> Binary:
    """Parse an in-memory file image; FormatError when it is not a library we read."""
    if len(data) == 0:
        raise FormatError("empty file")
    cls = _reader_for(data)
    if cls is None:
        raise FormatError("not a library: neither ELF, PE nor Mach-O")
    try:
        return cls(path, data)
    except FormatError:
        raise
    except (
        struct.error,
        ValueError,
        IndexError,
        KeyError,
        OverflowError,
        TypeError,
        UnicodeError,
        MemoryError,
        AttributeError,
    ) as e:
        # Defence in depth: a reader bug on hostile input still reports as a
        # format problem of the file, not a crash of the tool.
        raise FormatError(f"malformed {cls.format.upper()} file ({type(e).__name__}: {e})")


# Kinds of file that no dynamic loader loads as a library.
_NOT_LOADABLE = ("executable", "object", "core")


def require_library(binary: Binary) -> None:
    """FormatError (exit 2) unless `binary` is something a loader loads as a
    library: a program (/bin/ls, a PIE), an object file or a core dump is what
    the user got wrong, not a library that failed."""
    if binary.kind in _NOT_LOADABLE:
        raise FormatError(
            f"{binary.path}: not a shared library but an {binary.kind} file "
            f"({binary.format.upper()})"
        )


def open_binary(path: str | os.PathLike[str]) -> Binary:
    """Open and parse `path` (ELF, PE/COFF or Mach-O, thin or fat)."""
    p = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO for reading would otherwise wait forever
        # for a writer; only regular files are read below.
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise InputError(f"{p}: no such file")
    except IsADirectoryError:
        raise InputError(f"{p}: is a directory")
    except OSError as e:
        raise InputError(f"{p}: cannot open ({e.strerror or e})")
    try:
        mode = os.fstat(fd).st_mode
    except OSError as e:
        os.close(fd)
        raise InputError(f"{p}: cannot read ({e.strerror or e})")
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(
            f"{p}: is a directory" if stat.S_ISDIR(mode) else f"{p}: not a regular file"
        )
    f = os.fdopen(fd, "rb")
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                raise FormatError(f"{p}: empty file, not a library")
            if size >= _MMAP_FROM:
                import mmap

                data: FileData = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            else:
                data = f.read()
        except OSError as e:
            raise InputError(f"{p}: cannot read ({e.strerror or e})")
    try:
        return parse_bytes(data, p)
    except FormatError as e:
        msg = str(e)
        raise FormatError(msg if msg.startswith(p) else f"{p}: {msg}") from None

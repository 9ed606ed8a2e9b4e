"""An input of many libraries: a wheel (extracted into a private temporary
directory for as long as the `with` lasts) or a directory (read in place,
never written)."""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import InputError
from . import archive, metadata
from .libraries import RUNTIME, TVM_FFI, LibraryFile, classify, scan_directory

WHEEL = "wheel"
DIRECTORY = "directory"


def is_bundle(path: str) -> bool:
    """Is `path` a wheel or a directory (rather than one library file)?"""
    return os.path.isdir(path) or (path.lower().endswith(".whl") and os.path.isfile(path))


@dataclass(frozen=True)
class Bundle:
    kind: str  # WHEEL or DIRECTORY
    source: str  # the path given
    root: str  # where its files are now
    metadata: metadata.WheelMetadata | None  # None for a directory
    files: tuple[LibraryFile, ...]  # every file named like a library, in order
    started: float = 0.0  # time.monotonic() when opening began (elapsed_s counts from it)

    @property
    def libraries(self) -> list[LibraryFile]:
        """The TVM-FFI libraries to check."""
        return [f for f in self.files if f.role == TVM_FFI]

    @property
    def runtimes(self) -> list[LibraryFile]:
        return [f for f in self.files if f.role == RUNTIME]

    def display(self, lib: LibraryFile) -> str:
        """How people see a library of the bundle: `<wheel file>/<member>`."""
        return f"{os.path.basename(self.source.rstrip(os.sep))}/{lib.member}"

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": os.path.abspath(self.source),
            "metadata": None if self.metadata is None else self.metadata.to_json(),
            "files": [f.to_json() for f in self.files],
        }


@contextmanager
def open_bundle(path: str, limits: archive.Limits | None = None) -> Iterator[Bundle]:
    """The bundle at `path`; InputError (exit 2) when it is not a usable wheel
    or directory, or holds no TVM-FFI library."""
    lim = limits or archive.Limits()
    t0 = time.monotonic()
    if os.path.isdir(path):
        files = tuple(classify(m, p) for m, p in scan_directory(path))
        yield _require(Bundle(DIRECTORY, path, path, None, files, t0))
        return
    try:
        z = zipfile.ZipFile(path)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
        raise InputError(f"{path}: not a wheel (not a zip archive: {e})") from None
    with z, archive.temporary_root() as root:
        members = archive.check_members(z, path, lim)
        meta = metadata.read(z, members, path, lim)
        written = archive.extract_libraries(z, members, root, path)
        files = tuple(classify(m.name, os.path.join(root, *m.name.split("/"))) for m in written)
        yield _require(Bundle(WHEEL, path, root, meta, files, t0))


def _require(b: Bundle) -> Bundle:
    if not b.libraries:
        seen = len(b.files)
        where = "in this wheel" if b.kind == WHEEL else "is a directory with"
        lead = f"no TVM-FFI library {where}" if b.kind == WHEEL else f"{where} no TVM-FFI library"
        raise InputError(
            f"{b.source}: {lead} ({seen} shared librar{'y' if seen == 1 else 'ies'} looked "
            "at; none exports __tvm_ffi_ symbols, imports the TVM-FFI C API or links libtvm_ffi)"
        )
    return b

"""Reading a wheel without trusting it: its member list is checked as a whole
before a byte is written, and only its shared libraries are extracted, into a
private temporary directory that keeps the wheel's layout (so a library's
RUNPATH `$ORIGIN/../lib` finds the siblings the wheel ships, as after
`pip install`).

Refused (InputError, exit 2, one line): a member whose name is absolute,
climbs out (`..`), holds a backslash, NUL or drive letter; a symbolic link
member; a duplicate name; more than `Limits.members` members; a member
declaring more than `Limits.member_size` bytes or, all together, more than
`Limits.total_size`; a compression ratio no honest deflate stream reaches (a
zip bomb). While extracting, every member is copied in bounded chunks and
never past the size it declared, into files created exclusively (O_EXCL,
O_NOFOLLOW) under the temporary root.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..errors import InputError

#: A shared library by its name: lib.so, lib.so.1.2, lib.dylib, lib.dll, mod.pyd.
LIBRARY_NAME = re.compile(r"\.(so(\.\d+)*|dylib|dll|pyd)$", re.IGNORECASE)
#: What reading a damaged or unusual member raises (encrypted members and
#: unknown compression methods included): all mean "refused", exit 2.
UNREADABLE = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    zlib.error,
    RuntimeError,
    NotImplementedError,
)
#: Deflate tops out near 1032:1; a member claiming more is a bomb or a lie.
MAX_RATIO = 1100
_CHUNK = 1 << 20
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class Limits:
    members: int = 200_000
    member_size: int = 3 << 30  # the largest real libraries (CUDA) stay below this
    total_size: int = 16 << 30
    metadata_size: int = 16 << 20


@dataclass(frozen=True)
class Member:
    name: str  # path inside the wheel, '/'-separated
    size: int  # declared uncompressed size


def _bad_name(name: str) -> str | None:
    """Why `name` cannot be written below a root, or None."""
    if not name or "\x00" in name:
        return "an empty or NUL-holding name"
    if "\\" in name:
        return "a backslash in its name"
    if name.startswith("/") or _DRIVE.match(name):
        return "an absolute path"
    parts = name.rstrip("/").split("/")
    if any(p in ("..", ".") for p in parts):
        return "a '..' or '.' path component"
    if any(p == "" for p in parts):
        return "an empty path component"
    return None


def _is_symlink(info: zipfile.ZipInfo) -> bool:
    return stat.S_ISLNK(info.external_attr >> 16)


def check_members(z: zipfile.ZipFile, where: str, limits: Limits) -> list[zipfile.ZipInfo]:
    """Every file member of the archive, after checking the whole member list;
    InputError naming the first offending member otherwise."""
    infos = z.infolist()
    if len(infos) > limits.members:
        raise InputError(f"{where}: {len(infos)} members, more than the {limits.members} allowed")
    seen: set[str] = set()
    total = 0
    files: list[zipfile.ZipInfo] = []
    for info in infos:
        name = info.filename
        shown = name.encode("unicode_escape").decode("ascii")[:200]
        why = _bad_name(name)
        if why is not None:
            raise InputError(f"{where}: member {shown!r} has {why}; refused")
        if _is_symlink(info):
            raise InputError(f"{where}: member {shown!r} is a symbolic link; refused")
        if name.rstrip("/") in seen:
            raise InputError(f"{where}: member {shown!r} appears twice; refused")
        seen.add(name.rstrip("/"))
        if info.is_dir():
            continue
        if info.file_size > limits.member_size:
            raise InputError(
                f"{where}: member {shown!r} declares {info.file_size} bytes, more than "
                f"the {limits.member_size} allowed; refused"
            )
        if info.file_size > 1 << 20 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise InputError(
                f"{where}: member {shown!r} claims a compression ratio over {MAX_RATIO}:1 "
                f"({info.compress_size} -> {info.file_size} bytes), a zip bomb; refused"
            )
        total += info.file_size
        if total > limits.total_size:
            raise InputError(
                f"{where}: members declare more than {limits.total_size} bytes in all; refused"
            )
        files.append(info)
    return files


def read_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """The bytes of a small member (METADATA), never more than `limit`."""
    if info.file_size > limit:
        raise InputError(f"{info.filename}: {info.file_size} bytes, more than {limit}; refused")
    try:
        with z.open(info) as fh:
            data = fh.read(limit + 1)
    except UNREADABLE as e:
        raise InputError(f"cannot read member {info.filename!r} ({e}); refused") from None
    if len(data) > limit:
        raise InputError(f"{info.filename}: longer than it declares; refused")
    return data


def _copy_member(z: zipfile.ZipFile, info: zipfile.ZipInfo, root: str) -> str:
    target = os.path.join(root, *info.filename.split("/"))
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    # Components were checked by name; the real parent must still be below root.
    if os.path.commonpath([os.path.realpath(parent), root]) != root:
        raise InputError(f"{info.filename}: resolves outside the extraction directory; refused")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(target, flags, 0o755)
    written = 0
    with os.fdopen(fd, "wb") as out, z.open(info) as src:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                break
            written += len(chunk)
            if written > info.file_size:
                raise InputError(f"{info.filename}: longer than it declares; refused")
            out.write(chunk)
    return target


@contextmanager
def temporary_root() -> Iterator[str]:
    """A private directory (0700) removed with everything in it afterwards."""
    root = os.path.realpath(tempfile.mkdtemp(prefix="tvmffi-wheel-"))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def extract_libraries(
    z: zipfile.ZipFile, files: list[zipfile.ZipInfo], root: str, where: str
) -> list[Member]:
    """Write the shared-library members of `files` below `root`, keeping their
    paths; the members written, in archive order."""
    out: list[Member] = []
    for info in files:
        if not LIBRARY_NAME.search(info.filename):
            continue
        try:
            _copy_member(z, info, root)
        except UNREADABLE as e:
            raise InputError(
                f"{where}: cannot read member {info.filename!r} ({e}); refused"
            ) from None
        except OSError as e:
            raise InputError(
                f"{where}: cannot extract {info.filename!r} ({e.strerror or e})"
            ) from None
        out.append(Member(info.filename, info.file_size))
    return out

"""What binary/fatbin_walk.py and binary/kernels.py read of a library's CUDA
fat binaries (facts of the format: binary/fatbin_format.py): frozen
results, and their --json form (inspect's "cuda")."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Optional, TypedDict

from .cudaarch import SASS, CodeArch, DeviceVerdict, Support, SupportJson, device_support
from .fatbin_format import (
    DECOMPRESS_LIMIT,
    EXECUTABLE,
    FLAG_DEBUG,
    KERNEL_LIST_LIMIT,
    RELOCATABLE,
)


class EntryJson(TypedDict):
    """Entry.to_json() (inspect's --json "cuda" "entries")."""

    index: int
    name: Optional[str]
    kind: str
    arch: Optional[str]
    sm: Optional[int]
    variant: Optional[str]
    role: str
    section: str
    container: int
    offset: int
    size: int
    compression: str
    compressed_size: Optional[int]
    uncompressed_size: Optional[int]
    version: str
    debug: bool
    flags: int
    identifier: Optional[str]
    truncated: bool
    kernels: Optional[list[str]]
    kernel_count: Optional[int]
    kernels_note: Optional[str]


class ContainerJson(TypedDict):
    index: int
    section: str
    offset: int
    size: int
    version: int
    entries: int


class WrapperJson(TypedDict):
    index: int
    version: int
    address: Optional[int]
    section: Optional[str]
    offset: Optional[int]
    container: Optional[int]


class FatbinSectionJson(TypedDict):
    name: str
    role: str
    offset: int
    size: int
    containers: int
    entries: int


#: role -> {sass, ptx, compression} -> counts
Counts = dict[str, dict[str, dict[str, int]]]


class _CudaJsonKeys(TypedDict):
    sections: list[FatbinSectionJson]
    containers: list[ContainerJson]
    wrappers: list[WrapperJson]
    entry_count: int
    entries_listed: int
    truncated: bool
    entries: list[EntryJson]
    loaded: str
    sass: list[str]
    ptx: list[str]
    summary: Counts
    kernel_count: int
    kernels: list[str]
    kernels_unread: int
    decompressed_bytes: int
    decompress_limit: int


class CudaJson(_CudaJsonKeys, total=False):
    """CudaCode.to_json(): inspect's --json "cuda". Loading adds the GPUs'
    verdicts (inspect/engine.py): `device` (cuda:0's, or the one asked for),
    `devices` and, when none was judged, `devices_note`."""

    device: Optional[SupportJson]
    devices: list[DeviceVerdict]
    devices_note: Optional[str]


@dataclass(frozen=True)
class Entry:
    """One entry of a fat binary."""

    index: int  # in listing order: executable sections first, as `cuobjdump -all`
    name: str | None  # as `cuobjdump --list-elf --list-ptx` lists it (None: unknown kind)
    kind: str  # SASS | PTX | "unknown"
    arch: CodeArch | None
    role: str  # EXECUTABLE | RELOCATABLE
    section: str
    container: int
    offset: int  # file offset of the payload
    size: int  # payload bytes the header claims
    compression: str  # none | lz4 | zstd | unknown
    compressed_size: int | None
    uncompressed_size: int | None
    version: str  # code version major.minor (PTX: the ISA version)
    flags: int
    identifier: str | None
    truncated: bool  # the payload runs past its container or section
    stored: int  # payload bytes really there (size, unless truncated)
    kernels: tuple[str, ...] | None = None  # None: not read (kernels_note says why)
    kernel_count: int | None = None
    kernels_note: str | None = None

    @property
    def debug(self) -> bool:
        return bool(self.flags & FLAG_DEBUG)

    def to_json(self) -> EntryJson:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "arch": self.arch.name if self.arch else None,
            "sm": self.arch.sm if self.arch else None,
            "variant": self.arch.variant if self.arch else None,
            "role": self.role,
            "section": self.section,
            "container": self.container,
            "offset": self.offset,
            "size": self.size,
            "compression": self.compression,
            "compressed_size": self.compressed_size,
            "uncompressed_size": self.uncompressed_size,
            "version": self.version,
            "debug": self.debug,
            "flags": self.flags,
            "identifier": self.identifier,
            "truncated": self.truncated,
            "kernels": list(self.kernels) if self.kernels is not None else None,
            "kernel_count": self.kernel_count,
            "kernels_note": self.kernels_note,
        }


@dataclass(frozen=True)
class Container:
    index: int
    section: str
    offset: int  # within the section
    size: int  # header + entries, as claimed
    version: int
    entries: int

    def to_json(self) -> ContainerJson:
        return {
            "index": self.index,
            "section": self.section,
            "offset": self.offset,
            "size": self.size,
            "version": self.version,
            "entries": self.entries,
        }


@dataclass(frozen=True)
class Wrapper:
    """One __fatBinC_Wrapper_t of .nvFatBinSegment."""

    index: int
    version: int
    address: int | None  # where its container pointer points (None: nowhere known)
    section: str | None  # the fat binary section it points into
    offset: int | None  # within that section
    container: int | None  # the container that starts there

    def to_json(self) -> WrapperJson:
        return {
            "index": self.index,
            "version": self.version,
            "address": self.address,
            "section": self.section,
            "offset": self.offset,
            "container": self.container,
        }


@dataclass(frozen=True)
class FatbinSection:
    """A section of fat binaries (.nv_fatbin, __nv_relfatbin), as walked."""

    name: str
    role: str  # EXECUTABLE | RELOCATABLE
    offset: int  # file offset
    size: int  # bytes in the file
    containers: int
    entries: int

    def to_json(self) -> FatbinSectionJson:
        return {
            "name": self.name,
            "role": self.role,
            "offset": self.offset,
            "size": self.size,
            "containers": self.containers,
            "entries": self.entries,
        }


@dataclass(frozen=True)
class Problem:
    where: str  # a section name
    offset: int  # byte offset within it
    message: str


@dataclass(frozen=True)
class CudaCode:
    """The CUDA code a library carries: every fat binary entry, and what the
    runtime would load (the executable entries, else the relocatable ones:
    what cuobjdump lists without -all)."""

    sections: tuple[FatbinSection, ...]
    containers: tuple[Container, ...]
    wrappers: tuple[Wrapper, ...]
    entries: tuple[Entry, ...]  # the first ENTRY_LIST_LIMIT
    entry_count: int
    summary: Counts
    problems: tuple[Problem, ...]
    decompressed_bytes: int = 0
    limit: int = DECOMPRESS_LIMIT

    @property
    def loaded_role(self) -> str:
        return EXECUTABLE if EXECUTABLE in self.summary else RELOCATABLE

    def loaded(self) -> list[Entry]:
        role = self.loaded_role
        return [e for e in self.entries if e.role == role]

    def archs(self) -> list[CodeArch]:
        """The architectures of the loaded entries (for device_support)."""
        return [e.arch for e in self.loaded() if e.arch is not None]

    def support(self, cc: tuple[int, int]) -> Support:
        return device_support(self.archs(), cc)

    def listing(self, every: bool = False) -> list[str]:
        """The lines of `cuobjdump --list-elf --list-ptx` (with -all when
        `every`): the loaded entries, or all of them."""
        out: list[str] = []
        n = Counter[str]()
        for e in self.entries if every else self.loaded():
            if e.name is None:
                continue
            label = "ELF" if e.kind == SASS else "PTX"
            n[label] += 1
            out.append(f"{label} file {n[label]:4d}: {e.name}")
        return out

    def kernels(self) -> tuple[list[str], int, int]:
        """(names, how many distinct, loaded entries whose names were not read)."""
        seen: dict[str, None] = {}
        unread = 0
        for e in self.loaded():
            if e.kernels is None:
                unread += e.kind != "unknown"
                continue
            for k in e.kernels:
                seen.setdefault(k, None)
        names = list(seen)
        return names[:KERNEL_LIST_LIMIT], len(names), unread

    def to_json(self) -> CudaJson:
        kernels, count, unread = self.kernels()
        loaded = self.summary.get(self.loaded_role, {})
        return {
            "sections": [s.to_json() for s in self.sections],
            "containers": [c.to_json() for c in self.containers],
            "wrappers": [w.to_json() for w in self.wrappers],
            "entry_count": self.entry_count,
            "entries_listed": len(self.entries),
            "truncated": len(self.entries) < self.entry_count,
            "entries": [e.to_json() for e in self.entries],
            "loaded": self.loaded_role,
            "sass": list(loaded.get("sass", {})),
            "ptx": list(loaded.get("ptx", {})),
            "summary": self.summary,
            "kernel_count": count,
            "kernels": kernels,
            "kernels_unread": unread,
            "decompressed_bytes": self.decompressed_bytes,
            "decompress_limit": self.limit,
        }

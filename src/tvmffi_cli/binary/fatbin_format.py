"""The CUDA fat binary format: its facts, each spelled once, and the model
the reader (binary/fatbin_walk.py, binary/kernels.py, behind
binary/fatbin.py) fills: what nvcc links into a library and the CUDA
runtime loads.

Layout (little-endian; the facts below are the only place they are spelled):

* `.nv_fatbin` holds the executable fat binaries (what the runtime loads);
  `__nv_relfatbin` the relocatable device code of `-rdc` objects (the input
  of the device link, not loaded when `.nv_fatbin` is there). Each is a
  sequence of containers, zero-padded to 8 bytes:
      container header (16 bytes): magic u32 = FATBIN_MAGIC, version u16,
          header size u16, size u64 of the entries that follow
      entries, each: ENTRY header (64 bytes, `header size` may be larger:
          identifier and ptxas options follow it), then `size` payload bytes
* an entry header: kind u16 (1 PTX, 2 ELF cubin), version u16, header size
  u32, payload size u64, compressed size u32, options offset u32, code
  version minor u16 and major u16 (PTX: the ISA version), sm u32 (90 for
  sm_90), identifier offset u32 and length u32 (within the header; the
  source file under -lineinfo/-G), flags u64, reserved u64, uncompressed
  size u64. Flags: 64-bit host, debug, Linux host, LZ4 or ZSTD compressed
  payload, arch-specific (`a`), family-specific (`f`).
* `.nvFatBinSegment` holds one wrapper per translation unit (the
  __fatBinC_Wrapper_t the runtime registers): magic u32 = WRAPPER_MAGIC,
  version u32 (2: linked with -rdc), a pointer to its container, a pointer
  to the pre-linked fatbins (version 2) or 0.

Kernel names and compressed payloads: binary/kernels.py.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass
from typing import Any

from .cudaarch import SASS, CodeArch, Support, device_support

# -- facts of the format ----------------------------------------------------
FATBIN_SECTION = ".nv_fatbin"
RELFATBIN_SECTION = "__nv_relfatbin"
WRAPPER_SECTION = ".nvFatBinSegment"
EXECUTABLE, RELOCATABLE = "executable", "relocatable"
SECTION_ROLES = {FATBIN_SECTION: EXECUTABLE, RELFATBIN_SECTION: RELOCATABLE}
FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1
CONTAINER = struct.Struct("<IHHQ")
ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
KIND_PTX, KIND_ELF = 1, 2
FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LINUX = 0x10
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000

# -- bounds -------------------------------------------------------------------
#: Entries (and containers, wrappers) listed one by one; the rest are counted.
ENTRY_LIST_LIMIT = 20000
#: Kernel names kept per entry and in the library's summary.
KERNEL_LIST_LIMIT = 1000
#: Decompressed bytes per file, all entries together (kernel names only):
#: enough for nvcc's compressed PTX and mid-sized cubins, while a pack's
#: 81 MB image (about 0.5 s of LZ4 here) waits for a raised limit.
DECOMPRESS_LIMIT = 32 << 20
DECOMPRESS_LIMIT_ENV = "TVMFFI_FATBIN_DECOMPRESS_LIMIT"
#: Distinct architecture keys counted in the summary (a hostile file could
#: claim a new sm in every entry).
_SUMMARY_KEYS = 256


def decompress_limit() -> int:
    """DECOMPRESS_LIMIT, or the integer in $TVMFFI_FATBIN_DECOMPRESS_LIMIT (0: never)."""
    v = os.environ.get(DECOMPRESS_LIMIT_ENV, "")
    return int(v) if v.isdigit() else DECOMPRESS_LIMIT


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

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "version": self.version,
            "address": self.address,
            "section": self.section,
            "offset": self.offset,
            "container": self.container,
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

    sections: tuple[dict[str, Any], ...]
    containers: tuple[Container, ...]
    wrappers: tuple[Wrapper, ...]
    entries: tuple[Entry, ...]  # the first ENTRY_LIST_LIMIT
    entry_count: int
    summary: dict[str, dict[str, dict[str, int]]]  # role -> {sass, ptx, compression} -> counts
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

    def to_json(self) -> dict[str, Any]:
        kernels, count, unread = self.kernels()
        loaded = self.summary.get(self.loaded_role, {})
        return {
            "sections": [dict(s) for s in self.sections],
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

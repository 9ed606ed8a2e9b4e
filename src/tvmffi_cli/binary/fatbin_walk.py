"""The walk over a library's fat binary sections (facts and model:
binary/fatbin_format.py): containers, entries and the wrappers that point
at them, each read bounded by its section; the position only moves
forward, so the walk is linear whatever the headers claim. What does not
add up is collected as a Problem (with its offset in the section) and the
walk goes on where it can."""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .cudaarch import PTX, SASS, CodeArch
from .fatbin_format import (
    CONTAINER,
    ENTRY,
    ENTRY_LIST_LIMIT,
    EXECUTABLE,
    FATBIN_MAGIC,
    FLAG_ARCH_SPECIFIC,
    FLAG_FAMILY,
    FLAG_LZ4,
    FLAG_ZSTD,
    KIND_ELF,
    KIND_PTX,
    SECTION_ROLES,
    SUMMARY_KEYS,
    WRAPPER_MAGIC,
    WRAPPER_SECTION,
)
from .fatbin_model import Container, CudaCode, Entry, FatbinSection, Problem, Wrapper

if TYPE_CHECKING:
    from .model import Binary, FileData, Section


@dataclass
class _Walk:
    data: FileData
    stem: str
    problems: list[Problem] = field(default_factory=list)
    containers: list[Container] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    count: int = 0  # entries read
    n_containers: int = 0  # containers read
    keys: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    ordinals: Counter[str] = field(default_factory=Counter)
    # (kind, sm, variant flags) -> (arch, kind name, summary key), role fixed per section
    archs: dict[tuple[int, int, int], tuple[CodeArch | None, str, tuple[str, str, str]]] = field(
        default_factory=dict
    )

    def problem(self, sec: Section, at: int, message: str) -> None:
        if len(self.problems) < ENTRY_LIST_LIMIT:
            self.problems.append(Problem(sec.name, at - sec.offset, message))


def _nonzero(data: FileData, start: int, end: int) -> bool:
    return bool(bytes(data[start:end]).strip(b"\0"))


def _arch_of(kind: int, sm: int, flags: int) -> CodeArch | None:
    if kind not in (KIND_ELF, KIND_PTX):
        return None
    variant = "a" if flags & FLAG_ARCH_SPECIFIC else "f" if flags & FLAG_FAMILY else ""
    return CodeArch(SASS if kind == KIND_ELF else PTX, sm, variant)


def _listing_name(w: _Walk, arch: CodeArch, identifier: str | None) -> str:
    """The name cuobjdump lists: <file stem>.<n>.<arch>.cubin|ptx (n counts
    per kind), or <identifier stem>.<arch>... when the entry names its
    source. cuobjdump spells PTX sm_XY too, and shows no `f` on a cubin."""
    kind = "cubin" if arch.kind == SASS else "ptx"
    w.ordinals[kind] += 1
    variant = "" if arch.kind == SASS and arch.variant == "f" else arch.variant
    spelled = f"sm_{arch.sm}{variant}"
    if identifier:
        return f"{os.path.splitext(os.path.basename(identifier))[0]}.{spelled}.{kind}"
    return f"{w.stem}.{w.ordinals[kind]}.{spelled}.{kind}"


def _scan_section(w: _Walk, sec: Section, role: str) -> tuple[int, int]:
    """Walk the containers of one section; returns (containers, entries) read."""
    data = w.data
    start, end = sec.offset, sec.offset + sec.filesize
    magic = struct.pack("<I", FATBIN_MAGIC)
    pos = start
    n_containers = n_entries = 0
    while pos < end:
        at = data.find(magic, pos, end)
        if at < 0:
            if _nonzero(data, pos, end):
                w.problem(sec, pos, f"{end - pos} bytes hold no fat binary container")
            break
        if at > pos and _nonzero(data, pos, at):
            w.problem(sec, pos, f"{at - pos} bytes before the next container are not padding")
        if end - at < CONTAINER.size:
            w.problem(sec, at, "container header truncated by the end of the section")
            break
        _m, version, hsize, body = CONTAINER.unpack_from(data, at)
        if hsize < CONTAINER.size or hsize > end - at:
            w.problem(sec, at, f"container header size {hsize} is impossible here; skipped")
            pos = at + 4
            continue
        first = at + hsize
        stop = first + body
        if body > end - first:
            w.problem(
                sec,
                at,
                f"container claims {body} bytes of entries, the section holds {end - first}",
            )
            stop = end
        index = w.n_containers
        w.n_containers += 1
        n = _scan_entries(w, sec, role, index, first, stop)
        if index < ENTRY_LIST_LIMIT:
            w.containers.append(Container(index, sec.name, at - start, hsize + body, version, n))
        n_containers += 1
        n_entries += n
        pos = max(stop, at + CONTAINER.size)
    return n_containers, n_entries


def _scan_entries(w: _Walk, sec: Section, role: str, container: int, p: int, stop: int) -> int:
    data = w.data
    n = 0
    while p < stop:
        if stop - p < ENTRY.size:
            if _nonzero(data, p, stop):
                w.problem(sec, p, "entry header truncated by the end of its container")
            break
        (
            kind,
            _ver,
            hsize,
            size,
            csize,
            _opt,
            minor,
            major,
            sm,
            id_off,
            id_len,
            flags,
            _r,
            usize,
        ) = ENTRY.unpack_from(data, p)
        if hsize < ENTRY.size or hsize > stop - p:
            w.problem(sec, p, f"entry header size {hsize} is impossible here")
            break
        payload = p + hsize
        truncated = size > stop - payload
        if truncated:
            w.problem(
                sec, p, f"entry claims {size} payload bytes, its container holds {stop - payload}"
            )
        identifier = None
        if id_len and id_off >= ENTRY.size and id_len <= hsize - min(id_off, hsize):
            raw = bytes(data[p + id_off : p + id_off + id_len]).split(b"\0", 1)[0]
            identifier = raw.decode("utf-8", "replace") or None
        both = flags & FLAG_LZ4 and flags & FLAG_ZSTD
        compression = (
            "unknown"
            if both
            else "lz4"
            if flags & FLAG_LZ4
            else "zstd"
            if flags & FLAG_ZSTD
            else "none"
        )
        ak = (kind, sm, flags & (FLAG_ARCH_SPECIFIC | FLAG_FAMILY))
        if ak in w.archs:
            arch, kind_name, key = w.archs[ak]
        else:
            arch = _arch_of(kind, sm, flags)
            kind_name = arch.kind if arch else "unknown"
            key = (role, kind_name, arch.name if arch else f"kind {kind}")
            if len(w.archs) < SUMMARY_KEYS:
                w.archs[ak] = (arch, kind_name, key)
        if key in w.keys or len(w.keys) < SUMMARY_KEYS:
            w.keys[key] += 1
        w.keys[(role, "compression", compression)] += 1
        if w.count < ENTRY_LIST_LIMIT:
            w.entries.append(
                Entry(
                    index=w.count,
                    name=_listing_name(w, arch, identifier) if arch else None,
                    kind=kind_name,
                    arch=arch,
                    role=role,
                    section=sec.name,
                    container=container,
                    offset=payload,
                    size=size,
                    compression=compression,
                    compressed_size=csize if compression != "none" else None,
                    uncompressed_size=usize if compression != "none" else None,
                    version=f"{major}.{minor}",
                    flags=flags,
                    identifier=identifier,
                    truncated=truncated,
                    stored=min(size, stop - payload),
                )
            )
        w.count += 1
        n += 1
        if truncated:
            break
        p = payload + size
    return n


def _summary(keys: Counter[tuple[str, str, str]]) -> dict[str, dict[str, dict[str, int]]]:
    out: dict[str, dict[str, dict[str, int]]] = {}
    order = {SASS: 0, PTX: 1}
    for (role, kind, name), n in sorted(
        keys.items(), key=lambda kv: (kv[0][0], kv[0][1], _arch_sort(kv[0][2]))
    ):
        group = "compression" if kind == "compression" else kind if kind in order else "unknown"
        out.setdefault(role, {"sass": {}, "ptx": {}, "compression": {}})
        out[role].setdefault(group, {})[name] = n
    return out


def _arch_sort(name: str) -> tuple[int, str]:
    digits = "".join(c for c in name if c.isdigit())
    return (int(digits) if digits and len(digits) < 8 else 0, name)


def walk(binary: Binary) -> CudaCode | None:
    """The fat binaries of an opened library (kernel names not read yet), or
    None when it has neither a fat binary nor a wrapper section."""
    # One section of each name, as a linker writes them: more (a crafted file
    # pointing many headers at the same bytes) would make the walk quadratic.
    first: dict[str, Section] = {}
    extra = 0
    for s in binary.sections:
        if s.name in SECTION_ROLES or s.name == WRAPPER_SECTION:
            extra += s.name in first
            first.setdefault(s.name, s)
    secs = [s for n, s in first.items() if n in SECTION_ROLES]
    wrap = [s for n, s in first.items() if n == WRAPPER_SECTION]
    if not secs and not wrap:
        return None
    stem = os.path.splitext(os.path.basename(binary.path))[0]
    w = _Walk(binary.data, stem)
    if extra:
        some = next(iter(first.values()))
        w.problem(
            some, some.offset, f"{extra} more sections of the same names; only the first read"
        )
    # cuobjdump -all order: the executable fat binaries, then the relocatable ones.
    ordered = sorted(secs, key=lambda s: (SECTION_ROLES[s.name] != EXECUTABLE, s.offset))
    sections: list[FatbinSection] = []
    for sec in ordered:
        role = SECTION_ROLES[sec.name]
        w.archs.clear()  # its summary keys name the role
        if sec.filesize < sec.size:
            w.problem(
                sec, sec.offset, f"only {sec.filesize} of its {sec.size} bytes are in the file"
            )
        nc, ne = _scan_section(w, sec, role)
        sections.append(FatbinSection(sec.name, role, sec.offset, sec.filesize, nc, ne))
    wrappers = _wrappers(binary, wrap, secs, w) if wrap else []
    return CudaCode(
        tuple(sections),
        tuple(w.containers),
        tuple(wrappers),
        tuple(w.entries),
        w.count,
        _summary(w.keys),
        tuple(w.problems),
    )


def _wrappers(binary: Binary, wrap: list[Section], secs: list[Section], w: _Walk) -> list[Wrapper]:
    """Each wrapper of .nvFatBinSegment, and the container it points at."""
    little = getattr(binary, "little", True)
    ptr = 8 if binary.bits == 64 else 4
    head = struct.Struct(("<" if little else ">") + "II" + ("Q" if ptr == 8 else "I"))
    size = 8 + 2 * ptr
    starts = {(c.section, c.offset): c.index for c in w.containers}
    raw: list[tuple[Section, int, int, int, int]] = []  # section, at, index, version, pointer
    for sec in wrap:
        end = sec.offset + sec.filesize
        for at in range(sec.offset, end - size + 1, size):
            if len(raw) >= ENTRY_LIST_LIMIT:
                break
            magic, version, pointer = head.unpack_from(binary.data, at)
            if magic != WRAPPER_MAGIC:
                w.problem(
                    sec, at, f"wrapper {len(raw)} has magic {magic:#x}, not {WRAPPER_MAGIC:#x}"
                )
                continue
            raw.append((sec, at, len(raw), version, pointer))
        if (end - sec.offset) % size:
            w.problem(sec, sec.offset, f"size {end - sec.offset} is not a multiple of {size}")
    # A pointer the file leaves 0 is filled by a RELATIVE relocation at load.
    unset = {sec.addr + (at - sec.offset) + 8 for sec, at, _i, _v, p in raw if p == 0}
    relocated: dict[int, int] = {}
    if unset and hasattr(binary, "relative_relocations"):
        relocated = binary.relative_relocations(unset)
    out: list[Wrapper] = []
    for sec, at, index, version, pointer in raw:
        address = pointer or relocated.get(sec.addr + (at - sec.offset) + 8)
        if not address and binary.kind == "object":
            # An object file's pointers are the static linker's to fill.
            out.append(Wrapper(index, version, None, None, None, None))
            continue
        target = next(
            (s for s in secs if address is not None and s.addr <= address < s.addr + s.size), None
        )
        if target is None:
            w.problem(
                sec,
                at,
                f"wrapper {index} points at {address:#x}, outside the fat binary sections"
                if address
                else f"wrapper {index} has no container pointer",
            )
            out.append(Wrapper(index, version, address or None, None, None, None))
            continue
        assert address is not None
        off = address - target.addr
        container = starts.get((target.name, off))
        if container is None:
            w.problem(
                sec,
                at,
                f"wrapper {index} points at {target.name}+{off:#x}, where no container starts",
            )
        out.append(Wrapper(index, version, address, target.name, off, container))
    return out

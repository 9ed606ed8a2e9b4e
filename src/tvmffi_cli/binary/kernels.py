"""Kernel names of fat binary entries (binary/fatbin.py): the STO_CUDA_ENTRY
symbols of a cubin, the `.entry` directives of PTX.

A compressed payload is decompressed first, only with the optional `lz4`
(LZ4 block) and `zstandard` (ZSTD frame) packages, only for the entries the
runtime loads, and only within a budget of decompressed bytes per file: the
header's uncompressed size is checked against what is left of it before
anything is allocated, and decompression never produces more than that
size. Everything else keeps its names unread, with the reason.

Why the optional packages: nvcc compresses PTX by default (ZSTD since CUDA
13) and large kernel packs compress their cubins (liger-cute-kernels'
17 MB LZ4 entry holds 81 MB), so without them most real libraries' kernel
names are unreadable; both are maintained C bindings with wheels for every
Python we support, imported only when a compressed entry is met.
"""

from __future__ import annotations

import importlib
import re
import struct
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import FormatError
from .fatbin_format import DECOMPRESS_LIMIT_ENV, EM_CUDA, KERNEL_LIST_LIMIT, STO_CUDA_ENTRY
from .fatbin_model import CudaCode, Entry

if TYPE_CHECKING:
    from .model import FileData

#: A kernel in PTX: `.entry name(` (after .visible / .weak).
_PTX_ENTRY = re.compile(rb"\.entry\s+([A-Za-z_$%][A-Za-z0-9_$%]*)")
_INSTALL = "pip install 'tvmffi[cuda]'"
_MODULES = {"lz4": ("lz4.block", "lz4"), "zstd": ("zstandard", "zstandard")}
#: An LZ4 block never expands a byte into more than about 255.
_LZ4_MAX_RATIO = 256


def _module(name: str) -> Any:
    """The decompressor module, or None when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def decompress(method: str, data: bytes, size: int) -> bytes:
    """`size` bytes decompressed from `data` (an LZ4 block or a ZSTD frame);
    FormatError when the module is missing or the data do not decompress to
    exactly that size. Never allocates more than `size` bytes of output."""
    if method not in _MODULES:
        raise FormatError(f"unknown compression {method!r}")
    modname, package = _MODULES[method]
    mod = _module(modname)
    if mod is None:
        raise FormatError(f"needs the {package} package ({_INSTALL})")
    if method == "lz4" and size > _LZ4_MAX_RATIO * len(data) + 64:
        # lz4 allocates the size it is told before it reads a byte
        raise FormatError(f"LZ4 cannot make {size} bytes of {len(data)}")
    try:
        if method == "lz4":
            out = mod.decompress(data, uncompressed_size=size)
        else:
            claimed = mod.frame_content_size(data)
            if claimed > size:
                raise FormatError(f"ZSTD frame claims {claimed} bytes, the entry {size}")
            out = mod.ZstdDecompressor().decompress(data, max_output_size=size)
    except FormatError:
        raise
    except Exception as e:  # LZ4BlockError, ZstdError: corrupt or lying payload
        raise FormatError(f"the {method} payload does not decompress ({e})") from None
    if len(out) != size:
        raise FormatError(f"decompressed to {len(out)} bytes, the entry claims {size}")
    return bytes(out)


def _mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _cubin_kernels(data: bytes) -> list[str]:
    from . import parse_bytes
    from .elf import ElfBinary

    if data[:4] != b"\x7fELF":
        raise FormatError("the payload is not an ELF file")
    b = parse_bytes(data, "<cubin>")
    if not isinstance(b, ElfBinary) or b.machine != EM_CUDA:
        raise FormatError(f"the payload is an ELF for {b.arch}, not a cubin")
    try:
        return b.functions_with_other(STO_CUDA_ENTRY)
    except (struct.error, ValueError, IndexError, OverflowError) as e:
        raise FormatError(f"its symbol table is unreadable ({type(e).__name__})") from None


def _ptx_kernels(data: bytes) -> list[str]:
    return [m.decode("ascii") for m in _PTX_ENTRY.findall(data)]


def _names(data: FileData, e: Entry, budget: int, loaded: bool) -> tuple[Entry, int]:
    """The entry with its kernel names (or why not), and the decompressed
    bytes spent on it."""
    spent = 0
    if e.compression == "none":
        raw = bytes(data[e.offset : e.offset + e.stored])
    else:
        what = f"compressed ({e.compression})"
        want = e.uncompressed_size or 0
        if not loaded:
            return replace(e, kernels_note=f"{what}: input of the device link, not read"), 0
        if e.compression == "unknown" or want <= 0:
            return replace(e, kernels_note=f"{what}: no known way to decompress it"), 0
        if want > budget:
            return replace(
                e,
                kernels_note=f"{what}: {_mib(want)} decompressed, over the {_mib(max(budget, 0))} "
                f"left of the decompression budget (${DECOMPRESS_LIMIT_ENV})",
            ), 0
        packed = min(e.compressed_size or e.stored, e.stored)
        try:
            raw = decompress(e.compression, bytes(data[e.offset : e.offset + packed]), want)
        except FormatError as err:
            # Counted all the same: many lying entries cannot add up past the budget.
            return replace(e, kernels_note=f"{what}: {err}"), want
        spent = want
    try:
        names = _cubin_kernels(raw) if e.kind == "sass" else _ptx_kernels(raw)
    except FormatError as err:
        return replace(e, kernels_note=f"kernel names unreadable: {err}"), spent
    return replace(e, kernels=tuple(names[:KERNEL_LIST_LIMIT]), kernel_count=len(names)), spent


def read_kernel_names(data: FileData, code: CudaCode, limit: int) -> CudaCode:
    """`code` with the kernel names of its entries filled in."""
    role = code.loaded_role
    used = 0
    out: list[Entry] = []
    for e in code.entries:
        if e.kind == "unknown":
            out.append(replace(e, kernels_note="unknown kind of entry"))
            continue
        if e.truncated:
            out.append(replace(e, kernels_note="the payload is truncated"))
            continue
        new, spent = _names(data, e, limit - used, e.role == role)
        used += spent
        out.append(new)
    return replace(code, entries=tuple(out), decompressed_bytes=used, limit=limit)

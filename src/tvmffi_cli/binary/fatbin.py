"""CUDA code inside host libraries: the fat binaries nvcc links in
(`.nv_fatbin`, `__nv_relfatbin`, and the `.nvFatBinSegment` wrappers), read
from the bytes without running anything. The public face of
fatbin_format.py (facts), fatbin_model.py (what is read), fatbin_walk.py
(the bounded walk) and kernels.py (kernel names, decompression);
cudaarch.py says which GPU runs which code.

    read(binary) -> CudaCode | None      read_path(path)
    CudaCode.listing()                   as `cuobjdump --list-elf --list-ptx` lists it
    CudaCode.support((9, 0))             SASS for it, PTX JIT, or nothing usable
    support_from_json(report["cuda"], cc)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .fatbin_format import (
    CONTAINER,
    DECOMPRESS_LIMIT,
    DECOMPRESS_LIMIT_ENV,
    ENTRY,
    ENTRY_LIST_LIMIT,
    EXECUTABLE,
    FATBIN_MAGIC,
    FATBIN_SECTION,
    FLAG_ARCH_SPECIFIC,
    FLAG_DEBUG,
    FLAG_FAMILY,
    FLAG_LZ4,
    FLAG_ZSTD,
    KERNEL_LIST_LIMIT,
    KIND_ELF,
    KIND_PTX,
    RELFATBIN_SECTION,
    RELOCATABLE,
    SECTION_ROLES,
    WRAPPER_MAGIC,
    WRAPPER_SECTION,
    decompress_limit,
)

if TYPE_CHECKING:
    from .cudaarch import Support
    from .fatbin_model import CudaCode, CudaJson
    from .model import Binary


def read(binary: Binary, names: bool = True) -> CudaCode | None:
    """The CUDA code of an opened library, or None when it has none.
    names: read kernel names (decompressing within the budget)."""
    # Most libraries have no CUDA code: they pay for nothing but this look.
    if not any(s.name in SECTION_ROLES or s.name == WRAPPER_SECTION for s in binary.sections):
        return None
    from .fatbin_walk import walk

    code = walk(binary)
    if code is not None and names:
        from .kernels import read_kernel_names

        code = read_kernel_names(binary.data, code, decompress_limit())
    return code


def support_from_json(doc: CudaJson, cc: tuple[int, int]) -> Support:
    """device_support() of a CudaCode.to_json() document (inspect's "cuda")."""
    from .cudaarch import CodeArch, device_support

    role = doc.get("loaded")
    archs = [
        CodeArch.parse(e["arch"])
        for e in doc.get("entries") or ()
        if e.get("role") == role and e["arch"]
    ]
    return device_support(archs, cc)


def read_path(path: str, names: bool = True) -> CudaCode | None:
    """read() of a library file (FormatError when it is not one)."""
    from . import open_binary

    with open_binary(path) as b:
        return read(b, names)


__all__ = [
    "CONTAINER",
    "DECOMPRESS_LIMIT",
    "DECOMPRESS_LIMIT_ENV",
    "ENTRY",
    "ENTRY_LIST_LIMIT",
    "EXECUTABLE",
    "FATBIN_MAGIC",
    "FATBIN_SECTION",
    "FLAG_ARCH_SPECIFIC",
    "FLAG_DEBUG",
    "FLAG_FAMILY",
    "FLAG_LZ4",
    "FLAG_ZSTD",
    "KERNEL_LIST_LIMIT",
    "KIND_ELF",
    "KIND_PTX",
    "RELFATBIN_SECTION",
    "RELOCATABLE",
    "WRAPPER_MAGIC",
    "WRAPPER_SECTION",
    "decompress_limit",
    "read",
    "read_path",
    "support_from_json",
]

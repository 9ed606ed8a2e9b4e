"""Tensors of an exact layout (child side of the kernel probes).

The variant tensors of probe_tensors.py fill one page each with zeros; the
kernel probes (probe_kernel.py) need more: a shape, strides and a byte
offset chosen per call, values that tell elements apart, data of any size
ending at a guard page (a read or write one element past the memory a view
spans faults), and the values read back through the view's own strides
after the call. Element values are small integers, exact in every dtype
used, so a kernel that sums in another order gives the same bits.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from ctypes import byref, c_int64, c_void_p
from dataclasses import dataclass
from typing import Any, Sequence

from ..abi.constants import kTVMFFIDLTensorPtr, kTVMFFITensor
from ..abi.devices import kDLCPU
from ..abi.dtypes import kDLBfloat, kDLFloat, kDLInt, kDLUInt
from ..abi.structs import DLManagedTensor
from .probe_memory import _LIBC, CannotSynthesize, no_access

PAGE = mmap.PAGESIZE
#: Regions of more pages than this give their memory back on reset()
#: (madvise: the mapping stays, reading zeros, for a library that kept it).
KEEP_PAGES = 64
_MADV_DONTNEED = 4
_LIBC.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]

#: (code, bits) -> struct format of one element; bfloat16 is the upper half
#: of a float32 (written by hand in _encode).
_FORMATS = {
    (kDLFloat, 32): "f",
    (kDLFloat, 64): "d",
    (kDLFloat, 16): "e",
    (kDLInt, 8): "b",
    (kDLInt, 16): "h",
    (kDLInt, 32): "i",
    (kDLInt, 64): "q",
    (kDLUInt, 8): "B",
}
FLOAT32 = (kDLFloat, 32)


def supported(dtype: tuple[int, int]) -> bool:
    return dtype in _FORMATS or dtype == (kDLBfloat, 16)


def itemsize(dtype: tuple[int, int]) -> int:
    return dtype[1] // 8


def encode(dtype: tuple[int, int], values: Sequence[int]) -> bytes:
    """Bytes of `values` (small integers) as elements of `dtype`."""
    if dtype == (kDLBfloat, 16):
        raw = struct.pack(f"<{len(values)}f", *values)
        return b"".join(raw[i + 2 : i + 4] for i in range(0, len(raw), 4))
    return struct.pack(f"<{len(values)}{_FORMATS[dtype]}", *values)


@dataclass(frozen=True)
class View:
    """A tensor's layout: shape and strides in elements, byte offset, and how
    many elements of memory back it (`span`, from the data pointer)."""

    shape: tuple[int, ...]
    strides: tuple[int, ...]
    span: int
    offset: int = 0  # elements before the first one (byte_offset / itemsize)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def dense(self) -> bool:
        """Row-major contiguous (the strides a contiguous copy has)."""
        return self.strides == contiguous(self.shape).strides

    def positions(self) -> list[int]:
        """Memory index (in elements, from data + byte_offset) of every
        logical element, row-major."""
        out = [0]
        for d, s in zip(self.shape, self.strides):
            out = [p + i * s for p in out for i in range(d)]
        return out


def contiguous(shape: Sequence[int]) -> View:
    strides = []
    acc = 1
    for d in reversed(shape):
        strides.append(acc)
        acc *= d
    n = acc
    return View(tuple(shape), tuple(reversed(strides)), n)


class Memory:
    """Data regions ending at a PROT_NONE page (and starting after one), or
    with `padded`, in ordinary memory with a page of readable slack on both
    sides. Regions are mapped once per size and handed out again after
    reset() (a library that kept a tensor sees other values, never unmapped
    memory)."""

    def __init__(self) -> None:
        self._free: dict[tuple[int, bool], list[int]] = {}
        self._used: list[tuple[tuple[int, bool], int]] = []

    def take(self, nbytes: int, padded: bool = False) -> int:
        """Address of nbytes of zeroed memory ending at a guard page (or, padded,
        followed by a page of zeroed readable memory)."""
        nbytes = max(nbytes, 1)
        pages = (nbytes + PAGE - 1) // PAGE
        key = (pages, padded)
        free = self._free.setdefault(key, [])
        if free:
            base = free.pop()
            ctypes.memset(
                base - PAGE if padded else base, 0, (pages + 2 if padded else pages) * PAGE
            )
        else:
            base = self._map(pages, padded)  # zeroed by the kernel
        self._used.append((key, base))
        return base + pages * PAGE - nbytes

    def _map(self, pages: int, padded: bool) -> int:
        size = (pages + 2) * PAGE
        prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        addr = _LIBC.mmap(None, size, prot_rw, flags, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise CannotSynthesize("mmap of tensor memory failed")
        if not padded and (
            not no_access(addr, PAGE) or not no_access(addr + (pages + 1) * PAGE, PAGE)
        ):
            raise CannotSynthesize("mprotect of tensor memory failed")
        return int(addr) + PAGE

    def reset(self) -> None:
        for key, base in self._used:
            if key[0] > KEEP_PAGES:
                _LIBC.madvise(base, key[0] * PAGE, _MADV_DONTNEED)
            self._free.setdefault(key, []).append(base)
        self._used.clear()


class Tensor:
    """One tensor argument: its view, dtype and memory (`base`: the data
    pointer; elements start at base + offset * itemsize)."""

    def __init__(self, mem: Memory, dtype: tuple[int, int], view: View, padded: bool) -> None:
        self.mem = mem
        self.dtype = dtype
        self.view = view
        self.size = itemsize(dtype)
        self.base = mem.take((view.offset + view.span) * self.size, padded)

    @property
    def first(self) -> int:
        return self.base + self.view.offset * self.size

    def fill(self, values: Sequence[int], poison: int = 0) -> None:
        """Logical element k = values[k]; memory no element uses = poison
        values (distinct from the logical ones, so reading it shows)."""
        span = self.view.offset + self.view.span
        if poison:
            pat = encode(self.dtype, [poison + k % 5 for k in range(min(span, 64))])
            whole = (pat * (span // 64 + 1))[: span * self.size]
            ctypes.memmove(self.base, whole, len(whole))
        if self.view.dense:
            raw = encode(self.dtype, values[: self.view.span])
            ctypes.memmove(self.first, raw, len(raw))
            return
        for pos, v in zip(self.view.positions(), values):
            raw = encode(self.dtype, [v])
            ctypes.memmove(self.first + pos * self.size, raw, self.size)

    def fill_bytes(self, raw: bytes) -> None:
        """Contiguous data from bytes (large tensors of the thread and
        scaling probes)."""
        ctypes.memmove(self.first, raw, min(len(raw), self.view.span * self.size))

    def logical(self) -> bytes:
        """The elements as the view sees them, row-major (of a view its memory
        backs whole: the huge views of the count probe are read by memory())."""
        if self.view.dense:
            return ctypes.string_at(self.first, min(self.view.numel, self.view.span) * self.size)
        return b"".join(
            ctypes.string_at(self.first + p * self.size, self.size) for p in self.view.positions()
        )

    def snapshot(self) -> bytes:
        """The elements after a call: all of them through the view, or the
        memory behind a view larger than its memory (the count probe)."""
        if self.view.numel <= self.view.span:
            return self.logical()
        return self.memory()

    def memory(self) -> bytes:
        """Every byte the view spans (fast for large contiguous tensors)."""
        return ctypes.string_at(self.first, self.view.span * self.size)


def int64s(mem: Memory, values: Sequence[int]) -> int:
    """Address of int64 `values` ending at a guard page: a tensor's shape or
    strides. A kernel reading shape[ndim] (taking a 1-d tensor for a 2-d
    one) faults there on every run, instead of reading whatever memory
    follows, which makes it crash or not from one run to the next."""
    raw = struct.pack(f"<{len(values)}q", *values)
    addr = mem.take(len(raw))
    ctypes.memmove(addr, raw, len(raw))
    return addr


def tensor_any(p: Any, t: Tensor, as_ptr: bool, keep: list[Any]) -> bytes:
    """Raw bytes of an Any for tensor t: a borrowed DLTensor* (as_ptr) or an
    owned ffi.Tensor (TVMFFITensorFromDLPack; the caller releases it). The
    ctypes structs go to `keep`, which must outlive every use of the tensor."""
    v = t.view
    m = DLManagedTensor()
    d = m.dl_tensor
    d.data = t.base
    d.device.device_type, d.device.device_id = kDLCPU, 0
    d.ndim = len(v.shape)
    d.dtype.code, d.dtype.bits, d.dtype.lanes = t.dtype[0], t.dtype[1], 1
    d.shape = ctypes.cast(int64s(t.mem, v.shape), ctypes.POINTER(c_int64))
    d.strides = ctypes.cast(int64s(t.mem, v.strides), ctypes.POINTER(c_int64))
    d.byte_offset = v.offset * t.size
    keep.append(m)
    if as_ptr:
        return struct.pack("<iIQ", kTVMFFIDLTensorPtr, 0, ctypes.addressof(m))
    out = c_void_p()
    if p.c.TVMFFITensorFromDLPack(ctypes.addressof(m), 0, 0, byref(out)) != 0 or not out.value:
        raise CannotSynthesize(f"wrapping a tensor failed: {p.take_error()}")
    return struct.pack("<iIQ", kTVMFFITensor, 0, out.value)

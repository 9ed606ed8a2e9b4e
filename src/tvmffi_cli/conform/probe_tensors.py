"""Tensors at the edge (child side of the conform probe, and `call --guard`).

Every tensor the probe passes has its data in one page that sits between
two PROT_NONE guard pages, and fills that page: a read or write one element
past either end faults at once, inside the call, instead of touching
someone else's memory. Variants vary what a kernel must check before it
touches the data: every DLPack type code the ABI names (abi/dtypes.py),
ndim, strides, a byte offset, and a non-CPU device whose data pointer is
unreadable (a kernel must refuse it, never read it).

A "padded" tensor is the same tensor in ordinary memory with a page of
slack on both sides: when the guarded call crashes and the padded one does
not, the crash was an access outside the tensor's data.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from ctypes import POINTER, byref, c_int64, c_void_p
from dataclasses import dataclass
from typing import Any, Callable

from ..abi.constants import kTVMFFIDLTensorPtr, kTVMFFITensor
from ..abi.devices import kDLCPU, kDLCUDA
from ..abi.dtypes import DTYPE_NAMES, FIXED_BITS, kDLBool, kDLFloat, kDLInt, kDLOpaqueHandle
from ..abi.dtypes import format_dtype as _format_dtype
from ..abi.structs import DLManagedTensor
from .probe_layouts import Memory, int64s
from .probe_memory import _LIBC, CannotSynthesize, no_access, note_device_range

PAGE = mmap.PAGESIZE
#: Data pages in the pool: one per cached tensor (COPIES per variant); a
#: tensor a library keeps stays readable: its page is refilled, never unmapped.
SLOTS = 96
#: Readable pages on each side of a padded (re-run) tensor's data page.
PADDED_SLACK = 8
#: Distinct tensors per variant (a call with several tensor arguments gets
#: distinct memory for each).
COPIES = 4
#: Bytes before the first element in the "offset" variant (the data pointer
#: itself then points into the guard page: honouring byte_offset is required).
OFFSET = 64

#: Bits used for each type code (one representative width per code).
_BITS = {0: 32, 1: 8, kDLFloat: 64, kDLOpaqueHandle: 64, 4: 16, 5: 64, kDLBool: 8}
#: Widths kernels switch on besides those: 8- and 64-bit ints, half floats
#: (a kernel reading every element as 4 bytes overruns a 16-bit tensor).
_MORE_WIDTHS = ((kDLInt, 8), (kDLInt, 64), (kDLFloat, 16))


@dataclass(frozen=True)
class Variant:
    dtype: tuple[int, int, int]
    #: 0: the dimensions of the function's base layout (1, or 2 for a kernel
    #: that takes only 2-d tensors: ProbeValues.base_ndim)
    ndim: int = 0
    strided: bool = False
    offset: int = 0
    device: int = kDLCPU


BASE = Variant((kDLFloat, 32, 1))


def _dtype_variants() -> dict[str, Variant]:
    # The base tensor itself first: a function without metadata has no
    # "valid" call with guarded float32 tensors of its own (the signature
    # search calls with ordinary memory).
    out: dict[str, Variant] = {_format_dtype(*BASE.dtype): BASE}
    for code, name in sorted(DTYPE_NAMES.items()):
        bits = FIXED_BITS.get(name) or _BITS.get(code, 8)
        if (code, bits) == (kDLFloat, 32):
            continue  # the base tensor, above
        out[_format_dtype(code, bits, 1)] = Variant((code, bits, 1))
    for code, bits in _MORE_WIDTHS:
        out[_format_dtype(code, bits, 1)] = Variant((code, bits, 1))
    return out


#: variant name -> Variant; the names are step suffixes ("tensor:complex64").
VARIANTS: dict[str, Variant] = {
    **_dtype_variants(),
    "ndim2": Variant(BASE.dtype, ndim=2),
    "ndim3": Variant(BASE.dtype, ndim=3),
    "strided": Variant(BASE.dtype, ndim=2, strided=True),
    "offset": Variant(BASE.dtype, offset=OFFSET),
    "cuda": Variant(BASE.dtype, device=kDLCUDA),
}


def describe(name: str) -> str:
    """Words for a variant in findings."""
    if name.startswith("shrink:"):
        return f"tensor argument {name.split(':')[1]} shorter than the others"
    v = VARIANTS.get(name)
    if v is None:
        return "a float32 tensor"
    if v.device != kDLCPU:
        return "a tensor on a CUDA device (its data is not CPU memory)"
    if name in ("ndim2", "ndim3"):
        return f"a {v.ndim}-d float32 tensor"
    if name == "strided":
        return "a non-contiguous (transposed) float32 tensor"
    if name == "offset":
        return f"a float32 tensor with byte_offset {OFFSET}"
    return f"a {name} tensor"


def _shape(v: Variant, nbytes: int, ndim: int) -> tuple[list[int], list[int]]:
    """(shape, strides); strides always explicit (the official TensorView
    refuses a NULL strides pointer; DLPack 1.x producers fill it)."""
    bits = v.dtype[1] * max(v.dtype[2], 1)
    n = max(1, nbytes * 8 // max(bits, 1))
    if ndim == 1:
        return [n], [1]
    side = max(1, int(round(n ** (1.0 / ndim))))
    while side**ndim > n:
        side -= 1
    dims = [side] * ndim
    if not v.strided:
        return dims, [side**k for k in reversed(range(ndim))]
    # Column-major: element (i, j) at i + j*side; a kernel assuming row-major
    # order still stays inside the data, one ignoring strides may not.
    strides = [side**k for k in range(ndim)]
    return dims, strides


def _prod(dims: list[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n


class TensorPool:
    """[guard][data][guard][data]...[guard]: SLOTS data pages, each between two
    PROT_NONE pages. Lazily mapped on first use."""

    def __init__(self) -> None:
        self.base: int | None = None
        self.i = 0
        self.keep: list[Any] = []  # DLManagedTensor structs, shapes: live as long as we do
        # (variant, copy) -> (page, [(address, pristine bytes)] of the struct,
        # shape and strides): building ctypes structs cost more than the call,
        # so each is built once and restored before every use.
        self._cache: dict[tuple[str, int], tuple[int, list[tuple[int, bytes]]]] = {}
        self._uses = 0
        self._parts: list[tuple[int, bytes]] = []
        # Shapes and strides end at guard pages (probe_layouts.int64s): a
        # kernel reading past them (assuming more dimensions) faults in every
        # run, instead of reading whatever the heap held next to them.
        self.meta = Memory()  # never handed out again
        #: nbytes -> address of device memory for the CUDA variant, once the
        #: probe child has a CUDA device (conform/probe_gpu.py); else the
        #: variant's data pointer is a guard page (not CPU memory either).
        self.device_alloc: Callable[[int], int] | None = None
        #: (address, size) of the PROT_NONE pages device tensors point at without CUDA
        self.fake_device: tuple[int, int] | None = None

    def _map(self, slots: int = SLOTS, slack: int = 0) -> int:
        """[guard]([slack][data][slack][guard]) x slots; the first data page."""
        step = 2 + 2 * slack
        size = (step * slots + 1) * PAGE
        prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        addr: int | None = _LIBC.mmap(None, size, prot_rw, flags, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise CannotSynthesize("mmap of the tensor pool failed")
        for k in range(slots + 1):
            if not no_access(addr + step * k * PAGE, PAGE):
                raise CannotSynthesize("mprotect of the tensor pool failed")
        return int(addr) + (1 + slack) * PAGE

    def page(self, padded: bool) -> int:
        """A zeroed data page: guarded on both sides, or (padded) with
        PADDED_SLACK pages of readable slack on both sides (then guard pages: what a call reads
        further away is the same in every run)."""
        if padded:
            # Fresh zero pages, kept mapped as the pool is; slack for a kernel
            # that reads the data as a wider dtype (int8 read as int64: 8x).
            return self._map(1, PADDED_SLACK)
        if self.base is None:
            self.base = self._map()
        addr = self.base + 2 * (self.i % SLOTS) * PAGE
        self.i += 1
        ctypes.memset(addr, 0, PAGE)
        return addr

    def managed(self, name: str, padded: bool = False, base_ndim: int = 1) -> int:
        """Address of a DLManagedTensor of variant `name` (no deleter: we own it),
        its data zeroed and its fields as built (a callee may have written them).
        base_ndim: the dimensions of a variant that does not fix them."""
        if padded:
            return self._build(name, self.page(True), True, base_ndim)
        if VARIANTS.get(name, BASE).device != kDLCPU:
            # Never from the cache: its data is device memory of this process's
            # CUDA context (or a stand-in pointer before CUDA started), which a
            # tensor built earlier (in the zygote, before the fork) does not have.
            return self._build(name, self.page(False), False, base_ndim)
        self._uses += 1
        key = (f"{name}/{base_ndim}", self._uses % COPIES)
        got = self._cache.get(key)
        if got is None:
            m = self._build(name, self.page(False), False, base_ndim)
            got = (self.keep[-2], self._parts)
            self._cache[key] = got
            return m
        page, parts = got
        ctypes.memset(page, 0, PAGE)
        for addr, raw in parts:
            ctypes.memmove(addr, raw, len(raw))
        return parts[0][0]

    def _build(self, name: str, page: int, padded: bool, base_ndim: int) -> int:
        v = VARIANTS.get(name, BASE)
        ndim = v.ndim or base_ndim
        dims, strides = _shape(v, PAGE, ndim)
        m = DLManagedTensor()
        t = m.dl_tensor
        bits = v.dtype[1] * max(v.dtype[2], 1)
        used = (_prod(dims) * bits + 7) // 8
        # The last element ends at the guard page (a 3-d cube may not fill it).
        t.data = page + (PAGE - used if v.offset == 0 else -v.offset)
        if v.device != kDLCPU and not padded:
            if self.device_alloc is not None:
                t.data = self.device_alloc(used)
            else:
                t.data = self._no_host_memory(used)
        t.device.device_type, t.device.device_id = v.device, 0
        t.ndim = ndim
        t.dtype.code, t.dtype.bits, t.dtype.lanes = v.dtype
        # shape and strides end at guard pages (probe_layouts.int64s).
        shape, st = int64s(self.meta, dims), int64s(self.meta, strides)
        t.shape = ctypes.cast(shape, POINTER(c_int64))
        t.strides = ctypes.cast(st, POINTER(c_int64))
        t.byte_offset = v.offset
        self.keep.extend([page, m])
        # (address, pristine bytes) of the struct, shape and strides
        self._parts = [
            (ctypes.addressof(m), bytes(m)),
            (shape, ctypes.string_at(shape, 8 * ndim)),
            (st, ctypes.string_at(st, 8 * ndim)),
        ]
        return ctypes.addressof(m)

    def _no_host_memory(self, nbytes: int) -> int:
        """Stand-in data of a device tensor without CUDA: pages of their own
        that no access may touch (not a pool slot's guard page, where a CPU
        tensor's overrun would then pass for a device-memory dereference)."""
        size = max(PAGE, (nbytes + PAGE - 1) // PAGE * PAGE)
        if self.fake_device is None or self.fake_device[1] < size:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
            addr: int | None = _LIBC.mmap(None, size, 0, flags, -1, 0)
            if addr in (None, ctypes.c_void_p(-1).value):
                raise CannotSynthesize("mmap of a device tensor's stand-in pages failed")
            self.fake_device = (int(addr), size)
            note_device_range(int(addr), size)
        return self.fake_device[0]


def tensor_any(p: Any, name: str, padded: bool, as_ptr: bool = False) -> bytes:
    """Raw bytes of an Any holding a guarded tensor of variant `name`: an owned
    ffi.Tensor (TVMFFITensorFromDLPack), or (as_ptr) a borrowed DLTensor*.
    p: the probe's ProbeValues (its `tensors` pool, raw C API and errors)."""
    m = p.tensors.managed(name, padded, p.base_ndim)
    if as_ptr:
        return struct.pack("<iIQ", kTVMFFIDLTensorPtr, 0, m)  # dl_tensor is the first field
    out = c_void_p()
    if p.c.TVMFFITensorFromDLPack(m, 0, 0, byref(out)) != 0 or not out.value:
        raise CannotSynthesize(f"wrapping a tensor failed: {p.take_error()}")
    return struct.pack("<iIQ", kTVMFFITensor, 0, out.value)

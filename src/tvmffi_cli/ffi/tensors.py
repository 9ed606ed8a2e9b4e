"""The NumPy / DLPack bridge: DLTensor views of NumPy arrays, owned ffi.Tensors
made from them (DLManagedTensorVersioned), NumPy views of CPU tensors, a
NumPy-backed CPU allocator for runtimes that have none; CUDA tensors copied
from NumPy arrays (DeviceTensor, through ffi/cuda.py) and any object with
`__dlpack__` (torch, cupy, jax: on any device) taken without a copy.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_void_p
from typing import TYPE_CHECKING, Any, Optional

from ..abi import structs as abi
from ..abi.structs import DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor
from . import mldtypes
from .errors import _kind_of
from .objects import DataType, Triple

if TYPE_CHECKING:
    from .cuda import Context, DeviceBuffer
    from .runtime import Runtime

Array = Any  # a numpy.ndarray (numpy is imported only when used)


class _ArrayHolder:
    """Exposes __array_interface__ for Tensor.numpy(); as the array's base it
    keeps the Tensor (and thus the memory) alive."""

    def __init__(self, tensor: object, iface: dict[str, Any]) -> None:
        # iface: numpy's __array_interface__ protocol value (a free-form dict there)
        self.tensor = tensor
        self.__array_interface__ = iface


def _numpy_typestr(dt: DataType) -> str:
    code, bits, lanes = dt.code, dt.bits, dt.lanes
    if mldtypes.name_of_dl(code, bits, lanes):  # raw bytes, viewed as ml_dtypes in tensor_numpy
        return f"|V{bits // 8}"
    if lanes != 1:
        raise TypeError(f"dtype {dt} has {lanes} lanes; NumPy has no vector types")
    if code == abi.kDLBool:
        return "|b1"
    kind = {abi.kDLInt: "i", abi.kDLUInt: "u", abi.kDLFloat: "f", abi.kDLComplex: "c"}.get(code)
    if kind is None or bits % 8 or bits == 0:
        raise TypeError(f"dtype {dt} has no NumPy equivalent")
    return f"{'|' if bits == 8 else '<'}{kind}{bits // 8}"


def _dl_dtype_of_numpy(np_dtype: Any) -> Triple:
    ml = mldtypes.dl_of_numpy(np_dtype)
    if ml is not None:
        return ml
    k = np_dtype.kind
    if k == "b":
        return (abi.kDLBool, 8, 1)
    code = {"i": abi.kDLInt, "u": abi.kDLUInt, "f": abi.kDLFloat, "c": abi.kDLComplex}.get(k)
    if code is None or np_dtype.byteorder == ">":
        raise TypeError(f"NumPy dtype {np_dtype} cannot be passed as a tensor")
    return (code, np_dtype.itemsize * 8, 1)


def _numpy_layout(arr: Array) -> tuple[list[int], list[int]]:
    """(shape, strides in elements) of an array, or raise TypeError."""
    item = arr.itemsize
    strides = []
    for s in arr.strides:
        if item and s % item:
            raise TypeError("array strides are not a multiple of its item size")
        strides.append(s // item if item else 0)
    return list(arr.shape), strides


def _fill_dltensor(dl: DLTensor, arr: Array, keep: list[Any]) -> None:
    shape, strides = _numpy_layout(arr)
    nd = arr.ndim
    shape_arr = (ctypes.c_int64 * max(nd, 1))(*shape)
    strides_arr = (ctypes.c_int64 * max(nd, 1))(*strides)
    keep.append((shape_arr, strides_arr))
    dl.data = arr.ctypes.data if arr.size else (arr.ctypes.data or None)
    dl.device = DLDevice(abi.kDLCPU, 0)
    dl.ndim = nd
    dl.dtype = DLDataType(*_dl_dtype_of_numpy(arr.dtype))
    dl.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
    dl.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
    dl.byte_offset = 0


def dltensor_of_numpy(arr: Array, keep: list[Any]) -> DLTensor:
    """A DLTensor viewing `arr` (zero-copy); it and `arr` are appended to keep."""
    dl = DLTensor()
    _fill_dltensor(dl, arr, keep)
    keep.append((dl, arr))
    return dl


# Owned tensors made from NumPy arrays: manager_ctx token -> (array, struct,
# shape/strides). The runtime's deleter call drops the entry (and the array).
_dlpack_keep: dict[int, tuple[Array, DLManagedTensorVersioned, list[Any]]] = {}
_dlpack_lock = threading.Lock()
_dlpack_next = [1]


def _dlpack_deleter_impl(ptr: Any) -> None:
    try:
        token = ptr.contents.manager_ctx
        with _dlpack_lock:
            _dlpack_keep.pop(token, None)
    except Exception:
        pass


_DLPACK_DELETER = abi.DLManagedTensorVersionedDeleter(_dlpack_deleter_impl)


def _managed_from_numpy(arr: Array) -> tuple[DLManagedTensorVersioned, int]:
    """A DLManagedTensorVersioned viewing `arr`; registered in _dlpack_keep until
    its deleter runs (or the caller drops it on failure). Returns (mt, token)."""
    keep: list[Any] = []
    mt = DLManagedTensorVersioned()
    mt.version.major = abi.DLPACK_MAJOR_VERSION
    mt.version.minor = abi.DLPACK_MINOR_VERSION
    mt.flags = 0 if arr.flags.writeable else abi.DLPACK_FLAG_BITMASK_READ_ONLY
    _fill_dltensor(mt.dl_tensor, arr, keep)
    mt.deleter = _DLPACK_DELETER
    with _dlpack_lock:
        token = _dlpack_next[0]
        _dlpack_next[0] += 1
        _dlpack_keep[token] = (arr, mt, keep)
    mt.manager_ctx = token
    return mt, token


def tensor_from_numpy(rt: Runtime, arr: Array, owned: Optional[list[int]] = None) -> int:
    """Owned ffi.Tensor handle viewing `arr` without copying (the Tensor keeps
    the array alive until the runtime releases it)."""
    mt, token = _managed_from_numpy(arr)
    h = c_void_p()
    rc = rt.TVMFFITensorFromDLPackVersioned(byref(mt), 0, 0, byref(h))
    if rc != 0:
        with _dlpack_lock:
            _dlpack_keep.pop(token, None)
        raise rt.take_error()
    handle = h.value or 0  # rc 0 means the runtime stored a tensor
    if owned is not None:
        owned.append(handle)
    return handle


_SetErrorFn = ctypes.CFUNCTYPE(None, c_void_p, ctypes.c_char_p, ctypes.c_char_p)


def _numpy_allocator(proto: Any, out: Any, error_ctx: Any, set_error: Any) -> int:
    try:
        import numpy as np

        p = proto.contents
        if p.device.device_type != abi.kDLCPU:
            raise ValueError("the NumPy allocator only allocates on the CPU")
        dt = p.dtype
        typestr = _numpy_typestr(
            DataType(f"{dt.code}:{dt.bits}:{dt.lanes}", (dt.code, dt.bits, dt.lanes))
        )
        shape = [p.shape[i] for i in range(p.ndim)]
        arr = np.empty(shape, dtype=typestr)
        mt, _token = _managed_from_numpy(arr)
        out[0] = ctypes.pointer(mt)
        return 0
    except Exception as e:
        if set_error:
            _SetErrorFn(set_error)(error_ctx, _kind_of(e).encode(), str(e).encode())
        return -1


_NUMPY_ALLOCATOR = abi.DLPackManagedTensorAllocator(_numpy_allocator)


def ensure_cpu_allocator(rt: Runtime) -> bool:
    """Give the runtime a NumPy-backed CPU allocator for TVMFFIEnvTensorAlloc
    when it has none (the official runtime starts without one)."""
    if rt.TVMFFIEnvGetDLPackManagedTensorAllocator():
        return False
    rt.check(
        rt.TVMFFIEnvSetDLPackManagedTensorAllocator(
            ctypes.cast(_NUMPY_ALLOCATOR, c_void_p), 1, None
        )
    )
    return True


def tensor_numpy(tensor: Any) -> Array:
    """Zero-copy NumPy view of a CPU Tensor; the view keeps the tensor alive."""
    import numpy as np

    dl = tensor.dltensor
    if dl.device.device_type not in (abi.kDLCPU, abi.kDLCUDAHost, abi.kDLROCMHost):
        raise ValueError(f"tensor is on {tensor.device}, not on the CPU")
    typestr = _numpy_typestr(tensor.dtype)
    shape = tuple(tensor.shape)
    itemsize = np.dtype(typestr).itemsize
    strides = tensor.strides
    data_ptr = tensor.data_ptr
    holder = _ArrayHolder(
        tensor,
        {
            "version": 3,
            "shape": shape,
            "typestr": typestr,
            "data": (data_ptr if data_ptr else 0, False),
            "strides": None if strides is None else tuple(s * itemsize for s in strides),
        },
    )
    dt = tensor.dtype
    ml = mldtypes.name_of_dl(dt.code, dt.bits, dt.lanes)
    arr: Array = np.zeros(shape, dtype=typestr) if not data_ptr else np.asarray(holder)
    return arr.view(mldtypes.np_dtype(ml)) if ml else arr


class _CallArgs:
    """The converted arguments of a call (DLTensors we built, owned Tensors we
    passed), kept alive by a borrowed DLTensor* result that may point into them."""

    def __init__(self, rt: Runtime, keep: list[Any], owned: list[int]) -> None:
        self.rt, self.keep, self.owned = rt, keep, owned

    def __del__(self) -> None:
        for h in self.owned:
            self.rt.TVMFFIObjectDecRef(h)


def hold_args(rt: Runtime, keep: list[Any], owned: list[int]) -> object:
    """The owner a borrowed DLTensor* result keeps: the call's arguments, whose
    `owned` references it takes over (the list is emptied)."""
    held = _CallArgs(rt, keep, list(owned))
    owned.clear()
    return held


# --- CUDA tensors ------------------------------------------------------------------
#: Byte of the guard regions around a DeviceTensor's data (checked after the call).
GUARD_BYTE = 0xA5


class DeviceTensor:
    """A copy of a NumPy array in CUDA device memory, passed as a tensor on
    kDLCUDA. guard: bytes of GUARD_BYTE before and after the data in the same
    allocation; guard_damage() tells whether a kernel wrote into them.
    The layout is always compact (row-major) whatever the source's order."""

    def __init__(self, ctx: Context, host: Array, guard: int = 0) -> None:
        import numpy as np

        src = np.ascontiguousarray(host)
        self.ctx = ctx
        self.host_dtype = src.dtype
        self.shape = [int(d) for d in src.shape]
        self.triple = _dl_dtype_of_numpy(src.dtype)
        self.nbytes = int(src.nbytes)
        self.guard = int(guard)
        self.buffer: DeviceBuffer = ctx.alloc(self.nbytes + 2 * self.guard)
        self.ptr = self.buffer.ptr + self.guard
        if self.guard:
            ctx.memset8(self.buffer.ptr, GUARD_BYTE, self.buffer.nbytes)
        if self.nbytes:
            ctx.htod(self.ptr, int(src.ctypes.data), self.nbytes)

    @property
    def device(self) -> tuple[int, int]:
        return (abi.kDLCUDA, self.ctx.device)

    def fill(self, dl: DLTensor, keep: list[Any]) -> None:
        """Make `dl` describe this tensor (explicit compact strides)."""
        nd = len(self.shape)
        strides, acc = [], 1
        for d in reversed(self.shape):
            strides.append(acc)
            acc *= d
        shape_arr = (ctypes.c_int64 * max(nd, 1))(*self.shape)
        strides_arr = (ctypes.c_int64 * max(nd, 1))(*reversed(strides))
        keep.append((shape_arr, strides_arr, self))
        dl.data = self.ptr
        dl.device = DLDevice(*self.device)
        dl.ndim = nd
        dl.dtype = DLDataType(*self.triple)
        dl.shape = ctypes.cast(shape_arr, ctypes.POINTER(ctypes.c_int64))
        dl.strides = ctypes.cast(strides_arr, ctypes.POINTER(ctypes.c_int64))
        dl.byte_offset = 0

    def dltensor(self, keep: list[Any]) -> DLTensor:
        dl = DLTensor()
        self.fill(dl, keep)
        keep.append(dl)
        return dl

    def to_numpy(self) -> Array:
        """The data as it is now on the device (a synchronous copy)."""
        import numpy as np

        out = np.empty(self.shape, dtype=self.host_dtype)
        if self.nbytes:
            self.ctx.dtoh(int(out.ctypes.data), self.ptr, self.nbytes)
        return out

    def guard_damage(self) -> list[dict[str, int]]:
        """Guard bytes a kernel changed: [{"side": -1|1, "offset", "bytes"}] with
        offset from the start (-1: before it) or the end (1: past it) of the data."""
        out: list[dict[str, int]] = []
        if not self.guard:
            return out
        before = self.ctx.read(self.buffer.ptr, self.guard)
        after = self.ctx.read(self.ptr + self.nbytes, self.guard)
        for side, raw in ((-1, before), (1, after)):
            bad = [i for i, b in enumerate(raw) if b != GUARD_BYTE]
            if bad:
                first = bad[-1] - self.guard if side < 0 else bad[0]
                out.append({"side": side, "offset": first, "bytes": len(bad)})
        return out

    def free(self) -> None:
        self.buffer.free()


def tensor_from_device(rt: Runtime, t: DeviceTensor, owned: Optional[list[int]] = None) -> int:
    """Owned ffi.Tensor handle viewing a DeviceTensor (its memory stays ours)."""
    keep: list[Any] = []
    mt = DLManagedTensorVersioned()
    mt.version.major = abi.DLPACK_MAJOR_VERSION
    mt.version.minor = abi.DLPACK_MINOR_VERSION
    mt.flags = 0
    t.fill(mt.dl_tensor, keep)
    mt.deleter = _DLPACK_DELETER
    with _dlpack_lock:
        token = _dlpack_next[0]
        _dlpack_next[0] += 1
        _dlpack_keep[token] = (t, mt, keep)
    mt.manager_ctx = token
    h = c_void_p()
    if rt.TVMFFITensorFromDLPackVersioned(byref(mt), 0, 0, byref(h)) != 0:
        with _dlpack_lock:
            _dlpack_keep.pop(token, None)
        raise rt.take_error()
    handle = h.value or 0
    if owned is not None:
        owned.append(handle)
    return handle


# --- DLPack producers (torch, cupy, jax, ...) --------------------------------------
_capi = ctypes.pythonapi
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_GetPointer.restype = c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_SetName.restype = ctypes.c_int
_capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
#: Capsule names of the DLPack exchange: (name, the name once consumed, versioned).
_CAPSULES = (
    (b"dltensor_versioned", b"used_dltensor_versioned", True),
    (b"dltensor", b"used_dltensor", False),
)


def has_dlpack(value: object) -> bool:
    return hasattr(value, "__dlpack__") and hasattr(value, "__dlpack_device__")


def tensor_from_dlpack(rt: Runtime, value: Any, owned: Optional[list[int]] = None) -> int:
    """Owned ffi.Tensor handle of an object exporting `__dlpack__`, without a
    copy: the producer's managed tensor is handed to the runtime, which calls
    its deleter when the Tensor dies. Asks for a DLPack 1.x capsule first."""
    kw: dict[str, int] = {}  # __dlpack__ keywords: stream
    if value.__dlpack_device__()[0] in (abi.kDLCUDA, abi.kDLCUDAManaged):
        # The library launches on TVMFFIEnvGetStream, NULL (the legacy default
        # stream, DLPack's 1) unless the caller published one: the producer
        # orders its pending work before that stream.
        kw["stream"] = 1
    try:
        capsule = value.__dlpack__(
            max_version=(abi.DLPACK_MAJOR_VERSION, abi.DLPACK_MINOR_VERSION), **kw
        )
    except TypeError:  # a producer older than the max_version keyword
        capsule = value.__dlpack__(**kw)
    for name, used, versioned in _CAPSULES:
        if _capi.PyCapsule_IsValid(capsule, name):
            ptr = _capi.PyCapsule_GetPointer(capsule, name)
            h = c_void_p()
            if versioned:
                rc = rt.TVMFFITensorFromDLPackVersioned(
                    ctypes.cast(ptr, ctypes.POINTER(DLManagedTensorVersioned)), 0, 0, byref(h)
                )
            else:
                rc = rt.TVMFFITensorFromDLPack(
                    ctypes.cast(ptr, ctypes.POINTER(abi.DLManagedTensor)), 0, 0, byref(h)
                )
            if rc != 0:
                raise rt.take_error()  # the capsule still owns the tensor
            # The runtime owns it now: the capsule's destructor must not free it.
            _capi.PyCapsule_SetName(capsule, used)
            handle = h.value or 0
            if owned is not None:
                owned.append(handle)
            return handle
    raise TypeError(f"{type(value).__name__}.__dlpack__() returned no DLPack capsule")

"""The NumPy / DLPack bridge: DLTensor views of NumPy arrays, owned ffi.Tensors
made from them (DLManagedTensorVersioned), NumPy views of CPU tensors and a
NumPy-backed CPU allocator for runtimes that have none.
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
    from .runtime import Runtime

Array = Any  # a numpy.ndarray (numpy is imported only when used)


class _ArrayHolder:
    """Exposes __array_interface__ for Tensor.numpy(); as the array's base it
    keeps the Tensor (and thus the memory) alive."""

    def __init__(self, tensor: object, iface: dict[str, Any]) -> None:
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

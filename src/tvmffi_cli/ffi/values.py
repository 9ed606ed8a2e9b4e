"""Python values <-> TVMFFIAny: the one conversion layer, and the wrappers of
objects (whose methods convert values).

Arguments are built as AnyViews (borrowed): Python objects that need C memory
(strings, bytes, DLTensor structs) are kept alive in a `keep` list, and
objects created only for the call (Arrays, Maps, Shapes, owned Tensors) are
released after it. Results are owned Anys: values are copied out and the
reference is released, except for Function, Tensor, Module and registered
objects, whose Python wrappers hold the reference until they are collected.

Value types (DataType, Device, Shape, OpaquePtr) are in objects.py; here:
  Tensor     an ffi.Tensor (or a borrowed DLTensor*): dtype, shape, strides,
             device, .numpy() zero-copy view on CPU that keeps it alive
  Function   callable ffi.Function, released when collected
  Module     ffi.Module; .kind, .get_function(name)
  Object     any other object: type_key, fields (reflected, read lazily)
  FFIErrorBase and subclasses: raised errors (and Error values)
Arrays and Maps come back as lists and dicts, Lists and Dicts as objects.List/Dict.
"""

from __future__ import annotations

import ctypes
import sys
from ctypes import addressof, byref, c_void_p
from typing import Any, Callable, Optional

from ..abi import structs as abi
from ..abi.structs import DLDataType, DLDevice, DLTensor, TVMFFIAny, TVMFFIByteArray
from . import callbacks, objects, tensors
from .errors import BadResult, FFIErrorBase, error_from_handle
from .objects import DataType, Device, OpaquePtr, Shape, _Borrowed, _ObjectRef, _parse_dtype
from .runtime import Runtime, byte_array
from .tensors import _dl_dtype_of_numpy, dltensor_of_numpy, tensor_from_numpy, tensor_numpy

#: How NumPy arrays are passed: "dltensor" (zero-copy DLTensor*) or "object"
#: (an owned ffi.Tensor made by TVMFFITensorFromDLPackVersioned, zero-copy too).
TENSOR_MODES = ("dltensor", "object")
DEFAULT_TENSOR_MODE = "dltensor"

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


# --- object wrappers ------------------------------------------------------------
class Function(_ObjectRef):
    """A callable ffi.Function."""

    __slots__ = ("tensor_mode", "name")

    def __init__(
        self,
        handle: int,
        rt: Runtime,
        type_index: int = abi.kTVMFFIFunction,
        name: Optional[str] = None,
    ) -> None:
        super().__init__(handle, rt, type_index)
        self.tensor_mode = DEFAULT_TENSOR_MODE
        self.name = name

    def __call__(self, *args: Any) -> Any:
        return call_function(self._rt, self.handle, args, self.tensor_mode)

    def call(
        self, args: Any, tensor_mode: Optional[str] = None, argv_at: Optional[Any] = None
    ) -> Any:
        """Call with Python values; argv_at(n): where the n arguments go (call_function)."""
        mode = tensor_mode or self.tensor_mode
        return call_function(self._rt, self.handle, args, mode, argv_at)

    def __repr__(self) -> str:
        return f"<Function {self.name or hex(self.handle or 0)}>"


class Module(_ObjectRef):
    """An ffi.Module."""

    __slots__ = ()

    @property
    def kind(self) -> Any:
        return global_func(self._rt, "ffi.ModuleGetKind")(self)

    def get_function(self, name: str, query_imports: bool = False) -> Any:
        f = global_func(self._rt, "ffi.ModuleGetFunction")(self, name, bool(query_imports))
        if isinstance(f, Function):
            f.name = name
        return f

    def __repr__(self) -> str:
        return f"<Module {self.kind}>"


class Object(_ObjectRef):
    """A registered (or otherwise unconverted) object: type_key and reflected fields."""

    __slots__ = ("_fields",)

    def __init__(self, handle: int, rt: Runtime, type_index: Optional[int] = None) -> None:
        super().__init__(handle, rt, type_index)
        # the library's field values, as any_to_py converts them (free-form)
        self._fields: Optional[dict[str, Any]] = None

    @property
    def fields(self) -> dict[str, Any]:
        """{name: value} of the reflected fields, parents' first (read once)."""
        if self._fields is None:
            self._fields = read_fields(self._rt, self.handle, self.type_index)
        return self._fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        fields = self.fields
        if name in fields:
            return fields[name]
        raise AttributeError(f"{self.type_key} has no field {name!r}")

    def __repr__(self) -> str:
        try:
            body = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        except Exception as e:  # a broken getter must not break repr
            body = f"<fields unreadable: {e}>"
        return f"{self.type_key}({body})"


class Tensor(_ObjectRef):
    """An ffi.Tensor (owned), or a borrowed DLTensor* result (handle None)."""

    __slots__ = ("_dl_addr", "_owner")

    def __init__(
        self,
        handle: Optional[int],
        rt: Runtime,
        type_index: int = abi.kTVMFFITensor,
        dl_addr: Optional[int] = None,
        owner: object = None,
    ) -> None:
        if handle is None:
            self.handle = None
            self._rt = rt
            self.type_index = abi.kTVMFFIDLTensorPtr
        else:
            super().__init__(handle, rt, type_index)
        self._dl_addr = dl_addr if dl_addr is not None else abi.cell_address(handle or 0)
        self._owner = owner

    @property
    def dltensor(self) -> DLTensor:
        return DLTensor.from_address(self._dl_addr)

    @property
    def ndim(self) -> int:
        return int(self.dltensor.ndim)

    @property
    def shape(self) -> Shape:
        t = self.dltensor
        return Shape(t.shape[i] for i in range(t.ndim)) if t.ndim else Shape()

    @property
    def strides(self) -> Optional[tuple[int, ...]]:
        """Strides in elements, or None when the tensor says compact (NULL)."""
        t = self.dltensor
        if not t.strides:
            return None
        return tuple(t.strides[i] for i in range(t.ndim))

    @property
    def dtype(self) -> DataType:
        return _dtype_from_dl(self._rt, self.dltensor.dtype)

    @property
    def device(self) -> Device:
        d = self.dltensor.device
        return Device(d.device_type, d.device_id)

    @property
    def data_ptr(self) -> int:
        t = self.dltensor
        return int((t.data or 0) + t.byte_offset)

    def numpy(self) -> Any:
        """Zero-copy NumPy view of a CPU tensor; the view keeps the tensor alive."""
        return tensor_numpy(self)

    def __repr__(self) -> str:
        return f"<Tensor {self.dtype}{list(self.shape)} on {self.device}>"


# --- dtype results ---------------------------------------------------------------
_dtype_cache: dict[tuple[int, int, int], DataType] = {}


def _dtype_from_dl(rt: Runtime, dl: DLDataType) -> DataType:
    key = (dl.code, dl.bits, dl.lanes)
    d = _dtype_cache.get(key)
    if d is None:
        out = TVMFFIAny()
        rt.check(rt.TVMFFIDataTypeToString(byref(DLDataType(*key)), byref(out)))
        d = DataType(any_to_py(rt, out), key)
        _dtype_cache[key] = d
    return d


# --- Python -> AnyView -------------------------------------------------------
def _new_object(
    rt: Runtime,
    global_name: str,
    items: list[Any],
    keep: list[Any],
    owned: list[int],
    tensor_mode: Optional[str],
) -> tuple[int, int]:
    """Call a constructor global (ffi.Array, ffi.Map, ffi.Shape) and return the
    owned handle of its result."""
    fn = global_func(rt, global_name)
    n = len(items)
    args = (TVMFFIAny * n)() if n else None
    for i, v in enumerate(items):
        assert args is not None
        py_to_any(rt, v, args[i], keep, owned, tensor_mode)
    out = TVMFFIAny()
    rt.check(rt.TVMFFIFunctionCall(fn.handle, args, n, byref(out)))
    if out.type_index < abi.kTVMFFIStaticObjectBegin:
        raise TypeError(f"{global_name} returned a non-object (type {out.type_index})")
    owned.append(out.v_obj)
    return out.type_index, out.v_obj


def _set_obj(out: TVMFFIAny, tindex: int, handle: Optional[int]) -> None:
    out.type_index = tindex
    out.zero_padding = 0
    out.v_obj = handle


def py_to_any(
    rt: Runtime,
    value: Any,
    out: TVMFFIAny,
    keep: list[Any],
    owned: list[int],
    tensor_mode: Optional[str] = None,
) -> None:
    """Fill `out` with an AnyView of `value`. C memory goes to `keep`; handles
    created here go to `owned` (the caller releases them after the call)."""
    out.zero_padding = 0
    if value is None:
        out.type_index = abi.kTVMFFINone
        out.v_int64 = 0
    elif value is True or value is False:
        out.type_index = abi.kTVMFFIBool
        out.v_int64 = int(value)
    elif isinstance(value, (_ObjectRef, _Borrowed)):
        if value.handle is None and isinstance(value, Tensor):  # a borrowed DLTensor* result
            out.type_index = abi.kTVMFFIDLTensorPtr
            out.v_ptr = value._dl_addr
        else:
            _set_obj(out, value.type_index, value.handle)
    elif isinstance(value, FFIErrorBase):
        _set_obj(out, abi.kTVMFFIError, _make_error(rt, value, owned))
    elif isinstance(value, OpaquePtr):
        out.type_index = abi.kTVMFFIOpaquePtr
        out.v_ptr = int(value)
    elif isinstance(value, int):
        if _INT64_MIN <= value <= _INT64_MAX:
            out.type_index = abi.kTVMFFIInt
            out.v_int64 = value
        else:
            _set_bigint(rt, value, out, owned)
    elif isinstance(value, float):
        out.type_index = abi.kTVMFFIFloat
        out.v_float64 = value
    elif isinstance(value, DataType):
        out.type_index = abi.kTVMFFIDataType
        out.v_dtype = DLDataType(*(value._triple or _parse_dtype(rt, str(value))))
    elif isinstance(value, str):
        data = value.encode("utf-8")
        if b"\0" in data:
            ba, buf = byte_array(data)
            rt.check(rt.TVMFFIStringFromByteArray(byref(ba), byref(out)))
            if out.type_index >= abi.kTVMFFIStaticObjectBegin:
                owned.append(out.v_obj)
        else:
            buf = ctypes.create_string_buffer(data)
            keep.append(buf)
            out.type_index = abi.kTVMFFIRawStr
            out.v_c_str = addressof(buf)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        buf = ctypes.create_string_buffer(data, len(data) + 1)
        ba = TVMFFIByteArray(addressof(buf), len(data))
        keep.append((buf, ba))
        out.type_index = abi.kTVMFFIByteArrayPtr
        out.v_ptr = addressof(ba)
    elif isinstance(value, Device):
        out.type_index = abi.kTVMFFIDevice
        out.v_device = DLDevice(value.device_type, value.device_id)
    elif isinstance(value, Shape):
        _set_obj(out, *_new_object(rt, "ffi.Shape", list(value), keep, owned, tensor_mode))
    elif isinstance(value, (list, tuple)):
        _set_obj(out, *_new_object(rt, "ffi.Array", list(value), keep, owned, tensor_mode))
    elif isinstance(value, dict):
        flat = []
        for k, v in value.items():
            flat.append(k)
            flat.append(v)
        _set_obj(out, *_new_object(rt, "ffi.Map", flat, keep, owned, tensor_mode))
    elif isinstance(value, ctypes.c_void_p):
        out.type_index = abi.kTVMFFIOpaquePtr
        out.v_ptr = value.value
    elif isinstance(value, DLTensor):
        keep.append(value)
        out.type_index = abi.kTVMFFIDLTensorPtr
        out.v_ptr = addressof(value)
    elif isinstance(value, tensors.DeviceTensor):
        if (tensor_mode or DEFAULT_TENSOR_MODE) == "object":
            _set_obj(out, abi.kTVMFFITensor, tensors.tensor_from_device(rt, value, owned))
        else:
            out.type_index = abi.kTVMFFIDLTensorPtr
            out.v_ptr = addressof(value.dltensor(keep))
    else:
        np = sys.modules.get("numpy")
        if np is not None and isinstance(value, np.ndarray):
            if (tensor_mode or DEFAULT_TENSOR_MODE) == "object":
                _set_obj(out, abi.kTVMFFITensor, tensor_from_numpy(rt, value, owned))
            else:
                dl = dltensor_of_numpy(value, keep)
                out.type_index = abi.kTVMFFIDLTensorPtr
                out.v_ptr = addressof(dl)
        elif np is not None and isinstance(value, np.generic):
            py_to_any(rt, value.item(), out, keep, owned, tensor_mode)
        elif np is not None and isinstance(value, np.dtype):
            code, bits, lanes = _dl_dtype_of_numpy(value)
            out.type_index = abi.kTVMFFIDataType
            out.v_dtype = DLDataType(code, bits, lanes)
        elif tensors.has_dlpack(value):  # torch, cupy, jax...: zero-copy, any device
            _set_obj(out, abi.kTVMFFITensor, tensors.tensor_from_dlpack(rt, value, owned))
        elif callable(value):
            _set_obj(out, abi.kTVMFFIFunction, function_from_callable(rt, value, owned=True))
            owned.append(out.v_obj)
        else:
            raise TypeError(f"cannot pass a {type(value).__name__} to a TVM-FFI function")


def _set_bigint(rt: Runtime, value: int, out: TVMFFIAny, owned: list[int]) -> None:
    nbytes = (value.bit_length() + 8) // 8
    nbytes = (nbytes + 7) // 8 * 8  # whole little-endian 64-bit words
    ba, _keep = byte_array(value.to_bytes(nbytes, "little", signed=True))
    rt.check(rt.TVMFFIBigIntFromByteArray(byref(ba), byref(out)))
    if out.type_index >= abi.kTVMFFIStaticObjectBegin:
        owned.append(out.v_obj)


def _make_error(rt: Runtime, exc: FFIErrorBase, owned: list[int]) -> int:
    k, kk = byte_array(exc.kind)
    m, mk = byte_array(exc.message)
    b, bk = byte_array(exc.backtrace or "")
    h = c_void_p()
    rt.check(rt.TVMFFIErrorCreate(byref(k), byref(m), byref(b), byref(h)))
    handle = h.value or 0
    owned.append(handle)
    return handle


def numpy_to_tensor(rt: Runtime, arr: Any) -> Tensor:
    """Tensor wrapper (owned) viewing a NumPy array."""
    return Tensor(tensor_from_numpy(rt, arr), rt)


# --- Python callables as ffi.Function ------------------------------------------
def function_from_callable(rt: Runtime, fn: Callable[..., Any], owned: bool = False) -> Any:
    """ffi.Function calling the Python callable `fn`; returns an owned handle
    (owned=True) or a Function wrapper."""
    h = callbacks.create(rt, fn, any_view_to_py, py_to_owned_any)
    return h if owned else Function(h, rt)


def py_to_owned_any(rt: Runtime, value: Any, out: TVMFFIAny) -> None:
    """Write an owned Any of `value` into `out` (results of Python callbacks)."""
    keep: list[Any] = []
    owned: list[int] = []
    view = TVMFFIAny()
    try:
        py_to_any(rt, value, view, keep, owned)
        rt.check(rt.TVMFFIAnyViewToOwnedAny(byref(view), byref(out)))
    finally:
        for h in owned:
            rt.TVMFFIObjectDecRef(h)


# --- calling ------------------------------------------------------------------
def call_function(
    rt: Runtime,
    handle: Optional[int],
    args: Any,
    tensor_mode: Optional[str] = None,
    argv_at: Optional[Any] = None,
) -> Any:
    """Call the ffi.Function `handle` with Python values; return the decoded
    result. argv_at(n), when given, provides the zeroed array of n TVMFFIAny
    the arguments are written to (`tvmffi call`: ending at a guard page)."""
    n = len(args)
    if argv_at is not None:
        argv = argv_at(n)
    else:
        argv = (TVMFFIAny * n)() if n else None
    keep: list[Any] = []
    owned: list[int] = []
    try:
        for i, a in enumerate(args):
            assert argv is not None
            py_to_any(rt, a, argv[i], keep, owned, tensor_mode)
        result = TVMFFIAny()
        if rt.TVMFFIFunctionCall(handle, argv, n, byref(result)) != 0:
            raise rt.take_error()
        if result.type_index == abi.kTVMFFIDLTensorPtr and result.v_ptr:  # may point into args
            return Tensor(None, rt, dl_addr=result.v_ptr, owner=tensors.hold_args(rt, keep, owned))
        try:
            return any_to_py(rt, result)
        except (TypeError, ValueError, OverflowError) as e:
            raise BadResult(f"it returned a value tvmffi cannot read: {e}") from None
    finally:
        for h in owned:
            rt.TVMFFIObjectDecRef(h)


# --- AnyView / Any -> Python ---------------------------------------------------
def any_view_to_py(rt: Runtime, view: TVMFFIAny) -> Any:
    """Decode a borrowed Any (an argument given to us): objects gain a reference."""
    if view.type_index >= abi.kTVMFFIStaticObjectBegin and view.v_obj:
        rt.TVMFFIObjectIncRef(view.v_obj)
    return any_to_py(rt, view)


def any_to_py(rt: Runtime, a: TVMFFIAny) -> Any:
    """Decode an owned Any and consume it: copied values release their
    reference here, wrappers take it over."""
    t = a.type_index
    if t == abi.kTVMFFINone:
        return None
    if t == abi.kTVMFFIInt:
        return a.v_int64
    if t == abi.kTVMFFIBool:
        return bool(a.v_int64)
    if t == abi.kTVMFFIFloat:
        return a.v_float64
    if t == abi.kTVMFFISmallStr:
        return _small(a).decode("utf-8", errors="surrogateescape")
    if t == abi.kTVMFFISmallBytes:
        return _small(a)
    if t == abi.kTVMFFIRawStr:
        return (
            ctypes.string_at(a.v_c_str).decode("utf-8", errors="surrogateescape")
            if a.v_c_str
            else None
        )
    if t == abi.kTVMFFIByteArrayPtr:
        return abi.byte_array_bytes(TVMFFIByteArray.from_address(a.v_ptr)) if a.v_ptr else None
    if t == abi.kTVMFFIOpaquePtr:
        return OpaquePtr(a.v_ptr or 0)
    if t == abi.kTVMFFIDataType:
        return _dtype_from_dl(rt, a.v_dtype)
    if t == abi.kTVMFFIDevice:
        return Device(a.v_device.device_type, a.v_device.device_id)
    if t == abi.kTVMFFIDLTensorPtr:
        return Tensor(None, rt, dl_addr=a.v_ptr) if a.v_ptr else None
    if t < abi.kTVMFFIStaticObjectBegin:
        raise TypeError(f"cannot decode a value of type index {t}")
    return _object_to_py(rt, a.v_obj, t, a)


def _small(a: TVMFFIAny) -> bytes:
    n = min(a.small_str_len, 8)
    return ctypes.string_at(addressof(a) + 8, n)


def _object_to_py(rt: Runtime, h: Optional[int], t: int, a: Optional[TVMFFIAny] = None) -> Any:
    """Decode an owned object reference."""
    if not h:
        return None
    if t == abi.kTVMFFIFunction:
        return Function(h, rt)
    if t == abi.kTVMFFITensor:
        return Tensor(h, rt)
    if t == abi.kTVMFFIModule:
        return Module(h, rt, t)
    copyable = (
        abi.kTVMFFIStr,
        abi.kTVMFFIBytes,
        abi.kTVMFFIShape,
        abi.kTVMFFIArray,
        abi.kTVMFFIList,
        abi.kTVMFFIMap,
        abi.kTVMFFIDict,
        abi.kTVMFFIError,
        abi.kTVMFFIBigInt,
    )
    if t not in copyable:
        return Object(h, rt, t)
    try:
        if t == abi.kTVMFFIStr:
            return abi.byte_array_bytes(TVMFFIByteArray.from_address(abi.cell_address(h))).decode(
                "utf-8", errors="surrogateescape"
            )
        if t == abi.kTVMFFIBytes:
            return abi.byte_array_bytes(TVMFFIByteArray.from_address(abi.cell_address(h)))
        if t == abi.kTVMFFIShape:
            cell = abi.TVMFFIShapeCell.from_address(abi.cell_address(h))
            return Shape(cell.data[i] for i in range(cell.size)) if cell.size else Shape()
        if t in (abi.kTVMFFIArray, abi.kTVMFFIList):
            return read_seq(rt, h) if t == abi.kTVMFFIArray else objects.List(read_seq(rt, h))
        if t == abi.kTVMFFIMap:
            return _read_map(rt, h, t, "ffi.MapForwardIterFunctor", "ffi.MapSize")
        if t == abi.kTVMFFIDict:
            return objects.Dict(_read_map(rt, h, t, "ffi.DictForwardIterFunctor", "ffi.DictSize"))
        if t == abi.kTVMFFIError:
            return error_from_handle(rt, h)
        if t == abi.kTVMFFIBigInt:
            view = TVMFFIAny()
            _set_obj(view, t, h)
            ba = rt.TVMFFIBigIntGetContentByteArray(byref(view))
            return int.from_bytes(abi.byte_array_bytes(ba), "little", signed=True)
    finally:
        rt.TVMFFIObjectDecRef(h)


def read_seq(rt: Runtime, h: int) -> list[Any]:
    """Elements of an Array/List object (borrowed) read through its TVMFFISeqCell."""
    cell = abi.TVMFFISeqCell.from_address(abi.cell_address(h))
    n = cell.size
    if n <= 0 or not cell.data:
        return []
    items = (TVMFFIAny * n).from_address(cell.data)
    return [any_view_to_py(rt, items[i]) for i in range(n)]


def _hashable(k: Any) -> Any:
    if isinstance(k, list):
        return tuple(_hashable(x) for x in k)
    if isinstance(k, dict):
        return tuple(sorted((_hashable(a), _hashable(b)) for a, b in k.items()))
    return k


def _read_map(rt: Runtime, h: int, t: int, iter_name: str, size_name: str) -> dict[Any, Any]:
    ref = _Borrowed(h, t)
    n = global_func(rt, size_name)(ref)
    out: dict[Any, Any] = {}
    if n <= 0:
        return out
    it = global_func(rt, iter_name)(ref)
    for _ in range(n):
        out[_hashable(it(0))] = it(1)
        if not it(2):
            break
    return out


def read_fields(rt: Runtime, handle: Optional[int], type_index: int) -> dict[str, Any]:
    """{name: value} of the reflected fields of an object (ancestors first):
    the library's values as any_to_py converts them (free-form)."""
    info = rt.type_info(type_index)
    if info is None:
        return {}
    infos = [
        info.type_ancestors[i].contents
        for i in range(info.type_depth)
        if info.type_ancestors and info.type_ancestors[i]
    ]
    infos.append(info)
    fields: dict[str, Any] = {}
    for ti in infos:
        for j in range(ti.num_fields):
            f = ti.fields[j]
            name = abi.byte_array_str(f.name)
            if not f.getter:
                continue
            getter = abi.TVMFFIFieldGetter(f.getter)
            out = TVMFFIAny()
            if getter(handle + f.offset, byref(out)) != 0:
                raise rt.take_error()
            fields[name] = any_to_py(rt, out)
    return fields


# --- globals ------------------------------------------------------------------
def global_func(rt: Runtime, name: str) -> Function:
    """Cached Function wrapper of a global the runtime itself provides."""
    f = rt._globals.get(name)
    if f is None:
        h = rt.get_global_handle(name)
        if h is None:
            raise KeyError(f"global function {name!r} is not registered in {rt.path}")
        f = Function(h, rt)
        with rt._lock:
            rt._globals[name] = f
    return f

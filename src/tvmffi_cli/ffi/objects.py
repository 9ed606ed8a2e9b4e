"""Python types that stand for ABI values without owning any object.

  DataType   str subclass ("float32", "int8x4"), with code/bits/lanes
  Device     device_type + device_id, str form "cuda:1"
  Shape      tuple subclass of ints
  OpaquePtr  int subclass for kTVMFFIOpaquePtr

and _ObjectRef, the base of the wrappers that own one reference to an object
(Function, Module, Object, Tensor): those convert values when used, so they
live in values.py.
"""

from __future__ import annotations

from ctypes import byref
from typing import Any, Optional, Union

from ..abi import devices
from ..abi import structs as abi
from ..abi.structs import DLDataType
from .runtime import Runtime, byte_array, get_runtime

Triple = tuple[int, int, int]


class OpaquePtr(int):
    """A kTVMFFIOpaquePtr value (an address)."""

    def __repr__(self) -> str:
        return f"OpaquePtr(0x{int(self):x})"


class DataType(str):
    """A DLDataType in its string form ("float32", "int8x4", "bool").

    code/bits/lanes are known when the value came from a library; for a
    DataType built from a string they are parsed by the runtime when passed."""

    __slots__ = ("_triple",)
    _triple: Optional[Triple]

    def __new__(cls, value: str, triple: Optional[Triple] = None) -> DataType:
        self = super().__new__(cls, value)
        self._triple = triple
        return self

    @property
    def code(self) -> int:
        return self._need_triple()[0]

    @property
    def bits(self) -> int:
        return self._need_triple()[1]

    @property
    def lanes(self) -> int:
        return self._need_triple()[2]

    def _need_triple(self) -> Triple:
        if self._triple is None:
            self._triple = _parse_dtype(get_runtime(), str(self))
        return self._triple

    def __repr__(self) -> str:
        return f"DataType({str(self)!r})"


class Device:
    """A DLDevice: Device("cuda:1"), Device("cpu"), Device(2, 1), Device("cuda", 1)."""

    __slots__ = ("device_type", "device_id")
    device_type: int
    device_id: int

    def __init__(
        self, device_type: Union[Device, str, int], device_id: Optional[int] = None
    ) -> None:
        if isinstance(device_type, Device):
            other = device_type
            device_type, device_id = other.device_type, other.device_id
        if isinstance(device_type, str):
            name, _, idx = device_type.partition(":")
            code = devices.DEVICE_TYPE_CODES.get(name.strip().lower())
            if code is None:
                raise ValueError(f"unknown device type {name!r}")
            if idx:
                if device_id is not None:
                    raise ValueError("device id given twice")
                device_id = int(idx)
            device_type = code
        self.device_type = int(device_type)
        self.device_id = int(device_id or 0)

    @property
    def type_name(self) -> str:
        return devices.DEVICE_TYPE_NAMES.get(self.device_type, f"device{self.device_type}")

    def __str__(self) -> str:
        return f"{self.type_name}:{self.device_id}"

    def __repr__(self) -> str:
        return f"Device({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            try:
                other = Device(other)
            except ValueError:
                return False
        return (
            isinstance(other, Device)
            and other.device_type == self.device_type
            and other.device_id == self.device_id
        )

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_id))


class List(list):  # type: ignore[type-arg]
    """The items of an ffi.List (a list; ffi.Array decodes as a plain list)."""


class Dict(dict):  # type: ignore[type-arg]
    """The entries of an ffi.Dict (a dict; ffi.Map decodes as a plain dict)."""


class Shape(tuple[int, ...]):
    """An ffi.Shape: a tuple of ints."""

    def __new__(cls, *dims: Any) -> Shape:
        if len(dims) == 1 and not isinstance(dims[0], int):
            dims = tuple(dims[0])
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self) -> str:
        return "Shape(" + ", ".join(str(d) for d in self) + ")"


# --- dtype helpers ------------------------------------------------------------
_dtype_parse_cache: dict[str, Triple] = {}


def _parse_dtype(rt: Runtime, s: str) -> Triple:
    t = _dtype_parse_cache.get(s)
    if t is None:
        ba, _keep = byte_array(s)
        out = DLDataType()
        rt.check(rt.TVMFFIDataTypeFromString(byref(ba), byref(out)))
        t = (out.code, out.bits, out.lanes)
        _dtype_parse_cache[s] = t
    return t


class _ObjectRef:
    """A Python wrapper owning one strong reference to an ffi object."""

    __slots__ = ("handle", "type_index", "_rt", "__weakref__")

    def __init__(self, handle: int, rt: Runtime, type_index: Optional[int] = None) -> None:
        self.handle: Optional[int] = handle
        self._rt = rt
        self.type_index = (
            abi.TVMFFIObject.from_address(handle).type_index if type_index is None else type_index
        )

    def __del__(self) -> None:
        h, self.handle = getattr(self, "handle", None), None
        if h:
            try:
                self._rt.TVMFFIObjectDecRef(h)
            except Exception:  # interpreter shutdown
                pass

    @property
    def type_key(self) -> str:
        return self._rt.type_key(self.type_index)

    def same_as(self, other: object) -> bool:
        return isinstance(other, _ObjectRef) and other.handle == self.handle

    def __hash__(self) -> int:
        return hash(self.handle)

    def __eq__(self, other: object) -> bool:
        return self.same_as(other)


class _Borrowed:
    """An object handle passed as an argument without taking a reference."""

    __slots__ = ("handle", "type_index")

    def __init__(self, handle: int, type_index: int) -> None:
        self.handle = handle
        self.type_index = type_index

"""ctypes mirror of the TVM-FFI stable C ABI (layouts of ABI 0.1.x).

Only declarations live here: structs, unions, constants and function-pointer
types. Loading a runtime and calling into it is runtime.py's job. Sizes and
offsets are checked against the C headers in tests/test_abi.py.
"""

import ctypes
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    Union,
    c_char,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)

# Type indices and flags (constants.py), DLPack device types (devices.py) and
# dtype codes (dtypes.py) are re-exported here for code that reads the ABI
# through this module.
from .constants import *  # noqa: F403
from .constants import STATIC_TYPE_NAMES
from .devices import *  # noqa: F403
from .dtypes import kDLBfloat as kDLBfloat
from .dtypes import kDLBool as kDLBool
from .dtypes import kDLComplex as kDLComplex
from .dtypes import kDLFloat as kDLFloat
from .dtypes import kDLInt as kDLInt
from .dtypes import kDLOpaqueHandle as kDLOpaqueHandle
from .dtypes import kDLUInt as kDLUInt

DLPACK_FLAG_BITMASK_READ_ONLY = 1
DLPACK_FLAG_BITMASK_IS_COPIED = 2
DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 3


# --- DLPack -----------------------------------------------------------------
class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensor(Structure):
    pass


DLManagedTensorDeleter = CFUNCTYPE(None, POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", c_void_p),
    ("deleter", DLManagedTensorDeleter),
]


class DLManagedTensorVersioned(Structure):
    pass


DLManagedTensorVersionedDeleter = CFUNCTYPE(None, POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [
    ("version", DLPackVersion),
    ("manager_ctx", c_void_p),
    ("deleter", DLManagedTensorVersionedDeleter),
    ("flags", c_uint64),
    ("dl_tensor", DLTensor),
]


# --- objects and values -----------------------------------------------------
ObjectDeleter = CFUNCTYPE(None, c_void_p, c_int)


class TVMFFIObject(Structure):
    """The 24-byte header every object starts with. combined_ref_count holds
    the strong count in its low 32 bits and the weak count in the high 32."""

    class _DeleterUnion(Union):
        _fields_ = [("deleter", c_void_p), ("_ensure_align", c_int64)]

    _anonymous_ = ("_u",)
    _fields_ = [
        ("combined_ref_count", c_uint64),
        ("type_index", c_int32),
        ("_padding", c_uint32),
        ("_u", _DeleterUnion),
    ]


class _AnyLen(Union):
    _fields_ = [("zero_padding", c_uint32), ("small_str_len", c_uint32)]


class _AnyValue(Union):
    _fields_ = [
        ("v_int64", c_int64),
        ("v_float64", c_double),
        ("v_ptr", c_void_p),
        ("v_c_str", c_void_p),  # kept as an address: c_char_p would copy and stop at NUL
        ("v_obj", c_void_p),
        ("v_dtype", DLDataType),
        ("v_device", DLDevice),
        ("v_bytes", c_char * 8),
        ("v_uint64", c_uint64),
    ]


class TVMFFIAny(Structure):
    """16-byte tagged value: type_index, a 4-byte length/padding, an 8-byte payload."""

    _anonymous_ = ("_len", "_val")
    _fields_ = [("type_index", c_int32), ("_len", _AnyLen), ("_val", _AnyValue)]


class TVMFFIByteArray(Structure):
    _fields_ = [("data", c_void_p), ("size", c_size_t)]


class TVMFFIShapeCell(Structure):
    _fields_ = [("data", POINTER(c_int64)), ("size", c_size_t)]


class TVMFFISeqCell(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("size", c_int64),
        ("capacity", c_int64),
        ("data_deleter", c_void_p),
    ]


class TVMFFIErrorCell(Structure):
    _fields_ = [
        ("kind", TVMFFIByteArray),
        ("message", TVMFFIByteArray),
        ("backtrace", TVMFFIByteArray),
        ("update_backtrace", c_void_p),
        ("cause_chain", c_void_p),
        ("extra_context", c_void_p),
    ]


#: int (*)(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result)
TVMFFISafeCallType = CFUNCTYPE(c_int, c_void_p, POINTER(TVMFFIAny), c_int32, POINTER(TVMFFIAny))
#: void (*)(void* self) -- deleter of TVMFFIFunctionCreate / TVMFFIObjectCreateOpaque
TVMFFISelfDeleter = CFUNCTYPE(None, c_void_p)


class TVMFFIFunctionCell(Structure):
    _fields_ = [("safe_call", c_void_p), ("cpp_call", c_void_p)]


class TVMFFIOpaqueObjectCell(Structure):
    _fields_ = [("handle", c_void_p)]


class TVMFFIVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32), ("patch", c_uint32)]


TVMFFIFieldGetter = CFUNCTYPE(c_int, c_void_p, POINTER(TVMFFIAny))


class TVMFFIFieldInfo(Structure):
    _fields_ = [
        ("name", TVMFFIByteArray),
        ("doc", TVMFFIByteArray),
        ("metadata", TVMFFIByteArray),
        ("flags", c_int64),
        ("size", c_int64),
        ("alignment", c_int64),
        ("offset", c_int64),
        ("getter", c_void_p),
        ("setter", c_void_p),
        ("default_value_or_factory", TVMFFIAny),
        ("field_static_type_index", c_int32),
    ]


class TVMFFIMethodInfo(Structure):
    _fields_ = [
        ("name", TVMFFIByteArray),
        ("doc", TVMFFIByteArray),
        ("metadata", TVMFFIByteArray),
        ("flags", c_int64),
        ("method", TVMFFIAny),
    ]


class TVMFFITypeMetadata(Structure):
    _fields_ = [
        ("doc", TVMFFIByteArray),
        ("creator", c_void_p),
        ("total_size", c_int32),
        ("structural_eq_hash_kind", c_int32),
    ]


class TVMFFITypeAttrColumn(Structure):
    _fields_ = [("data", POINTER(TVMFFIAny)), ("size", c_int32), ("begin_index", c_int32)]


class TVMFFITypeInfo(Structure):
    pass


TVMFFITypeInfo._fields_ = [
    ("type_index", c_int32),
    ("type_depth", c_int32),
    ("type_key", TVMFFIByteArray),
    ("type_ancestors", POINTER(POINTER(TVMFFITypeInfo))),
    ("type_key_hash", c_uint64),
    ("num_fields", c_int32),
    ("num_methods", c_int32),
    ("fields", POINTER(TVMFFIFieldInfo)),
    ("methods", POINTER(TVMFFIMethodInfo)),
    ("metadata", POINTER(TVMFFITypeMetadata)),
]

#: int (*)(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
#:         void (*SetError)(void* error_ctx, const char* kind, const char* message))
DLPackManagedTensorAllocator = CFUNCTYPE(
    c_int, POINTER(DLTensor), POINTER(POINTER(DLManagedTensorVersioned)), c_void_p, c_void_p
)

#: Bytes of the object header; every cell (string bytes, error, function,
#: shape, DLTensor of a Tensor, sequence) starts right after it.
OBJECT_HEADER_SIZE = ctypes.sizeof(TVMFFIObject)


def cell_address(handle: int) -> int:
    """Address of the cell that follows the object header of `handle`."""
    return handle + OBJECT_HEADER_SIZE


def byte_array_bytes(ba: TVMFFIByteArray) -> bytes:
    """Copy the bytes a TVMFFIByteArray points at (b"" for NULL/empty)."""
    if not ba.data or not ba.size:
        return b""
    return ctypes.string_at(ba.data, ba.size)


def byte_array_str(ba: TVMFFIByteArray) -> str:
    return byte_array_bytes(ba).decode("utf-8", errors="replace")


__all__ = [n for n in dir() if n.startswith(("kTVMFFI", "kDL", "TVMFFI", "DL"))] + [
    "STATIC_TYPE_NAMES",
    "OBJECT_HEADER_SIZE",
    "cell_address",
    "byte_array_bytes",
    "byte_array_str",
]

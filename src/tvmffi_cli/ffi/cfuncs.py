"""The C functions of a libtvm_ffi.so, declared once.

C_API and RT_API are the ctypes declarations (restype, argtypes) the loader
binds; CFunctions carries the same functions as annotated attributes, so type
checkers and editors see each one's parameters and result. tests/test_abi.py
keeps the two in step (names and arity).
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int, c_int32, c_int64, c_uint32, c_void_p
from typing import Any, Callable, Optional

from ..abi import structs as abi
from ..abi.capi import C_API_NAMES
from ..abi.structs import (
    DLDataType,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLTensor,
    TVMFFIAny,
    TVMFFIByteArray,
    TVMFFIMethodInfo,
    TVMFFITypeAttrColumn,
    TVMFFITypeInfo,
    TVMFFITypeMetadata,
    TVMFFIVersion,
)

#: What a pointer parameter takes: an address (int), None, a ctypes pointer,
#: byref(...) or an array.
Ptr = Any
Decl = tuple[Any, list[Any]]

_P = c_void_p
_PANY = POINTER(TVMFFIAny)
_PBA = POINTER(TVMFFIByteArray)

#: name -> (restype, argtypes) of the 50 exported C functions.
C_API: dict[str, Decl] = {
    "TVMFFIGetVersion": (None, [POINTER(TVMFFIVersion)]),
    "TVMFFIObjectIncRef": (c_int, [_P]),
    "TVMFFIObjectDecRef": (c_int, [_P]),
    "TVMFFIObjectCreateOpaque": (c_int, [_P, c_int32, _P, POINTER(_P)]),
    "TVMFFIGetCustomAllocator": (_P, []),
    "TVMFFISetCustomAllocator": (c_int, [_P]),
    "TVMFFITypeKeyToIndex": (c_int, [_PBA, POINTER(c_int32)]),
    "TVMFFIFunctionCreate": (c_int, [_P, _P, _P, POINTER(_P)]),
    "TVMFFIFunctionGetGlobal": (c_int, [_PBA, POINTER(_P)]),
    "TVMFFIAnyViewToOwnedAny": (c_int, [_PANY, _PANY]),
    "TVMFFIFunctionCall": (c_int, [_P, _PANY, c_int32, _PANY]),
    "TVMFFIErrorMoveFromRaised": (None, [POINTER(_P)]),
    "TVMFFIErrorSetRaised": (None, [_P]),
    "TVMFFIErrorSetRaisedFromCStr": (None, [c_char_p, c_char_p]),
    "TVMFFIErrorSetRaisedFromCStrParts": (None, [c_char_p, POINTER(c_char_p), c_int32]),
    "TVMFFIErrorCreate": (c_int, [_PBA, _PBA, _PBA, POINTER(_P)]),
    "TVMFFIErrorCreateWithCauseAndExtraContext": (c_int, [_PBA, _PBA, _PBA, _P, _P, POINTER(_P)]),
    "TVMFFITensorFromDLPack": (c_int, [POINTER(DLManagedTensor), c_int32, c_int32, POINTER(_P)]),
    "TVMFFITensorToDLPack": (c_int, [_P, POINTER(POINTER(DLManagedTensor))]),
    "TVMFFITensorFromDLPackVersioned": (
        c_int,
        [POINTER(DLManagedTensorVersioned), c_int32, c_int32, POINTER(_P)],
    ),
    "TVMFFITensorToDLPackVersioned": (c_int, [_P, POINTER(POINTER(DLManagedTensorVersioned))]),
    "TVMFFITensorCreateUnsafeView": (c_int, [_P, POINTER(DLTensor), POINTER(_P)]),
    "TVMFFIStringFromByteArray": (c_int, [_PBA, _PANY]),
    "TVMFFIBytesFromByteArray": (c_int, [_PBA, _PANY]),
    "TVMFFIBigIntFromByteArray": (c_int, [_PBA, _PANY]),
    "TVMFFIBigIntGetContentByteArray": (TVMFFIByteArray, [_PANY]),
    "TVMFFIDataTypeFromString": (c_int, [_PBA, POINTER(DLDataType)]),
    "TVMFFIDataTypeToString": (c_int, [POINTER(DLDataType), _PANY]),
    "TVMFFIFunctionSetGlobal": (c_int, [_PBA, _P, c_int]),
    "TVMFFIFunctionSetGlobalFromMethodInfo": (c_int, [POINTER(TVMFFIMethodInfo), c_int]),
    "TVMFFITypeRegisterField": (c_int, [c_int32, POINTER(abi.TVMFFIFieldInfo)]),
    "TVMFFITypeRegisterMethod": (c_int, [c_int32, POINTER(TVMFFIMethodInfo)]),
    "TVMFFITypeRegisterMetadata": (c_int, [c_int32, POINTER(TVMFFITypeMetadata)]),
    "TVMFFITypeRegisterAttr": (c_int, [c_int32, _PBA, _PANY]),
    "TVMFFIGetTypeAttrColumn": (POINTER(TVMFFITypeAttrColumn), [_PBA]),
    "TVMFFIBacktrace": (_PBA, [c_char_p, c_int, c_char_p, c_int]),
    "TVMFFITypeGetOrAllocIndex": (c_int32, [_PBA, c_int32, c_int32, c_int32, c_int32, c_int32]),
    "TVMFFIGetTypeInfo": (POINTER(TVMFFITypeInfo), [c_int32]),
    "TVMFFIHandleInitOnce": (c_int, [POINTER(_P), _P]),
    "TVMFFIHandleDeinitOnce": (c_int, [POINTER(_P), _P]),
    # extra/c_env_api.h
    "TVMFFIEnvSetStream": (c_int, [c_int32, c_int32, _P, POINTER(_P)]),
    "TVMFFIEnvGetStream": (_P, [c_int32, c_int32]),
    "TVMFFIEnvSetDLPackManagedTensorAllocator": (c_int, [_P, c_int, POINTER(_P)]),
    "TVMFFIEnvGetDLPackManagedTensorAllocator": (_P, []),
    "TVMFFIEnvTensorAlloc": (c_int, [POINTER(DLTensor), POINTER(_P)]),
    "TVMFFIEnvCheckSignals": (c_int, []),
    "TVMFFIEnvRegisterCAPI": (c_int, [c_char_p, _P]),
    "TVMFFIEnvModLookupFromImports": (c_int, [_P, c_char_p, POINTER(_P)]),
    "TVMFFIEnvModRegisterContextSymbol": (c_int, [c_char_p, _P]),
    "TVMFFIEnvModRegisterSystemLibSymbol": (c_int, [c_char_p, _P]),
}
assert set(C_API) == C_API_NAMES

#: Our runtime's own API (runtime/include/tvmffi/rt.h); declared when exported.
RT_API: dict[str, Decl] = {
    "tvmffi_rt_live_objects": (c_int64, []),
    "tvmffi_rt_live_objects_of_type": (c_int64, [c_int32]),
    "tvmffi_rt_strong_count": (c_uint32, [_P]),
    "tvmffi_rt_weak_count": (c_uint32, [_P]),
    "tvmffi_rt_error_pending": (c_int, []),
    "tvmffi_rt_type_index_valid": (c_int, [c_int32]),
    "tvmffi_rt_set_checking": (None, [c_int]),
    "tvmffi_rt_violation_count": (c_int64, []),
    "tvmffi_rt_violations": (c_int, [_PANY]),
    "tvmffi_rt_list_globals": (c_int, [_PANY]),
    "tvmffi_rt_type_index_end": (c_int32, []),
    "tvmffi_rt_time_calls": (c_int, [_P, _PANY, c_int32, c_int64, c_int32, POINTER(c_int64)]),
    "tvmffi_rt_library_load": (c_int, [c_char_p, POINTER(_P)]),
    "tvmffi_rt_module_get_function": (c_int, [_P, _PBA, c_int, POINTER(_P)]),
    "tvmffi_rt_module_describe": (c_int, [_P, _PANY]),
}


class CFunctions:
    """The 50 C functions as typed attributes (bound by bind_c_api)."""

    TVMFFIGetVersion: Callable[[Ptr], None]
    TVMFFIObjectIncRef: Callable[[Ptr], int]
    TVMFFIObjectDecRef: Callable[[Ptr], int]
    TVMFFIObjectCreateOpaque: Callable[[Ptr, int, Ptr, Ptr], int]
    TVMFFIGetCustomAllocator: Callable[[], Optional[int]]
    TVMFFISetCustomAllocator: Callable[[Ptr], int]
    TVMFFITypeKeyToIndex: Callable[[Ptr, Ptr], int]
    TVMFFIFunctionCreate: Callable[[Ptr, Ptr, Ptr, Ptr], int]
    TVMFFIFunctionGetGlobal: Callable[[Ptr, Ptr], int]
    TVMFFIAnyViewToOwnedAny: Callable[[Ptr, Ptr], int]
    TVMFFIFunctionCall: Callable[[Ptr, Ptr, int, Ptr], int]
    TVMFFIErrorMoveFromRaised: Callable[[Ptr], None]
    TVMFFIErrorSetRaised: Callable[[Ptr], None]
    TVMFFIErrorSetRaisedFromCStr: Callable[[Optional[bytes], Optional[bytes]], None]
    TVMFFIErrorSetRaisedFromCStrParts: Callable[[Optional[bytes], Ptr, int], None]
    TVMFFIErrorCreate: Callable[[Ptr, Ptr, Ptr, Ptr], int]
    TVMFFIErrorCreateWithCauseAndExtraContext: Callable[[Ptr, Ptr, Ptr, Ptr, Ptr, Ptr], int]
    TVMFFITensorFromDLPack: Callable[[Ptr, int, int, Ptr], int]
    TVMFFITensorToDLPack: Callable[[Ptr, Ptr], int]
    TVMFFITensorFromDLPackVersioned: Callable[[Ptr, int, int, Ptr], int]
    TVMFFITensorToDLPackVersioned: Callable[[Ptr, Ptr], int]
    TVMFFITensorCreateUnsafeView: Callable[[Ptr, Ptr, Ptr], int]
    TVMFFIStringFromByteArray: Callable[[Ptr, Ptr], int]
    TVMFFIBytesFromByteArray: Callable[[Ptr, Ptr], int]
    TVMFFIBigIntFromByteArray: Callable[[Ptr, Ptr], int]
    TVMFFIBigIntGetContentByteArray: Callable[[Ptr], Any]
    TVMFFIDataTypeFromString: Callable[[Ptr, Ptr], int]
    TVMFFIDataTypeToString: Callable[[Ptr, Ptr], int]
    TVMFFIFunctionSetGlobal: Callable[[Ptr, Ptr, int], int]
    TVMFFIFunctionSetGlobalFromMethodInfo: Callable[[Ptr, int], int]
    TVMFFITypeRegisterField: Callable[[int, Ptr], int]
    TVMFFITypeRegisterMethod: Callable[[int, Ptr], int]
    TVMFFITypeRegisterMetadata: Callable[[int, Ptr], int]
    TVMFFITypeRegisterAttr: Callable[[int, Ptr, Ptr], int]
    TVMFFIGetTypeAttrColumn: Callable[[Ptr], Any]
    TVMFFIBacktrace: Callable[[Optional[bytes], int, Optional[bytes], int], Any]
    TVMFFITypeGetOrAllocIndex: Callable[[Ptr, int, int, int, int, int], int]
    TVMFFIGetTypeInfo: Callable[[int], Any]
    TVMFFIHandleInitOnce: Callable[[Ptr, Ptr], int]
    TVMFFIHandleDeinitOnce: Callable[[Ptr, Ptr], int]
    TVMFFIEnvSetStream: Callable[[int, int, Ptr, Ptr], int]
    TVMFFIEnvGetStream: Callable[[int, int], Optional[int]]
    TVMFFIEnvSetDLPackManagedTensorAllocator: Callable[[Ptr, int, Ptr], int]
    TVMFFIEnvGetDLPackManagedTensorAllocator: Callable[[], Optional[int]]
    TVMFFIEnvTensorAlloc: Callable[[Ptr, Ptr], int]
    TVMFFIEnvCheckSignals: Callable[[], int]
    TVMFFIEnvRegisterCAPI: Callable[[Optional[bytes], Ptr], int]
    TVMFFIEnvModLookupFromImports: Callable[[Ptr, Optional[bytes], Ptr], int]
    TVMFFIEnvModRegisterContextSymbol: Callable[[Optional[bytes], Ptr], int]
    TVMFFIEnvModRegisterSystemLibSymbol: Callable[[Optional[bytes], Ptr], int]


def bind_c_api(target: CFunctions, lib: ctypes.CDLL) -> list[str]:
    """Declare and attach every C_API function of `lib` to `target`; returns
    the names `lib` does not export."""
    missing = []
    for name, (restype, argtypes) in C_API.items():
        try:
            f = getattr(lib, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = restype
        f.argtypes = argtypes
        setattr(target, name, f)  # declared above: CFunctions.__annotations__
    return missing


def bind_rt_api(lib: ctypes.CDLL) -> dict[str, Callable[..., Any]]:
    """Our runtime's own functions (tvmffi_rt_*) that `lib` exports, declared."""
    out: dict[str, Callable[..., Any]] = {}
    for name, (restype, argtypes) in RT_API.items():
        f = getattr(lib, name, None)
        if f is not None:
            f.restype = restype
            f.argtypes = argtypes
            out[name] = f
    return out

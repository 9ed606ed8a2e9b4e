"""Load one libtvm_ffi.so into this process and declare its C functions.

Every runtime has SONAME libtvm_ffi.so, so a process can host only one of
them: the first get_runtime() call picks it (ours by default, any path on
request) and later calls return the same object. Code that needs the other
runtime must run in a subprocess (see sandbox/process.py).
"""

import ctypes
import os
import threading
from ctypes import POINTER, byref, c_char_p, c_int, c_int32, c_int64, c_uint32, c_void_p
from pathlib import Path

from ..abi import structs as abi
from ..abi.capi import C_API_NAMES
from ..abi.structs import (
    DLDataType,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLTensor,
    TVMFFIAny,
    TVMFFIByteArray,
    TVMFFIFieldInfo,  # noqa: F401  (re-exported for callers reading type info)
    TVMFFIMethodInfo,
    TVMFFITypeAttrColumn,
    TVMFFITypeInfo,
    TVMFFITypeMetadata,
    TVMFFIVersion,
)
from ..errors import InputError
from .errors import FFIError, error_from_handle

_P = c_void_p
_PANY = POINTER(TVMFFIAny)
_PBA = POINTER(TVMFFIByteArray)

#: name -> (restype, argtypes) of the 50 exported C functions.
C_API = {
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
        c_int, [POINTER(DLManagedTensorVersioned), c_int32, c_int32, POINTER(_P)]),
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
RT_API = {
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


def byte_array(data):
    """(TVMFFIByteArray, keep-alive buffer) for bytes or str."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = ctypes.create_string_buffer(data, len(data) + 1)
    return TVMFFIByteArray(ctypes.cast(buf, c_void_p), len(data)), buf


class Runtime:
    """A loaded libtvm_ffi.so with declared functions and small helpers."""

    def __init__(self, path):
        self.path = Path(path).resolve()
        try:
            self.lib = ctypes.CDLL(str(self.path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as e:
            raise InputError(f"cannot load runtime {self.path}: {e}") from None
        self.missing = []
        for name, (restype, argtypes) in C_API.items():
            try:
                f = getattr(self.lib, name)
            except AttributeError:
                self.missing.append(name)
                continue
            f.restype = restype
            f.argtypes = argtypes
            setattr(self, name, f)
        if self.missing:
            raise InputError(
                f"{self.path} is not a complete TVM-FFI runtime: missing "
                + ", ".join(self.missing[:5]) + (" ..." if len(self.missing) > 5 else ""))
        self.rt = {}
        for name, (restype, argtypes) in RT_API.items():
            f = getattr(self.lib, name, None)
            if f is not None:
                f.restype = restype
                f.argtypes = argtypes
                self.rt[name] = f
        self._globals = {}
        self._lock = threading.Lock()

    # -- identity -----------------------------------------------------------
    @property
    def is_ours(self):
        """True when this runtime exports our tvmffi_rt_* API."""
        return "tvmffi_rt_library_load" in self.rt

    def version(self):
        v = TVMFFIVersion()
        self.TVMFFIGetVersion(byref(v))
        return (v.major, v.minor, v.patch)

    # -- errors -------------------------------------------------------------
    def take_error(self):
        """Move the raised error of this thread out and return it as a Python
        exception (not raised). Returns a generic FFIError if none is pending."""
        h = c_void_p()
        self.TVMFFIErrorMoveFromRaised(byref(h))
        if not h.value:
            return FFIError("UnknownError", "call failed without raising an error", "")
        try:
            return error_from_handle(self, h.value)
        finally:
            self.TVMFFIObjectDecRef(h)

    def check(self, rc):
        if rc != 0:
            raise self.take_error()

    # -- objects ------------------------------------------------------------
    def inc_ref(self, handle):
        self.TVMFFIObjectIncRef(handle)

    def dec_ref(self, handle):
        self.TVMFFIObjectDecRef(handle)

    def strong_count(self, handle):
        """Strong reference count (our runtime's probe, else read from the header)."""
        f = self.rt.get("tvmffi_rt_strong_count")
        if f is not None:
            return int(f(handle))
        return abi.TVMFFIObject.from_address(handle).combined_ref_count & 0xFFFFFFFF

    def live_objects(self):
        f = self.rt.get("tvmffi_rt_live_objects")
        return None if f is None else int(f())

    # -- globals ------------------------------------------------------------
    def get_global_handle(self, name):
        """Owned handle of global function `name`, or None when absent."""
        ba, _keep = byte_array(name)
        out = c_void_p()
        self.check(self.TVMFFIFunctionGetGlobal(byref(ba), byref(out)))
        return out.value

    # -- types --------------------------------------------------------------
    def type_info(self, type_index):
        """TVMFFITypeInfo of an index, or None when the runtime has none."""
        valid = self.rt.get("tvmffi_rt_type_index_valid")
        if valid is not None and not valid(type_index):
            return None
        p = self.TVMFFIGetTypeInfo(type_index)
        return p.contents if p else None

    def type_key_to_index(self, key):
        ba, _keep = byte_array(key)
        out = c_int32()
        if self.TVMFFITypeKeyToIndex(byref(ba), byref(out)) != 0:
            self.take_error()  # clear it: an unknown key is an answer, not a failure
            return None
        return out.value

    def type_key(self, type_index):
        if type_index in abi.STATIC_TYPE_NAMES and type_index < abi.kTVMFFIStaticObjectBegin:
            return abi.STATIC_TYPE_NAMES[type_index]
        info = self.type_info(type_index)
        if info is None:
            return abi.STATIC_TYPE_NAMES.get(type_index, f"<type {type_index}>")
        return abi.byte_array_str(info.type_key)


_RUNTIME = None
_RUNTIME_LOCK = threading.Lock()


def get_runtime(path=None):
    """The runtime of this process, loading it on first use.

    path None: the already loaded runtime, else ours (paths.runtime_library(),
    which honours TVMFFI_RUNTIME). A path different from the loaded runtime is
    an error: two runtimes share a SONAME and cannot coexist in one process.
    """
    global _RUNTIME
    with _RUNTIME_LOCK:
        if _RUNTIME is not None:
            if path is not None and Path(path).resolve() != _RUNTIME.path:
                raise InputError(
                    f"runtime {_RUNTIME.path} is already loaded in this process; "
                    f"{Path(path).resolve()} can only be used in another process")
            return _RUNTIME
        if path is None:
            from . import paths

            path = paths.runtime_library()
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{path}: no such runtime library")
        _RUNTIME = Runtime(p)
        return _RUNTIME


def loaded_runtime():
    """The runtime already loaded in this process, or None."""
    return _RUNTIME


def exports_c_api(path):
    """True when the file at `path` defines all 50 C functions (read from its
    dynamic symbol table, without loading it)."""
    try:
        from elftools.elf.elffile import ELFFile

        with open(path, "rb") as f:
            elf = ELFFile(f)
            dynsym = elf.get_section_by_name(".dynsym")
            if dynsym is None:
                return False
            names = {s.name for s in dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}
    except Exception:
        return False
    return all(n in names for n in C_API)

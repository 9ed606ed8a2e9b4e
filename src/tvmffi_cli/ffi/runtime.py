"""Load one libtvm_ffi.so into this process and declare its C functions.

Every runtime has SONAME libtvm_ffi.so, so a process can host only one of
them: the first get_runtime() call picks it (ours by default, any path on
request) and later calls return the same object. Code that needs the other
runtime must run in a subprocess (see sandbox/process.py).
"""

from __future__ import annotations

import ctypes
import os
import threading
from ctypes import byref, c_int32, c_void_p
from pathlib import Path
from typing import Any, Optional, Union

from ..abi import structs as abi
from ..abi.structs import TVMFFIByteArray, TVMFFITypeInfo, TVMFFIVersion
from ..abi.versions import SINCE
from ..errors import InputError
from .cfuncs import C_API, RT_API, CFunctions, bind_c_api, bind_rt_api
from .errors import FFIError, FFIErrorBase, error_from_handle

__all__ = [
    "C_API",
    "RT_API",
    "Runtime",
    "RuntimeLacks",
    "byte_array",
    "exports_c_api",
    "get_runtime",
    "loaded_runtime",
]


def byte_array(data: Union[str, bytes]) -> tuple[TVMFFIByteArray, ctypes.Array[ctypes.c_char]]:
    """(TVMFFIByteArray, keep-alive buffer) for bytes or str."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    buf = ctypes.create_string_buffer(data, len(data) + 1)
    return TVMFFIByteArray(ctypes.cast(buf, c_void_p), len(data)), buf


class RuntimeLacks(InputError):
    """The hosting runtime is an older release without a C function a
    feature needs (abi/versions.py SINCE): the feature is unavailable there,
    which is a fact of the chosen runtime, not a failure of the library."""


class _Absent:
    """Stands in for a C function an older runtime does not export; calling
    it raises RuntimeLacks naming the function and its first release."""

    def __init__(self, name: str, runtime: Runtime) -> None:
        self.name = name
        self.runtime = runtime

    def __call__(self, *args: Any) -> Any:
        raise RuntimeLacks(lacks_message(self.name, self.runtime.version_text()))


def lacks_message(name: str, version: Optional[str]) -> str:
    """ "the runtime (0.1.12) lacks TVMFFIX, first exported by apache-tvm-ffi 0.1.14" """
    which = f"the runtime ({version})" if version else "the runtime"
    return f"{which} lacks {name}, first exported by apache-tvm-ffi {SINCE.get(name, '?')}"


class Runtime(CFunctions):
    """A loaded libtvm_ffi.so with declared functions and small helpers."""

    def __init__(self, path: Union[str, os.PathLike[str]]) -> None:
        self.path = Path(path).resolve()
        try:
            self.lib = ctypes.CDLL(str(self.path), mode=os.RTLD_NOW | os.RTLD_GLOBAL)
        except OSError as e:
            raise InputError(f"cannot load runtime {self.path}: {e}") from None
        # C functions newer than the oldest release are optional: a runtime of
        # any release hosts, and what needs a missing one raises RuntimeLacks.
        self.missing = bind_c_api(self, self.lib)
        required = [n for n in self.missing if n not in SINCE]
        if required:
            raise InputError(
                f"{self.path} is not a TVM-FFI runtime: missing "
                + ", ".join(required[:5])
                + (" ..." if len(required) > 5 else "")
            )
        for name in self.missing:
            setattr(self, name, _Absent(name, self))
        self.rt = bind_rt_api(self.lib)
        # name -> values.Function (values.global_func); Any: values imports this module
        self._globals: dict[str, Any] = {}
        self._lock = threading.Lock()

    # -- identity -----------------------------------------------------------
    @property
    def is_ours(self) -> bool:
        """True when this runtime exports our tvmffi_rt_* API."""
        return "tvmffi_rt_library_load" in self.rt

    def version(self) -> tuple[int, int, int]:
        v = TVMFFIVersion()
        self.TVMFFIGetVersion(byref(v))
        return (v.major, v.minor, v.patch)

    def version_text(self) -> str:
        return ".".join(map(str, self.version()))

    def has(self, name: str) -> bool:
        """Does this runtime export the C function `name`?"""
        return name not in self.missing

    # -- errors -------------------------------------------------------------
    def take_error(self) -> FFIErrorBase:
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

    def check(self, rc: int) -> None:
        if rc != 0:
            raise self.take_error()

    # -- objects ------------------------------------------------------------
    def inc_ref(self, handle: int) -> None:
        self.TVMFFIObjectIncRef(handle)

    def dec_ref(self, handle: int) -> None:
        self.TVMFFIObjectDecRef(handle)

    def strong_count(self, handle: int) -> int:
        """Strong reference count (our runtime's probe, else read from the header)."""
        f = self.rt.get("tvmffi_rt_strong_count")
        if f is not None:
            return int(f(handle))
        return int(abi.TVMFFIObject.from_address(handle).combined_ref_count & 0xFFFFFFFF)

    def live_objects(self) -> Optional[int]:
        f = self.rt.get("tvmffi_rt_live_objects")
        return None if f is None else int(f())

    # -- globals ------------------------------------------------------------
    def get_global_handle(self, name: str) -> Optional[int]:
        """Owned handle of global function `name`, or None when absent."""
        ba, _keep = byte_array(name)
        out = c_void_p()
        self.check(self.TVMFFIFunctionGetGlobal(byref(ba), byref(out)))
        return out.value

    # -- types --------------------------------------------------------------
    def type_info(self, type_index: int) -> Optional[TVMFFITypeInfo]:
        """TVMFFITypeInfo of an index, or None when the runtime has none."""
        valid = self.rt.get("tvmffi_rt_type_index_valid")
        if valid is not None and not valid(type_index):
            return None
        p = self.TVMFFIGetTypeInfo(type_index)
        return p.contents if p else None

    def type_key_to_index(self, key: str) -> Optional[int]:
        ba, _keep = byte_array(key)
        out = c_int32()
        if self.TVMFFITypeKeyToIndex(byref(ba), byref(out)) != 0:
            self.take_error()  # clear it: an unknown key is an answer, not a failure
            return None
        return out.value

    def type_key(self, type_index: int) -> str:
        if type_index in abi.STATIC_TYPE_NAMES and type_index < abi.kTVMFFIStaticObjectBegin:
            return abi.STATIC_TYPE_NAMES[type_index]
        info = self.type_info(type_index)
        if info is None:
            return abi.STATIC_TYPE_NAMES.get(type_index, f"<type {type_index}>")
        return abi.byte_array_str(info.type_key)


_RUNTIME: Optional[Runtime] = None
_RUNTIME_LOCK = threading.Lock()


def get_runtime(path: Union[str, os.PathLike[str], None] = None) -> Runtime:
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
                    f"{Path(path).resolve()} can only be used in another process"
                )
            return _RUNTIME
        if path is None:
            from . import paths

            path = paths.runtime_library()
        p = Path(path)
        if not p.is_file():
            raise InputError(f"{path}: no such runtime library")
        _RUNTIME = Runtime(p)
        return _RUNTIME


def loaded_runtime() -> Optional[Runtime]:
    """The runtime already loaded in this process, or None."""
    return _RUNTIME


def exports_c_api(path: Union[str, os.PathLike[str]]) -> bool:
    """True when the file at `path` defines all 50 C functions (read from its
    dynamic symbol table, without loading it): the newest ABI, as ours does."""
    try:
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection

        with open(path, "rb") as f:
            elf = ELFFile(f)
            dynsym = elf.get_section_by_name(".dynsym")
            if not isinstance(dynsym, SymbolTableSection):
                return False
            names = {s.name for s in dynsym.iter_symbols() if s["st_shndx"] != "SHN_UNDEF"}
    except Exception:
        return False
    return all(n in names for n in C_API)

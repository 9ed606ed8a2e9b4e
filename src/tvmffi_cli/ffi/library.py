"""In-process Python API: load a TVM-FFI library and call its functions.

    lib = tvmffi_cli.load("lib.so")
    lib.add_one(x, y)            # calls __tvm_ffi_add_one; NumPy arrays zero-copy
    lib["add_one"], lib.function_names(), lib.metadata("add_one"), lib.doc("add_one")
    lib.globals_registered       # global functions the library registered at load
    lib.kitchen.add, lib["kitchen.add"], lib.get_global("kitchen.add")   # a global

The runtime is loaded RTLD_GLOBAL first (ours by default), then the library:
through tvmffi_rt_library_load on our runtime, through the runtime's own
ffi.ModuleLoadFromFile on the official one, and as a last resort with a plain
dlopen + dlsym of `__tvm_ffi_<name>` wrapped by TVMFFIFunctionCreate.
"""

from __future__ import annotations

import ctypes
import json
import os
import threading
from ctypes import byref, c_void_p
from pathlib import Path
from typing import Any, Optional, Union

from ..abi import structs as abi
from ..abi.symbols import FUNC_PREFIX, RUNTIME_TYPE_PREFIX, SPECIAL_PREFIX
from ..errors import CheckFailed, InputError
from . import errors as ffi_errors
from . import registry, tensors, values
from .runtime import Runtime, byte_array, get_runtime


def exported_function_names(path: Union[str, os.PathLike[str]]) -> list[str]:
    """Sorted names <name> of the `__tvm_ffi_<name>` code exports of a file
    (special `__tvm_ffi__*` symbols excluded), read from its symbol table."""
    from ..binary import open_binary

    names: Optional[list[str]] = None
    try:
        b = open_binary(str(path))
        try:
            names = [s.name for s in b.symbols if s.kind == "code"]
        finally:
            b.close()
    except Exception:  # a file our readers refuse: ask pyelftools
        names = None
    if names is None:
        names = _elf_code_exports(path)
    out = set()
    for n in names:
        if n.startswith(FUNC_PREFIX) and not n.startswith(SPECIAL_PREFIX):
            out.add(n[len(FUNC_PREFIX) :])
    return sorted(out)


def _elf_code_exports(path: Union[str, os.PathLike[str]]) -> list[str]:
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            sec = elf.get_section_by_name(".dynsym")
            if not isinstance(sec, SymbolTableSection):
                return []
            return [
                s.name
                for s in sec.iter_symbols()
                if s["st_shndx"] != "SHN_UNDEF"
                and s["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC")
            ]
    except (ELFError, OSError, ValueError) as e:
        from ..errors import FormatError

        raise FormatError(f"{path}: cannot read symbols: {e}") from None


class LibraryLoadError(CheckFailed):
    """The library itself failed to load: its initializer raised, or the
    dynamic loader refused it (a missing symbol or dependency). Exit 1."""


class Library:
    """A loaded library. Attribute access and [] return callable Functions:
    exports first, then globals (`lib.testing.add_one`, `lib["testing.add_one"]`)."""

    def __init__(
        self,
        path: Path,
        rt: Runtime,
        module: Optional[values.Module],
        dl: Optional[ctypes.CDLL],
        globals_registered: list[str],
        types_registered: list[str],
        tensor_mode: Optional[str] = None,
    ) -> None:
        self.path = path
        self.runtime = rt
        self.module = module  # values.Module, or None on the plain-dlopen path
        self._dl = dl  # ctypes.CDLL on the plain-dlopen path
        self.globals_registered = globals_registered
        self.types_registered = types_registered
        self.tensor_mode = tensor_mode or values.DEFAULT_TENSOR_MODE
        self._funcs: dict[str, values.Function] = {}
        self._lock = threading.Lock()
        self._names: Optional[list[str]] = None

    # -- functions ----------------------------------------------------------
    def get_function(self, name: str) -> Optional[values.Function]:
        """The `__tvm_ffi_<name>` export as a Function, or None."""
        f = self._funcs.get(name)
        if f is not None:
            return f
        f = self._lookup(name)
        if f is None:
            return None
        f.name = name
        f.tensor_mode = self.tensor_mode
        with self._lock:
            self._funcs[name] = f
        return f

    def _lookup(self, name: str) -> Optional[values.Function]:
        rt = self.runtime
        if self.module is not None:
            getter = rt.rt.get("tvmffi_rt_module_get_function")
            if getter is not None:
                ba, _k = byte_array(name)
                out = c_void_p()
                rt.check(getter(self.module.handle, byref(ba), 0, byref(out)))
                return values.Function(out.value, rt) if out.value else None
            f = self.module.get_function(name)
            return f if isinstance(f, values.Function) else None
        return self._dlsym_function(FUNC_PREFIX + name)

    def _dlsym_function(self, symbol: str) -> Optional[values.Function]:
        try:
            addr = ctypes.cast(getattr(self._dl, symbol), c_void_p).value
        except AttributeError:
            return None
        rt = self.runtime
        out = c_void_p()
        rt.check(rt.TVMFFIFunctionCreate(None, addr, None, byref(out)))
        return values.Function(out.value, rt) if out.value else None

    def __getattr__(self, name: str) -> Any:
        """An export, else a global of that name, else the namespace of the
        globals under it: `lib.add_one`, `lib.testing.add_one`."""
        if name.startswith("_"):
            raise AttributeError(name)
        found = self.get_function(name) or self._global_or_namespace(name)
        if found is None:
            raise AttributeError(self._missing(name))
        return found

    def __getitem__(self, name: str) -> values.Function:
        """An export, else a global: `lib["add_one"]`, `lib["testing.add_one"]`."""
        f = self._export_or_global(name)
        if f is None:
            raise KeyError(self._missing(name))
        return f

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._export_or_global(name) is not None

    def __dir__(self) -> list[str]:
        tops = {g.split(".", 1)[0] for g in self.globals_registered}
        return sorted(set(super().__dir__()) | set(self.function_names()) | tops)

    def _export_or_global(self, name: str) -> Optional[values.Function]:
        f = self.get_function(name) if "." not in name else None  # dotted: globals only
        return f if f is not None else self.get_global(name)

    def _global_or_namespace(self, name: str) -> Any:
        g = self.get_global(name)
        if g is not None:
            return g
        if any(n.startswith(name + ".") for n in registry.list_globals(self.runtime)):
            return GlobalNamespace(self, name)
        return None

    def _missing(self, name: str) -> str:
        import difflib

        try:
            known = self.function_names() + list(self.globals_registered)
        except Exception:  # a file our readers refuse: say what is missing anyway
            known = list(self.globals_registered)
        close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
        said = f"{self.path.name} has no function {name!r} (no export, no global)"
        return said + (f"; closest: {', '.join(close)}" if close else "")

    def function_names(self) -> list[str]:
        """Names of the library's `__tvm_ffi_<name>` exports, sorted."""
        if self._names is None:
            self._names = exported_function_names(self.path)
        return list(self._names)

    # -- metadata and docs ---------------------------------------------------
    def metadata_raw(self, name: str) -> Optional[str]:
        """The string returned by `__tvm_ffi__metadata_<name>`, or None."""
        return self._special(name, "ffi.ModuleGetFunctionMetadata", "metadata")

    def metadata(self, name: str) -> Any:
        """Parsed metadata JSON of a function, or None (absent or not JSON)."""
        raw = self.metadata_raw(name)
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return None

    def doc(self, name: str) -> Optional[str]:
        """Docstring of a function (`__tvm_ffi__doc_<name>`), or None."""
        return self._special(name, "ffi.ModuleGetFunctionDoc", "doc")

    def _special(self, name: str, global_name: str, what: str) -> Optional[str]:
        rt = self.runtime
        if self.module is not None:
            g = registry.get_global(rt, global_name)
            if g is not None:
                v = g(self.module, name, False)
                return v if isinstance(v, str) else None
            fn = self._lookup(f"_{what}_{name}")  # __tvm_ffi__<what>_<name>
        else:
            fn = self._dlsym_function(f"{SPECIAL_PREFIX}{what}_{name}")
        if fn is None:
            return None
        v = fn()
        return v if isinstance(v, str) else None

    # -- globals -------------------------------------------------------------
    def get_global(self, name: str) -> Optional[values.Function]:
        f: Optional[values.Function] = registry.get_global(self.runtime, name)
        if f is not None:
            f.name = name
            f.tensor_mode = self.tensor_mode
        return f

    def describe(self) -> Any:
        """tvmffi_rt_module_describe JSON of the library module (our runtime), or None."""
        f = self.runtime.rt.get("tvmffi_rt_module_describe")
        if f is None or self.module is None:
            return None
        out = abi.TVMFFIAny()
        self.runtime.check(f(self.module.handle, byref(out)))
        v = values.any_to_py(self.runtime, out)
        return json.loads(v) if isinstance(v, str) else None

    def __repr__(self) -> str:
        return f"<Library {self.path}>"


class GlobalNamespace:
    """`lib.testing`: the global functions named `testing.*`, as attributes
    (`lib.testing.add_one` is `lib.get_global("testing.add_one")`)."""

    def __init__(self, lib: Library, prefix: str) -> None:
        self._lib = lib
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        full = f"{self._prefix}.{name}"
        found = self._lib._global_or_namespace(full)
        if found is None:
            raise AttributeError(self._lib._missing(full))
        return found

    def __dir__(self) -> list[str]:
        head = self._prefix + "."
        names = registry.list_globals(self._lib.runtime)
        return sorted({n[len(head) :].split(".", 1)[0] for n in names if n.startswith(head)})

    def __repr__(self) -> str:
        return f"<globals {self._prefix}.* of {self._lib.path.name}>"


# Library modules stay referenced for the life of the process: values a
# library made (Tensors with its deleter, Functions running its code) may
# outlive the Library object, and unloading the code under them would crash.
_keep_modules: list[values.Module] = []


#: The global that lists type keys; runtimes before apache-tvm-ffi 0.1.3 lack it.
TYPE_KEYS_GLOBAL = "ffi.GetRegisteredTypeKeys"


def _type_keys(rt: Runtime) -> set[str]:
    try:
        return set(registry.registered_type_keys(rt))
    except KeyError:  # a runtime without ffi.GetRegisteredTypeKeys
        return set()


def types_unlisted_note(rt: Runtime) -> Optional[str]:
    """Why the types a library registers cannot be listed on `rt`, or None."""
    if TYPE_KEYS_GLOBAL in rt._globals:
        return None
    try:
        registry.registered_type_keys(rt)
    except KeyError:
        return (
            f"types cannot be listed: the runtime ({rt.version_text()}) has no "
            f"{TYPE_KEYS_GLOBAL} (apache-tvm-ffi 0.1.3+)"
        )
    return None


def _check_loadable_file(p: Path) -> None:
    """InputError (the user's file is wrong, exit 2) for a file the dynamic
    loader cannot even start on; a library that fails while loading is a
    LibraryLoadError (exit 1) instead."""
    import sys

    try:
        with open(p, "rb") as f:
            head = f.read(4)
    except OSError as e:
        raise InputError(f"{p}: {e.strerror}") from None
    magic = {b"\x7fELF"} if sys.platform.startswith("linux") else None
    if magic is not None and head not in magic:
        raise InputError(f"{p}: not a shared library (no ELF header)")


def load(
    path: Union[str, os.PathLike[str]],
    runtime: Union[str, os.PathLike[str], None] = None,
    tensor_mode: Optional[str] = None,
) -> Library:
    """Load the library at `path` into this process and return a Library.

    runtime: path of the libtvm_ffi.so to host it (default: the one already
    loaded, else ours). tensor_mode: "dltensor" (default) or "object" for how
    NumPy arrays are passed."""
    if tensor_mode is not None and tensor_mode not in values.TENSOR_MODES:
        raise InputError(f"tensor_mode must be one of {', '.join(values.TENSOR_MODES)}")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{path}: no such file")
    p = p.resolve()
    _check_loadable_file(p)
    rt = get_runtime(runtime)
    tensors.ensure_cpu_allocator(rt)
    before_globals = set(registry.list_globals(rt))
    before_types = _type_keys(rt)
    module: Optional[values.Module] = None
    dl: Optional[ctypes.CDLL] = None
    loader = rt.rt.get("tvmffi_rt_library_load")
    try:
        if loader is not None:
            out = c_void_p()
            rt.check(loader(os.fsencode(str(p)), byref(out)))
            module = values.Module(out.value, rt) if out.value else None
        elif rt.get_global_handle("ffi.ModuleLoadFromFile") is not None:
            m = values.global_func(rt, "ffi.ModuleLoadFromFile")(str(p))
            module = m if isinstance(m, values.Module) else None
    except ffi_errors.FFIErrorBase as e:
        raise LibraryLoadError(f"cannot load {path}: {e.kind}: {e}") from None
    if module is None and loader is None:
        try:
            # bind lazily like the reference loader: a library may import
            # symbols this runtime lacks and never call them
            dl = ctypes.CDLL(str(p), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
        except OSError as e:
            raise LibraryLoadError(f"cannot load {path}: {e}") from None
    if module is not None:
        _keep_modules.append(module)
    after_globals = set(registry.list_globals(rt))
    after_types = _type_keys(rt)
    # The runtime's own types (ffi.*) that the library's headers registered
    # lazily while loading are not the library's.
    new_types = sorted(
        k for k in after_types - before_types if not k.startswith(RUNTIME_TYPE_PREFIX)
    )
    return Library(
        p, rt, module, dl, sorted(after_globals - before_globals), new_types, tensor_mode
    )

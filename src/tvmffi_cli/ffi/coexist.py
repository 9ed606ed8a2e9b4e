"""tvmffi's runtime and the official `tvm_ffi` package in one process
(docs/python-api.md, "load() and the official tvm_ffi package").

Both provide libtvm_ffi.so with one global function registry; the official
runtime's start-up aborts the process when ours is already there. So
`tvmffi_cli.load()` hosts libraries with the official runtime when `tvm_ffi`
is imported first, and once ours is loaded turns `import tvm_ffi` into
RuntimeConflict (an ImportError) instead of an abort.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import cast

from ..errors import InputError


class RuntimeConflict(InputError, ImportError):
    """tvmffi's libtvm_ffi.so and the official `tvm_ffi` package's cannot
    serve one process in the asked order (see docs/python-api.md). It is an
    ImportError too: `import tvm_ffi` raises it after load()."""


_GUARD_MESSAGE = (
    "tvmffi_cli.load() put tvmffi's libtvm_ffi.so in this process; the official tvm_ffi "
    "package would load a second runtime with the same global registry and abort the "
    "process. Import tvm_ffi before calling tvmffi_cli.load() (load then hosts libraries "
    "with tvm_ffi's runtime), or use tvmffi_cli.inspect_library()/call(), which run "
    "libraries in a child process."
)


class _RefuseLoader(importlib.abc.Loader):
    """Loader of tvm_ffi once our runtime is in the process: refuses to run it."""

    def create_module(self, spec: ModuleSpec) -> None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        raise RuntimeConflict(_GUARD_MESSAGE, name=module.__name__)


class _OfficialImportGuard(importlib.abc.MetaPathFinder):
    """A meta path finder that turns `import tvm_ffi` into an ImportError once
    our runtime is loaded (the official runtime's start-up would abort).
    Looking the package up (importlib.util.find_spec) still finds it: the
    spec is the real one, with a loader that refuses to execute it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "tvm_ffi" and not fullname.startswith("tvm_ffi."):
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(fullname, path, target)
            if spec is not None:
                spec.loader = _RefuseLoader()
                return cast(ModuleSpec, spec)
        return None


def official_runtime_loaded() -> str | None:
    """The path of the official package's libtvm_ffi.so when `tvm_ffi` is
    imported in this process, else None."""
    mod = sys.modules.get("tvm_ffi")
    if mod is None or not getattr(mod, "__file__", None):
        return None
    p = os.path.join(os.path.dirname(str(mod.__file__)), "lib", "libtvm_ffi.so")
    return os.path.realpath(p) if os.path.isfile(p) else None


def guard_official_import() -> None:
    """From now on `import tvm_ffi` raises RuntimeConflict (our runtime is in
    the process); installed once."""
    if not any(isinstance(f, _OfficialImportGuard) for f in sys.meta_path):
        sys.meta_path.insert(0, _OfficialImportGuard())

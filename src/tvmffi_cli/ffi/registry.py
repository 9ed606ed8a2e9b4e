"""What a runtime has registered: global functions by name, their names, the
type keys (read through the value layer)."""

from __future__ import annotations

from ctypes import byref
from typing import Optional

from ..abi.structs import TVMFFIAny
from .runtime import Runtime
from .values import Function, any_to_py, global_func


def get_global(rt: Runtime, name: str) -> Optional[Function]:
    """Function wrapper of a global, or None."""
    h = rt.get_global_handle(name)
    return None if h is None else Function(h, rt)


def list_globals(rt: Runtime) -> list[str]:
    """Sorted names of all registered global functions."""
    f = rt.rt.get("tvmffi_rt_list_globals")
    if f is not None:
        out = TVMFFIAny()
        rt.check(f(byref(out)))
        return sorted(any_to_py(rt, out))
    functor = global_func(rt, "ffi.FunctionListGlobalNamesFunctor")()
    n = functor(-1)
    return sorted(functor(i) for i in range(n))


def registered_type_keys(rt: Runtime) -> list[str]:
    return list(global_func(rt, "ffi.GetRegisteredTypeKeys")())

"""Python callables as ffi.Function: the table of live callables and the two
C entry points (safe call, deleter) every such Function shares.

The conversion of arguments and results is given by the caller (values.py),
so this module sits below the conversion layer: values.py turns a Python
callable argument into a Function through `create`, and the trampoline
decodes with the functions it was given.
"""

from __future__ import annotations

import ctypes
import threading
from ctypes import byref, c_void_p
from typing import Any, Callable, Optional

from ..abi import structs as abi
from .errors import _kind_of
from .runtime import Runtime

#: Decodes one borrowed argument (TVMFFIAny) into a Python value.
Decode = Callable[[Runtime, Any], Any]
#: Writes an owned Any of a Python value into a TVMFFIAny.
Encode = Callable[[Runtime, Any, Any], None]

_callbacks: dict[int, tuple[Callable[..., Any], Runtime, Decode, Encode]] = {}
_callback_lock = threading.Lock()
_callback_next = [1]


def _callback_safe_call(self_ptr: Optional[int], args: Any, num_args: int, result: Any) -> int:
    entry = _callbacks.get(self_ptr or 0)
    if entry is None:
        return -1
    fn, rt, decode, encode = entry
    try:
        pyargs = [decode(rt, args[i]) for i in range(num_args)]
        encode(rt, fn(*pyargs), result.contents)
        return 0
    except BaseException as e:  # every failure must become a raised ffi error
        try:
            rt.TVMFFIErrorSetRaisedFromCStr(_kind_of(e).encode(), str(e).encode("utf-8", "replace"))
        except Exception:
            pass
        return -1


def _callback_deleter(self_ptr: Optional[int]) -> None:
    with _callback_lock:
        _callbacks.pop(self_ptr or 0, None)


_CB_SAFE_CALL = abi.TVMFFISafeCallType(_callback_safe_call)
_CB_DELETER = abi.TVMFFISelfDeleter(_callback_deleter)


def create(rt: Runtime, fn: Callable[..., Any], decode: Decode, encode: Encode) -> int:
    """Owned handle of a new ffi.Function that calls `fn`, decoding its
    arguments with `decode` and writing its result with `encode`."""
    with _callback_lock:
        token = _callback_next[0]
        _callback_next[0] += 1
        _callbacks[token] = (fn, rt, decode, encode)
    h = c_void_p()
    rc = rt.TVMFFIFunctionCreate(
        token, ctypes.cast(_CB_SAFE_CALL, c_void_p), ctypes.cast(_CB_DELETER, c_void_p), byref(h)
    )
    if rc != 0:
        with _callback_lock:
            _callbacks.pop(token, None)
        raise rt.take_error()
    return h.value or 0

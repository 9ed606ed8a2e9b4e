"""Child side: warm the probe's own code in the zygote, before it forks.

Every function is probed in a new probe child of the zygote (workers.py).
A child that builds its tensors and shared objects, and runs the probe's
Python code for the first time, pays for it in CPU and in pages copied on
write, per function. Here the zygote probes two stand-in functions of ours
once (a typed one whose metadata declares every kind of value the probe
builds, and one without metadata), so those caches and code paths are
ready in every child. No library code runs: the callee and its metadata
getter are ctypes callbacks. Steps that start threads are skipped (a zygote
must stay single-threaded to fork).
"""

from __future__ import annotations

import ctypes
import json
from typing import Any

from ..abi.symbols import FUNC_PREFIX, METADATA_PREFIX
from .probe_memory import ANY

_TYPED = "tvmffi-warm-up-typed"
_UNTYPED = "tvmffi-warm-up-untyped"
_PARAMS = [
    "int",
    "float",
    "bool",
    "ffi.String",
    "ffi.Bytes",
    "DataType",
    "Device",
    "ffi.Tensor",
    "DLTensor*",
    "ffi.Shape",
    "ffi.Function",
]
_CALL = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p
)


def _schema() -> str:
    def t(key: str, *args: Any) -> dict[str, Any]:
        return {"type": key, "args": list(args)} if args else {"type": key}

    params = [t(p) for p in _PARAMS]
    params += [t("ffi.Array", t("int")), t("ffi.Map", t("ffi.String"), t("int"))]
    params.append(t("Optional", t("int")))
    fn = {"type": "ffi.Function", "named_args": {"return": [t("int")], "params": params}}
    return json.dumps({"type_schema": json.dumps(fn)})


def warm_up(p: Any) -> None:
    """Probe the stand-ins once with p, probe_task.Prober (duck-typed: that
    module imports this one), events discarded; p is left as it was."""
    meta = _schema().encode()

    def callee(_self: Any, _args: Any, _n: int, result: int) -> int:
        ctypes.memset(result, 0, ANY)
        return 0

    def getter(_self: Any, _args: Any, _n: int, result: int) -> int:
        raw = p.string_any(meta)
        ctypes.memmove(result, raw, ANY)
        return 0

    keep = [_CALL(callee), _CALL(getter)]
    addrs = {
        FUNC_PREFIX + _TYPED: ctypes.cast(keep[0], ctypes.c_void_p).value,
        FUNC_PREFIX + _UNTYPED: ctypes.cast(keep[0], ctypes.c_void_p).value,
        METADATA_PREFIX + _TYPED: ctypes.cast(keep[1], ctypes.c_void_p).value,
    }
    emit, symbol = p.emit, p.symbol
    p.emit = lambda _msg: None
    p.symbol = lambda name: addrs.get(name) or symbol(name)
    try:
        p.probe({"name": _TYPED, "getters": ["metadata"], "skip": ["threads"]})
        p.probe({"name": _UNTYPED, "getters": [], "skip": ["threads"]})
    except Exception:
        pass  # a cold child still works: warming is only an optimisation
    finally:
        p.emit = emit
        del p.symbol  # the class's method again
        p.step = None
        memo = p.__dict__.get("_callers") or {}
        for name in (_TYPED, _UNTYPED):
            memo.pop((name, False), None)
    p._cb_keep.extend(keep)

"""Child side: what the probe needs beyond exported, typed functions.

- Global functions a library registers while it loads (TVMFFIFunctionSetGlobal
  from a constructor, or static registration in C++): real libraries such as
  xgrammar expose their whole API that way. `global_names` lists the registry;
  the loader diffs it around the load, and `caller` calls a global through
  TVMFFIFunctionCall so the probe treats it like an export.
- Functions without metadata: besides the zero-argument call they are called
  with object arguments (`OBJECT_STEPS`), enough to see a callee that keeps or
  drops a reference to an argument or writes into the argument array.

Works on the probe worker's Prober (conform/probe_task*.py), duck-typed: it
needs `rt`, `c` (raw C functions), `call_global`, `string_of`, `release`,
`string_any`, `tensor`, `function`, `symbol`, `_keep` and `take_error`.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time
from collections.abc import Callable, Collection
from typing import Any

from ..abi.symbols import FUNC_PREFIX
from . import sigs

ANY = 16
_SAFE_CALL = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_void_p
)

#: Probe steps with object arguments for functions without metadata:
#: step -> the kinds of the arguments passed. One-argument calls with the
#: containers C++ signatures take most (Array<int64_t>, Map<String, int64_t>,
#: ...) reach typed parameters that a String never passes. Calls with tensors
#: are the signature search's ("objects:search", probe_kernel.py): the
#: signature it finds gets the typed tensor and kernel probes.
OBJECT_STEPS: dict[str, tuple[str, ...]] = {
    "objects:1": ("str",),
    "objects:4": ("str", "array", "tensor", "function"),
    "objects:int": ("int",),
    "objects:array-int": ("array",),
    "objects:array-float": ("array-float",),
    "objects:array-str": ("array-str",),
    "objects:map": ("map",),
    "objects:nested": ("nested",),
}


#: Steps of the "kernel:all" sweep of the kernel probes (probe_steps.py).
KERNEL_SWEEP = [
    "kernel:strides",
    "tensor:shrink:0",
    "tensor:shrink:1",
    "tensor:shrink:2",
    "tensor:shrink:3",
    "kernel:heap",
    "kernel:scale",
]

#: Object steps run as one sweep ("objects:all") for functions without metadata.
SWEPT_OBJECTS = [s for s in OBJECT_STEPS if s not in ("objects:1", "objects:4")]


def sweep(prefix: str) -> list[str]:
    """The steps of the sweep "<prefix>:all"."""
    from .probe_tensors import VARIANTS

    if prefix == "objects":
        return SWEPT_OBJECTS
    if prefix == "kernel":
        return KERNEL_SWEEP
    return [f"{prefix}:{v}" for v in VARIANTS]


def variant_steps(prefix: str, split: Collection[str] = ()) -> list[str]:
    """ "<prefix>:all" (a sweep: every step of it in one step, one message),
    or after that step crashed a worker, each of its steps (a crash then
    names its call)."""
    if f"{prefix}:all" in split:
        return sweep(prefix)
    return [f"{prefix}:all"]


Caller = Callable[[Any, int, int, int], int]


def _int(v: int) -> bytes:
    """The raw bytes of an int Any."""
    return struct.pack("<iIq", sigs.K_INT, 0, v)


def global_names(p: Any) -> list[str] | None:
    """Names of every registered global function (None when the runtime
    cannot list them)."""
    try:
        functor = p.call_global("ffi.FunctionListGlobalNamesFunctor", [])
    except Exception:
        return None
    try:
        (ti,) = struct.unpack_from("<i", functor)
        if ti != sigs.K_FUNCTION:
            return None
        (h,) = struct.unpack_from("<Q", functor, 8)
        n_raw = _call_handle(p, h, [_int(-1)])
        if n_raw is None:
            return None
        n = struct.unpack_from("<q", n_raw, 8)[0]
        names = []
        for i in range(max(0, min(n, 1 << 20))):
            raw = _call_handle(p, h, [_int(i)])
            if raw is None:
                continue
            s = p.string_of(raw)
            p.release(raw)
            if s is not None:
                names.append(s.decode("utf-8", "replace"))
        return names
    finally:
        p.release(functor)


def _call_handle(p: Any, h: int, arg_raws: list[bytes]) -> bytes | None:
    args = (ctypes.c_char * max(ANY, ANY * len(arg_raws))).from_buffer_copy(
        b"".join(arg_raws).ljust(ANY, b"\0")
    )
    out = (ctypes.c_char * ANY)()
    rc = p.c.TVMFFIFunctionCall(
        h, ctypes.cast(args, ctypes.c_void_p), len(arg_raws), ctypes.cast(out, ctypes.c_void_p)
    )
    if rc != 0:
        p.take_error()
        return None
    return bytes(out)


def caller(p: Any, name: str, is_global: bool) -> tuple[Caller | None, str | None]:
    """(call(self, args, num_args, result) -> rc, why not) for an export
    `__tvm_ffi_<name>` or a registered global `name` (memoized per worker)."""
    memo = p.__dict__.setdefault("_callers", {})
    got = memo.get((name, is_global))
    if got is None:
        got = memo[(name, is_global)] = _caller(p, name, is_global)
    return got  # type: ignore[no-any-return]


def _caller(p: Any, name: str, is_global: bool) -> tuple[Caller | None, str | None]:
    if is_global:
        h = p.rt.get_global_handle(name)
        if not h:
            return None, f"the global function {name} is no longer registered"
        p._keep.append(h)  # owned for the worker's life

        def call_global(_self: Any, args: int, n: int, result: int) -> int:
            return int(p.c.TVMFFIFunctionCall(h, args, n, result))

        return call_global, None
    addr = p.symbol(FUNC_PREFIX + name)
    if not addr:
        return None, f"{FUNC_PREFIX}{name} cannot be resolved"
    fn = _SAFE_CALL(addr)

    def call_export(_self: Any, args: int, n: int, result: int) -> int:
        return int(fn(None, args, n, result))

    return call_export, None


def object_args(p: Any, step: str, owned: list[bytes]) -> list[bytes]:
    """The argument Anys of an object step; every object goes to `owned`."""
    raws = []
    base, _, variant = step.partition(":")[2].partition(":")
    kinds = OBJECT_STEPS[f"{step.split(':')[0]}:{base}"]
    # Built once per worker and shared by every function (building them cost
    # more than the calls); references kept by a callee show up all the same
    # as counts that change across its call.
    cache: dict[str, bytes] = p.__dict__.setdefault("_shared_objects", {})
    for kind in kinds:
        if kind == "int":
            raws.append(_int(2))
        elif kind == "tensor":
            p.variant = variant
            raw = p.tensor()
            owned.append(raw)
            raws.append(raw)
        else:
            if kind not in cache:
                cache[kind] = _object(p, kind)
            raws.append(cache[kind])
    return raws


def _object(p: Any, kind: str) -> bytes:
    """An owned object Any of `kind`, kept for the worker's life."""
    if kind in _ELEMENTS:
        return bytes(p.make(_ELEMENTS[kind], []))
    if kind == "str":
        return bytes(p.string_any(b"tvmffi-conform-probe-object"))
    return bytes(p.function())


def _t(key: str, *args: sigs.TypeDict) -> sigs.TypeDict:
    return {"type": key, "args": list(args)}


#: Object kinds built through the typed value builder (ProbeValues.make).
_ELEMENTS: dict[str, sigs.TypeDict] = {
    "array": _t("ffi.Array", _t("int")),
    "array-float": _t("ffi.Array", _t("float")),
    "array-str": _t("ffi.Array", _t("ffi.String")),
    "map": _t("ffi.Map", _t("ffi.String"), _t("int")),
    "nested": _t("ffi.Array", _t("ffi.Array", _t("int"))),
}


def _thread_gone(tid: int | None) -> bool:
    """Has the kernel let thread `tid` go? Signal 0 reaches it while it
    exists (its TLS destructors run before). /proc cannot tell: a probe
    child reads only the zygote's /proc/<pid>, and a thread id inside a PID
    namespace is not the one /proc shows. False when it cannot be told."""
    if tid is None:
        return False
    try:
        os.kill(tid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        pass  # seccomp lets the worker signal only itself here
    return False


def thread_released(p: Any, fn: Caller, raws: list[bytes], guarded: bool) -> list[bool] | None:
    """Per object argument: did the reference the call kept go when the calling
    thread ended? A per-thread context stack (a C++ thread_local, TVM's
    relax.dpl.enter_context) is released then; a leak never is. None when the
    call made in a fresh thread failed."""
    objs = p._objects(raws)
    base = [p.strong(o) for o in objs]
    box: dict[str, Any] = {}  # the probe's observation of the call (JSON it streams)
    t = threading.Thread(target=lambda: box.update(p.call(fn, raws, guarded)))
    t.start()
    t.join()
    if box.get("rc") != 0:
        return None
    grew = [a > b for b, a in box["refcounts"]]
    # join() returns before the thread's TLS destructors have run: wait for
    # them, that is until the kernel has let the thread go; a leak then costs
    # one look, not the whole deadline.
    deadline = time.monotonic() + 0.5
    while True:
        now = [p.strong(o) for o in objs]
        if all(n <= b for n, b in zip(now, base)) or time.monotonic() > deadline:
            break
        if _thread_gone(t.native_id):
            now = [p.strong(o) for o in objs]  # the destructors have all run
            break
        time.sleep(0.002)
    return [g and n <= b for g, n, b in zip(grew, now, base)]

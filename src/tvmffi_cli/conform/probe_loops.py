"""Kernel probes made of repeated calls (child side): heap growth per call
and time at n and 4n (threads calling with arguments of their own:
probe_threads.py).

Loops run in C (tvmffi_rt_time_calls of our runtime: no Python allocation
between the calls, no interpreter in the timings); with another runtime the
heap and scaling steps are skipped with the reason. Timings are the CPU time
of the calling thread, the least of several rounds: another process on the
machine slows a round down, it never speeds one up.
"""

from __future__ import annotations

import ctypes
import time
from typing import Any, Callable

from ..abi.structs import TVMFFIAny
from ..abi.symbols import FUNC_PREFIX
from . import sigs
from .probe_kernel import BASE_SHAPE, Call, Caller, Layout, Msg, layout, tensor_params, time_left
from .probe_layouts import FLOAT32, contiguous, itemsize, tensor_any
from .probe_memory import _LIBC, ANY, CannotSynthesize

#: Heap probe: warm-up calls, then two halves of CALLS calls each.
WARMUP, CALLS = 8, 32
#: ... skipped when they would take longer than this (s), judged by the
#: fastest of three calls (2 s: a call of 28 ms and more).
LOOP_S = 2.0
#: Scaling: skipped when the rounds could take longer than this (s) for a
#: quadratic kernel (a call of 25 ms and more at n).
SCALE_S = 4.0
#: Scaling probe: elements at n and 4n; rounds of each (least kept).
SCALE_N, SCALE_ROUNDS = 256, 5
#: A set of rounds whose 4n:n ratio reaches this is measured again, up to
#: SCALE_SETS sets in all, SCALE_PAUSE_S apart, and the set with the least
#: ratio is reported: load that slows every 4n round of one set (a busy CI
#: machine) made a linear kernel look 12x once in 40 runs. Below the
#: verdict's ratio (checks_kernel.SCALE_RATIO, 8) so a set near it is checked too.
SCALE_CONFIRM, SCALE_SETS, SCALE_PAUSE_S = 6.0, 3, 0.02


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def heap_in_use() -> int | None:
    """Bytes malloc has handed out and not got back (glibc's mallinfo2:
    small chunks and mmap'ed large ones), or None without it."""
    f = getattr(_LIBC, "mallinfo2", None)
    if f is None:
        return None
    f.restype = _Mallinfo2
    f.argtypes = []
    m = f()
    return int(m.uordblks + m.hblkhd)


def _handle(p: Any, name: str, is_global: bool) -> int | None:
    """A Function object for the C timing loop (kept for the child's life)."""
    memo: dict[tuple[str, bool], int | None] = p.__dict__.setdefault("_fn_handles", {})
    key = (name, is_global)
    if key not in memo:
        memo[key] = _function_handle(p, name, is_global)
    return memo[key]


def _function_handle(p: Any, name: str, is_global: bool) -> int | None:
    """A Function object calling the export `__tvm_ffi_<name>` (or the
    registered global), owned for the worker's life: the C call loops
    (tvmffi_rt_time_calls) take one."""
    if is_global:
        h = p.rt.get_global_handle(name)
        if h:
            p._keep.append(h)
        return int(h) if h else None
    addr = p.symbol(FUNC_PREFIX + name)
    if not addr:
        return None
    out = ctypes.c_void_p()
    if p.c.TVMFFIFunctionCreate(None, addr, None, ctypes.byref(out)) != 0 or not out.value:
        p.take_error()
        return None
    return int(out.value)


class _Loop:
    """One argument array called many times in C."""

    def __init__(self, p: Any, h: int, raws: list[bytes]) -> None:
        self.p, self.h, self.n = p, h, len(raws)
        raw = b"".join(raws).ljust(ANY, b"\0")
        self.args = (ctypes.c_char * len(raw)).from_buffer_copy(raw)
        self.fn = p._rt("tvmffi_rt_time_calls")
        self.out = (ctypes.c_int64 * 1)()

    def run(self, calls: int) -> bool:
        ptr = ctypes.cast(self.args, ctypes.POINTER(TVMFFIAny))
        rc = self.fn(self.h, ptr, self.n, calls, 1, self.out)
        if rc != 0:
            self.p.take_error()
        return bool(rc == 0)

    def fastest(self, k: int) -> float | None:
        """The least wall time (s) of k single calls (a slow function is
        slow every time; a call slowed down by other load is not), or None
        when one fails."""
        best = None
        for _ in range(k):
            t0 = time.perf_counter()
            if not self.run(1):
                return None
            t = time.perf_counter() - t0
            best = t if best is None else min(best, t)
            if best > 0.5:
                break  # no other load holds a call up for half a second
        return best

    def cpu_ns(self, calls: int) -> int | None:
        t0 = time.thread_time_ns()
        ok = self.run(calls)
        return time.thread_time_ns() - t0 if ok else None


def _args(p: Any, call: Call, owned: list[bytes], keep: list[Any]) -> list[bytes]:
    """The argument Anys of `call` for a loop (owned tensors go to `owned`)."""
    raws = []
    for i, t in enumerate(call.sig.params):
        if i in call.tensors:
            as_ptr = t["type"] == "DLTensor*"
            raw = tensor_any(p, call.tensors[i], as_ptr, keep)
            if not as_ptr:
                owned.append(raw)
        elif i in call.scalars:
            raw = call.scalars[i]
        else:
            raw = p.make(t, owned)
        raws.append(raw)
    return raws


def heap(p: Any, name: str, fn: Caller, sig: sigs.Sig, is_global: bool = False) -> Msg:
    """Bytes in use by malloc after WARMUP calls, after CALLS more and after
    CALLS more again: a leak grows in both halves, in proportion to the
    calls; a cache fills during the warm-up and stays."""
    if p._rt("tvmffi_rt_time_calls") is None or heap_in_use() is None:
        return {"skipped": "needs tvmffi's runtime (a C call loop) and glibc's mallinfo2"}
    h = _handle(p, name, is_global)
    if h is None:
        return {"skipped": "no function object for the call loop"}
    lay = layout(p, name, fn, sig) if tensor_params(sig) else None
    if tensor_params(sig) and lay is None:
        return {"skipped": "no call with contiguous tensors succeeded"}
    call = Call(p, sig, lay or Layout(1, FLOAT32))
    owned: list[bytes] = []
    keep: list[Any] = []
    try:
        for i in tensor_params(sig):
            call.tensor(i, contiguous(BASE_SHAPE[call.lay.ndim]))
        raws = _args(p, call, owned, keep)
        loop = _Loop(p, h, raws)
        objs = p._objects(raws)
        took = loop.fastest(3)
        if took is None:
            return {"skipped": "the call with valid arguments failed"}
        if took * (WARMUP + 2 * CALLS) > min(LOOP_S, time_left(p) / 2):
            return {"skipped": f"a call takes {took * 1000:.0f} ms: too slow to repeat"}
        if not loop.run(WARMUP - 3):
            return {"skipped": "the call with valid arguments failed when repeated"}
        refs0 = [p.strong(o) for o in objs]
        live0, m0 = p.live(), heap_in_use()
        ok = loop.run(CALLS)
        m1 = heap_in_use()
        ok = ok and loop.run(CALLS)
        m2, live2 = heap_in_use(), p.live()
        refs2 = [p.strong(o) for o in objs]
    except CannotSynthesize as e:
        return {"skipped": str(e)}
    finally:
        for o in owned:
            p.release(o)
        call.done()
    if not ok or m0 is None or m1 is None or m2 is None:
        return {"skipped": "a repeated call failed"}
    return {
        "heap": {
            "calls": CALLS,
            "grew": [m1 - m0, m2 - m1],
            "live": None if live0 is None or live2 is None else live2 - live0,
            "refs": sum(b - a for a, b in zip(refs0, refs2)),
        }
    }


def scale(p: Any, fn: Caller, sig: sigs.Sig, lay: Layout, name: str, is_global: bool) -> Msg:
    """CPU time per call with every tensor of n and of 4n elements (1-d)."""
    if lay.ndim != 1:
        return {"skipped": "a 2-d kernel (the scaling probe grows 1-d tensors)"}
    if p._rt("tvmffi_rt_time_calls") is None:
        return {"skipped": "needs tvmffi's runtime (a C call loop)"}
    h = _handle(p, name, is_global)
    if h is None:
        return {"skipped": "no function object for the call loop"}
    loops = []
    owned: list[bytes] = []
    keep: list[Any] = []
    try:
        for n in (SCALE_N, 4 * SCALE_N):
            call = Call(p, sig, lay)
            for i in tensor_params(sig):
                # A permutation of 1..n (values of 1-byte dtypes wrap at 100).
                mod = 100 if itemsize(lay.dtype) == 1 else n
                call.tensor(i, contiguous((n,)), [(q * 37) % mod + 1 for q in range(n)])
            loops.append(_Loop(p, h, _args(p, call, owned, keep)))
        took = loops[0].fastest(3)
        if took is None:
            return {"skipped": f"a call with {SCALE_N} elements failed"}
        if took * 16 * 2 * SCALE_ROUNDS > min(SCALE_S, time_left(p) / 2):
            return {"skipped": f"a call with {SCALE_N} elements is too slow to time at 4x"}
        if not (loops[0].run(1) and loops[1].run(2)):
            return {"skipped": f"a call with {SCALE_N} or {4 * SCALE_N} elements failed"}
        # Enough calls per round that a round takes about 0.2 ms at n.
        calls = 1
        while calls < 4096:
            t = loops[0].cpu_ns(calls)
            if t is None or t >= 200_000:
                break
            calls *= 4
        best = least_ratio(loops, calls, lambda took: time_left(p) > 2 * took + 0.5)
        if best is None:
            return {"skipped": "a timed call failed"}
    finally:
        for o in owned:
            p.release(o)
        p.__dict__["_kernel_memory"].reset()
    ns = [b / calls for b in best]
    return {"scale": {"n": [SCALE_N, 4 * SCALE_N], "ns": ns, "calls": calls}}


def least_ratio(loops: list[Any], calls: int, more: Callable[[float], bool]) -> list[int] | None:
    """CPU ns of `calls` calls at n and 4n (loops[0], loops[1]): the least of
    SCALE_ROUNDS alternated rounds each; a set whose ratio reaches
    SCALE_CONFIRM is measured again while more(seconds the set took) allows
    (the step's time left), and the set with the least ratio wins. Other
    load only slows a round: a truly superlinear kernel shows its ratio in
    every set. None when a call failed."""
    kept: list[int] | None = None
    for k in range(SCALE_SETS):
        if k:
            time.sleep(SCALE_PAUSE_S)  # out of the burst of load that slowed the last set
        best, t0 = [1 << 62, 1 << 62], time.monotonic()
        for _ in range(SCALE_ROUNDS):
            for j in (0, 1):
                t = loops[j].cpu_ns(calls)
                if t is None:
                    return None
                best[j] = min(best[j], t)
        if kept is None or best[1] * kept[0] < kept[1] * best[0]:
            kept = best
        if kept[1] < SCALE_CONFIRM * kept[0] or not more(time.monotonic() - t0):
            break
    return kept

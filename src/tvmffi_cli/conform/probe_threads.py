"""Threads calling with arguments of their own (child side of thread-safety).

For a function taking tensors whose values matter, n threads each call it
with tensors of its own values (and floats of its own) and must each get
what the same call gives alone. Two things
make a shared scratch buffer show on every run rather than now and then:

- distinct values: threads passing the same values write the same bytes
  into a shared buffer, and the race is invisible;
- the threads are pinned to one CPU for the probe, ask for a short time
  slice (SLICE_NS), and each call is made long enough (larger tensors, up
  to CALL_NS) to be preempted by the scheduler several times: the calls of
  different threads then interleave inside each other whatever the load of
  the machine, instead of only when two of them happen to run on two free
  cores at once.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import time
from typing import Any, Callable

from . import sigs
from .probe_kernel import (
    BASE_SHAPE,
    Call,
    Caller,
    Layout,
    Msg,
    depends,
    layout,
    tensor_params,
    value,
)
from .probe_layouts import Tensor, contiguous, encode
from .probe_loops import _args
from .probe_memory import _LIBC, ANY, CannotSynthesize
from .probe_values import VALID_FLOAT, pod

#: Rounds: every thread makes one call per round, the rounds start together.
ROUNDS = 6
#: A call should take this long (ns) for the scheduler to preempt it (the
#: default time slice is 0.75 to 3 ms): the tensors grow until a call
#: does, up to CAP elements.
CALL_NS = 2_000_000
CAP = 1 << 20


class _SchedAttr(ctypes.Structure):
    """struct sched_attr of sched_setattr(2), its first version (48 bytes)."""

    _fields_ = [
        ("size", ctypes.c_uint32),
        ("policy", ctypes.c_uint32),
        ("flags", ctypes.c_uint64),
        ("nice", ctypes.c_int32),
        ("priority", ctypes.c_uint32),
        ("runtime", ctypes.c_uint64),
        ("deadline", ctypes.c_uint64),
        ("period", ctypes.c_uint64),
    ]


_LIBC.memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
_LIBC.memcmp.restype = ctypes.c_int

#: Linux system call numbers of sched_setattr / sched_getattr.
_SCHED_ATTR_CALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
#: The time slice the pinned threads ask for (ns): since Linux 6.12 a normal
#: thread's sched_runtime is its slice, so a call of a millisecond is
#: preempted several times by the other threads; older kernels ignore it.
SLICE_NS = 100_000


def _short_slice(restore: _SchedAttr | None = None) -> _SchedAttr | None:
    """Ask for a short time slice for the calling thread (or give back the
    attributes `restore` held); returns the attributes it had, or None when
    the kernel (or the sandbox) refuses."""
    import platform

    nrs = _SCHED_ATTR_CALLS.get(platform.machine())
    if nrs is None:
        return None
    if restore is not None:
        _LIBC.syscall(nrs[0], 0, ctypes.byref(restore), 0)
        return None
    was = _SchedAttr()
    if _LIBC.syscall(nrs[1], 0, ctypes.byref(was), ctypes.sizeof(was), 0) != 0:
        return None
    want = _SchedAttr(ctypes.sizeof(_SchedAttr), was.policy, 0, was.nice, was.priority, SLICE_NS)
    if was.policy != 0 or _LIBC.syscall(nrs[0], 0, ctypes.byref(want), 0) != 0:
        return None  # not SCHED_OTHER, or refused: the default slice
    return was


class _Args:
    """One thread's call: its argument array, its tensors, and the bytes of
    those the call writes (restored before every call: a kernel may add to
    its output)."""

    def __init__(self, raws: list[bytes], tensors: list[Tensor], filled: list[bytes]) -> None:
        raw = b"".join(raws).ljust(ANY, b"\0")
        self.n = len(raws)
        self.args = (ctypes.c_char * len(raw)).from_buffer_copy(raw)
        self.tensors = tensors
        self.filled = filled  # the bytes each tensor was given
        self.pristine: list[bytes | None] = [None] * len(tensors)
        self.ns = 0  # the CPU time the last call took
        self.want: list[Any] = []  # per tensor: the outputs the call alone gives (C buffers)


def threads(
    p: Any,
    fn: Caller,
    sig: sigs.Sig,
    name: str,
    n: int,
    parallel: Callable[[int, Callable[[int], None]], None],
) -> Msg | None:
    """None when the function has nothing to make distinct, or the threads'
    calls alone all give one result: the caller then compares n identical
    calls (Prober.call_threads)."""
    tps = tensor_params(sig)
    lay = layout(p, name, fn, sig) if tps else None
    # Kernels only: a call of a few microseconds on scalars leaves no window
    # a pinned thread could be preempted in, and identical calls do.
    if lay is None or lay.ndim > 2 or not depends(p, name, fn, sig, lay):
        return None  # (or every thread's values would give the same result)
    keep: list[Any] = []
    owned: list[bytes] = []
    try:
        shape = BASE_SHAPE[lay.ndim]
        got = _alone(p, fn, sig, lay, shape, n, keep, owned, repeat=True)
        if got is None or len(set(got[1])) == 1:
            return None
        if tps:
            shape = _grow(p, fn, sig, lay, got[0][0].ns, keep, owned)
            if shape != BASE_SHAPE[lay.ndim]:
                got = _alone(p, fn, sig, lay, shape, n, keep, owned)
                if got is None:
                    return None
        per, expected = got
        for a, want in zip(per, expected):
            a.want = [
                None if w is None else ctypes.create_string_buffer(w, len(w)) for w in want[2:]
            ]
        out: list[Msg] = [{"rc": 0, "rounds": ROUNDS} for _ in range(n)]
        cpu = min(os.sched_getaffinity(0))
        # Every round starts all threads at once, each thread's Python work
        # done: the calls then run inside each other on the one CPU.
        start = threading.Barrier(n)

        def work(i: int) -> None:
            mine = os.sched_getaffinity(0)
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError:
                pass  # not pinned: the calls still overlap on a free machine
            slice_was = _short_slice()
            try:
                for r in range(ROUNDS):
                    a = per[i]
                    _restore(a)
                    try:
                        start.wait(timeout=p.timeout)
                    except threading.BrokenBarrierError:
                        return
                    got = _round(p, fn, a, expected[i], sig)
                    if got is not None and "mismatch" not in out[i]:
                        out[i]["mismatch"] = {"round": r + 1, "got": got}
                        if got == "an error":
                            out[i]["rc"] = -1
            finally:
                _short_slice(slice_was)
                try:
                    os.sched_setaffinity(0, mine)
                except OSError:
                    pass

        parallel(n, work)
    except CannotSynthesize:
        return None
    finally:
        for o in owned:
            p.release(o)
        mem = p.__dict__.get("_kernel_memory")
        if mem is not None:
            mem.reset()
    return {"distinct": True, "calls": out, "layout": lay.words(), "shape": list(shape)}


def _grow(
    p: Any,
    fn: Caller,
    sig: sigs.Sig,
    lay: Layout,
    ns: int,
    keep: list[Any],
    owned: list[bytes],
) -> tuple[int, ...]:
    """The shape whose call takes about CALL_NS (thread 0's values): one call
    at 16 times the base size, then as many more elements as a linear kernel
    needs, up to CAP; a kernel slow at the base size keeps it."""
    base = BASE_SHAPE[lay.ndim]
    if ns * 16 >= CALL_NS:
        return base
    mid: tuple[int, ...] = (base[0] * 16,) if lay.ndim == 1 else (base[0] * 4, base[1] * 4)
    a = _thread_args(p, sig, lay, mid, 0, keep, owned)
    if _once(p, fn, a) is None:
        return base
    shape, ns = mid, a.ns
    while ns < CALL_NS:
        bigger = (shape[0] * 2,) if lay.ndim == 1 else (shape[0] * 2, shape[1])
        if contiguous(bigger).numel > CAP:
            break
        shape, ns = bigger, ns * 2
    return shape


def _alone(
    p: Any,
    fn: Caller,
    sig: sigs.Sig,
    lay: Layout,
    shape: tuple[int, ...],
    n: int,
    keep: list[Any],
    owned: list[bytes],
    repeat: bool = False,
) -> tuple[list[_Args], list[tuple[Any, ...]]] | None:
    """Each thread's arguments and what its call gives alone, or None when
    one of these calls fails. Tensors the call changes are the outputs: they
    are restored before every later call, and compared after it. repeat:
    also None when a call repeated gives another result."""
    per = [_thread_args(p, sig, lay, shape, i, keep, owned) for i in range(n)]
    expected: list[tuple[Any, ...]] = []
    for a in per:
        got = _once(p, fn, a)
        if got is None or got[0] != 0:
            return None
        after = [t.memory() for t in a.tensors]
        a.pristine = [b if b != x else None for b, x in zip(a.filled, after)]
        written = tuple(x if b is not None else None for b, x in zip(a.pristine, after))
        expected.append((*got[:2], *written))
        if repeat and _once(p, fn, a) != expected[-1]:
            return None  # the same call alone gives two results: nothing to compare
    return per, expected


def _thread_args(
    p: Any,
    sig: sigs.Sig,
    lay: Layout,
    shape: tuple[int, ...],
    seed: int,
    keep: list[Any],
    owned: list[bytes],
) -> _Args:
    call = Call(p, sig, lay)
    view = contiguous(shape)
    tensors, filled = [], []
    for i in tensor_params(sig):
        period = encode(lay.dtype, [value(i, q, seed) for q in range(23)])
        t = Tensor(call.mem, lay.dtype, view, True)
        raw = (period * (view.span // 23 + 1))[: view.span * t.size]
        t.fill_bytes(raw)
        call.tensors[i] = t
        tensors.append(t)
        filled.append(raw)
    for i, param in enumerate(sig.params):
        if param["type"] == "float":
            call.scalars[i] = pod(sigs.K_FLOAT, struct.pack("<d", VALID_FLOAT + 0.25 * seed))
    return _Args(_args(p, call, owned, keep), tensors, filled)


def _restore(a: _Args) -> None:
    for t, raw in zip(a.tensors, a.pristine):
        if raw is not None:
            t.fill_bytes(raw)


def _round(p: Any, fn: Caller, a: _Args, want: tuple[Any, ...], sig: sigs.Sig) -> str | None:
    """One concurrent call (its outputs restored before): None when it gave
    what the call alone gives, else how it differed. The outputs are
    compared in C (memcmp, without the GIL): no thread holds the others up."""
    result = (ctypes.c_char * ANY)()
    rc = fn(None, ctypes.addressof(a.args), a.n, ctypes.addressof(result))
    res = bytes(result)
    if rc != 0:
        p.take_error()
        return "an error"
    if p.result_problems(res, True):
        return "a malformed result"
    fp = p.fingerprint(res)
    p.release(res)
    if fp != want[1]:
        return "another result"
    tps = tensor_params(sig)
    for j, (t, w) in enumerate(zip(a.tensors, a.want)):
        if w is not None and _LIBC.memcmp(t.first, w, len(w)) != 0:
            return f"other values in tensor argument {tps[j]}"
    return None


def _once(p: Any, fn: Caller, a: _Args) -> tuple[Any, ...] | None:
    """(rc, result fingerprint, the outputs after the call); None when the
    result is malformed (result-invariants reports it)."""
    for t, raw in zip(a.tensors, a.pristine):
        if raw is not None:
            t.fill_bytes(raw)
    result = (ctypes.c_char * ANY)()
    # CPU time of this thread: the call's own cost, whatever else the
    # machine runs (wall time under load would keep the tensors too small)
    t0 = time.thread_time_ns()
    rc = fn(None, ctypes.addressof(a.args), a.n, ctypes.addressof(result))
    a.ns = time.thread_time_ns() - t0
    res = bytes(result)
    if rc != 0:
        p.take_error()
        return (rc,)
    if p.result_problems(res, True):
        return None
    fp = p.fingerprint(res)
    p.release(res)
    return (
        rc,
        fp,
        *(t.memory() if raw is not None else None for t, raw in zip(a.tensors, a.pristine)),
    )

"""Kernel probes (child side): what a function taking tensors must get right
beyond staying inside its data, each step a function of the prober and the
function's signature (from metadata, or found by search without it):

  objects:search   without metadata: signatures tried in turn (sigs.SEARCH_CODES,
                   hinted by the zero-argument error) until a call is accepted
  kernel:strides   strided, transposed and broadcast views against contiguous
                   copies holding the same values: same result, same outputs
  tensor:shrink:K  tensor argument K shorter than the others, every tensor's
                   data ending at a guard page: refused, or no access past it
  kernel:count     a shape of 2^32 + 64 elements backed by 64 real ones: a
                   kernel counting in 32 bits handles 64 and succeeds
  kernel:heap, kernel:scale: probe_loops.py; threads: probe_threads.py
  (probe_steps.py runs each step)

Steps record facts (calls, outputs, refusals); checks_kernel.py judges them.
The base layout (ndim and dtype a kernel accepts) is looked for once, by the
kernel:layout step, and the signature by objects:search; each is recorded
in a step name ("kernel:layout:2:float32", "objects:search:ttf:float32"),
which a child restarted after a crash reads back instead of calling again.
"""

from __future__ import annotations

import ctypes
import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Sequence

from ..abi.dtypes import format_dtype, kDLBfloat, kDLFloat, kDLInt, kDLUInt, parse_dtype
from ..errors import InputError
from . import sigs
from .probe_layouts import FLOAT32, Memory, Tensor, View, contiguous, encode, tensor_any
from .probe_memory import ANY, CannotSynthesize

Msg = Dict[str, Any]
Caller = Callable[[Any, int, int, int], int]

TENSOR_TYPES = ("ffi.Tensor", "DLTensor*")
#: Codes tried for a global registered without a signature.
GLOBAL_CODES = ("t", "tt", "ttt")
#: Layouts tried for a typed kernel, in order: (ndim, (code, bits)).
_LAYOUTS = [
    (1, FLOAT32),
    (2, FLOAT32),
    *((1, dt) for dt in ((kDLFloat, 64), (kDLInt, 64), (kDLInt, 32), (kDLFloat, 16))),
    *((1, dt) for dt in ((kDLBfloat, 16), (kDLInt, 8), (kDLUInt, 8))),
    *((2, dt) for dt in ((kDLFloat, 64), (kDLInt, 64), (kDLInt, 32), (kDLFloat, 16))),
]
#: Shape of the ordinary tensors of a layout (kernel probes, heap, search).
BASE_SHAPE = {1: (256,), 2: (16, 16)}
#: Count probe: 64 real elements, 2^32 + 64 logical ones.
COUNT_REAL = 64
COUNT_SHAPE = {1: ((1 << 32) + COUNT_REAL,), 2: ((1 << 26) + 1, COUNT_REAL)}


@dataclass(frozen=True)
class Layout:
    ndim: int
    dtype: tuple[int, int]

    def words(self) -> str:
        return f"{self.ndim}-d {format_dtype(self.dtype[0], self.dtype[1], 1)}"


def time_left(p: Any) -> float:
    """Seconds before the watchdog ends the step now running (a sweep counts
    as one step): probes of many calls stop well before it."""
    started, timeout = p.step_started, float(p.timeout)
    return timeout - (time.monotonic() - started) if started is not None else timeout


def tensor_params(sig: sigs.Sig) -> list[int]:
    return [i for i, t in enumerate(sig.params) if t["type"] in TENSOR_TYPES]


def value(arg: int, k: int, seed: int = 0) -> int:
    """Element k of tensor argument `arg`: small, exact in every dtype, and
    different between neighbours, arguments and seeds (threads)."""
    return (seed * 7 + arg * 13 + k * 5) % 23 + 1


@functools.lru_cache(maxsize=64)
def _pattern(dtype: tuple[int, int], arg: int, seed: int, n: int) -> bytes:
    """The bytes of n elements of `value` (the same tensors are built for
    every function: encoded once)."""
    return encode(dtype, [value(arg, k, seed) for k in range(n)])


# -- calls ----------------------------------------------------------------------------
class Call:
    """One call's arguments: tensors of chosen views (the others of the
    layout's base shape) and valid values for the rest. Tensor data lies in
    ordinary memory with slack after it (a kernel reading one element too
    many is tensor-bounds' finding, not a reason to lose these probes), or
    with `guarded`, ends at a guard page."""

    def __init__(self, p: Any, sig: sigs.Sig, lay: Layout, guarded: bool = False) -> None:
        self.p, self.sig, self.lay = p, sig, lay
        self.padded = p.padded or not guarded
        self.mem: Memory = p.__dict__.setdefault("_kernel_memory", Memory())
        self.tensors: dict[int, Tensor] = {}
        self.scalars: dict[int, bytes] = {}

    def tensor(
        self,
        i: int,
        view: View,
        values: Sequence[int] | None = None,
        poison: int = 0,
        seed: int = 0,
    ) -> Tensor:
        t = Tensor(self.mem, self.lay.dtype, view, self.padded)
        if values is None and view.dense and not poison:
            t.fill_bytes(_pattern(self.lay.dtype, i, seed, min(view.numel, view.span)))
        else:
            if values is None:
                values = [value(i, k, seed) for k in range(min(view.numel, view.span))]
            t.fill(values, poison)
        self.tensors[i] = t
        return t

    def run(
        self, fn: Caller, full: bool = True, outs: bool = True
    ) -> tuple[Msg, list[bytes | None]]:
        """Call once: (observation, per tensor argument the elements the call
        left in it when it changed them, else None: what the call wrote).
        full: the probe's whole observation (Prober.call: references,
        protocol, result); else only rc, error and result."""
        p = self.p
        base = contiguous(BASE_SHAPE[self.lay.ndim])
        for i in tensor_params(self.sig):
            if i not in self.tensors:
                self.tensor(i, base)
        owned: list[bytes] = []
        keep: list[Any] = p.__dict__.setdefault("_kernel_structs", [])
        raws = []
        try:
            for i, t in enumerate(self.sig.params):
                if i in self.tensors:
                    as_ptr = t["type"] == "DLTensor*"
                    raw = tensor_any(p, self.tensors[i], as_ptr, keep)
                    if not as_ptr:
                        owned.append(raw)
                elif i in self.scalars:
                    raw = self.scalars[i]
                else:
                    raw = p.make(t, owned)
                raws.append(raw)
            order = sorted(self.tensors) if outs else []
            before = [self.tensors[i].snapshot() for i in order]
            obs = p.call(fn, raws, True) if full else quick(p, fn, raws)
            after = [self.tensors[i].snapshot() for i in order]
            written = [a if a != b else None for a, b in zip(after, before)]
        finally:
            for o in owned:
                p.release(o)
        return obs, written

    def done(self) -> None:
        self.mem.reset()


def quick(p: Any, fn: Caller, raws: list[bytes]) -> Msg:
    """A call with none of Prober.call's bookkeeping: rc, error, result
    fingerprint (the signature search calls a function many times)."""
    raw = b"".join(raws)
    args = p.arena.place(raw, True)
    result = (ctypes.c_char * ANY)()
    rc = fn(None, args, len(raws), ctypes.addressof(result))
    err = p.take_error()
    res = bytes(result)
    obs: Msg = {"rc": rc, "error": err if rc != 0 else None}
    if rc == 0 and not p.result_problems(res, True):
        obs["fingerprint"] = p.fingerprint(res)
        p.release(res)
    return obs


def _same(a: tuple[Msg, list[bytes | None]], b: tuple[Msg, list[bytes | None]]) -> bool:
    return a[0].get("fingerprint") == b[0].get("fingerprint") and a[1] == b[1]


def _refusal(what: str, obs: Msg) -> Msg:
    err = obs.get("error") or {}
    return {
        "call": what,
        "kind": str(err.get("kind", "")),
        "message": str(err.get("message", ""))[:300],
    }


# -- signature and layout ---------------------------------------------------------------
def found_sig(p: Any, name: str, fn: Caller, is_global: bool = False) -> sigs.Sig | None:
    """The signature the search step found for a function without metadata.
    A restarted child reads it off the step that recorded it
    ("objects:search:<code>:<dtype>", among the steps that succeeded); None
    when the search found nothing or crashed."""
    memo: dict[str, tuple[str, Layout] | None] = p.__dict__.setdefault("_found", {})
    if name not in memo:
        done = [s for s in p.ok_steps if s.startswith("objects:search:")]
        if done:
            memo[name] = _parse_found(done[0])
        elif "objects:search" in p.skipped_steps:
            return None
        else:
            memo[name] = _search(p, name, fn, is_global)[0]
    got = memo[name]
    return None if got is None else sigs.code_sig(got[0])


def _found_step(code: str, lay: Layout) -> str:
    return f"objects:search:{code}:{format_dtype(lay.dtype[0], lay.dtype[1], 1)}"


def _parse_found(step: str) -> tuple[str, Layout] | None:
    _, _, code, dt = step.split(":", 3)
    try:
        c, bits, _lanes = parse_dtype(dt)
    except InputError:
        return None
    if not code or any(ch not in "tTif" for ch in code):
        return None
    return code, Layout(sigs.code_ndim(code), (c, bits))


def _search(
    p: Any, name: str, fn: Caller, is_global: bool
) -> tuple[tuple[str, Layout] | None, int]:
    """((first accepted code, its tensors' layout), calls made). The codes
    the zero-argument error names (that call's error, in this child) are
    tried with every dtype of _LAYOUTS (an int8 kernel), the others with
    float32. A global registered without a signature (a packed function:
    nothing states a contract) is tried with 1 to 3 tensors only."""
    last = p.__dict__.get("zero_error")  # (function, error) of this child's zero-args call
    zero = last[1] if last and last[0] == name else None
    message = None if is_global else (zero or {}).get("message")
    hints, named = sigs.hint_codes(message), sigs.signature_codes(message)
    order = sigs.search_order(hints)
    if is_global:
        order = [c for c in order if c in GLOBAL_CODES]
    tried = [0]

    def accepts(code: str, lay: Layout) -> bool:
        call = Call(p, sigs.code_sig(code), lay)
        try:
            obs, _ = call.run(fn, full=False, outs=False)
        except CannotSynthesize:
            return False
        finally:
            call.done()
        tried[0] += 1
        return obs.get("rc") == 0

    for code in order:
        ndim = sigs.code_ndim(code)
        # the signature the function names, with each dtype (an int8 kernel)
        each = code in named and "t" in code.lower()
        for dt in [dt for nd, dt in _LAYOUTS if nd == ndim] if each else [FLOAT32]:
            lay = Layout(ndim, dt)
            if accepts(code, lay):
                # Tensors alone, and more accepted: a function of any number
                # of tensors (one that skips its first) gets three.
                while not hints and set(code) == {"t"} and len(code) < 3:
                    if not accepts(code + "t", lay):
                        break
                    code += "t"
                return (code, lay), tried[0]
    return None, tried[0]


def search_step(p: Any, name: str, fn: Caller, is_global: bool = False) -> Msg:
    """The search; the call it found, observed whole (references, protocol),
    is recorded as its own step "objects:search:<code>:<dtype>" (a sweep of
    one), whose name gives the signature to a child restarted later."""
    found, tried = _search(p, name, fn, is_global)
    p.__dict__.setdefault("_found", {})[name] = found
    if found is None:
        return {"skipped": f"no signature accepted among {tried} tried", "tried": tried}
    code, lay = found
    call = Call(p, sigs.code_sig(code), lay)
    try:
        obs, _ = call.run(fn)
    finally:
        call.done()
    obs["found"] = [sigs.type_str(t) for t in sigs.code_sig(code).params]
    obs["found_layout"] = lay.words()
    obs["tried"] = tried
    return {"sub": {_found_step(code, lay): obs}}


def layout(p: Any, name: str, fn: Caller, sig: sigs.Sig) -> Layout | None:
    """The first layout (ndim, dtype) a call with contiguous tensors of it
    succeeds with; that of the search's call for a signature it found. The
    "kernel:layout" step looks for it and records it in a step name
    ("kernel:layout:<ndim>:<dtype>"): a child restarted later reads it off
    the steps that succeeded; after that step crashed there is none."""
    memo: dict[str, Layout | None] = p.__dict__.setdefault("_layouts", {})
    if name in memo:
        return memo[name]
    got: Layout | None = None
    found = p.__dict__.get("_found", {}).get(name)
    done = [s for s in p.ok_steps if s.startswith("kernel:layout:")]
    if found is not None:
        got = found[1]
    elif done:
        _, _, nd, dt = done[0].split(":", 3)
        parsed = _parse_found(f"objects:search:{'t' if nd == '1' else 'T'}:{dt}")
        got = None if parsed is None else parsed[1]
    elif "kernel:layout" in p.skipped_steps or "valid" in p.crashed_steps:
        # A function that dies on valid arguments may die or not on other
        # contiguous tensors, by what memory it reads wildly: no layout, and
        # no kernel probe (no-crash reports the crash).
        got = None
    elif tensor_params(sig):
        for ndim, dt in _LAYOUTS:
            call = Call(p, sig, Layout(ndim, dt))
            try:
                obs, _ = call.run(fn, full=False, outs=False)
            except CannotSynthesize:
                continue
            finally:
                call.done()
            if obs.get("rc") == 0:
                got = Layout(ndim, dt)
                break
    memo[name] = got
    return got


def layout_step(p: Any, name: str, fn: Caller, sig: sigs.Sig) -> Msg:
    if "valid" in p.crashed_steps:
        return {"skipped": "the call with valid arguments did not return (see no-crash)"}
    lay = layout(p, name, fn, sig)
    if lay is None:
        return {"skipped": "no call with contiguous tensors succeeded (1-d or 2-d, 9 dtypes)"}
    step = f"kernel:layout:{lay.ndim}:{format_dtype(lay.dtype[0], lay.dtype[1], 1)}"
    return {"sub": {step: {"rc": 0, "layout": lay.words()}}}


def depends(p: Any, name: str, fn: Caller, sig: sigs.Sig, lay: Layout) -> bool:
    """Do the result or the tensors a call writes depend on the values of its
    tensors? Two calls with other values tell. A kernel that reads only
    shapes and dtypes can show no strided-view, scaling or thread bug: those
    probes skip it (the 300-function benchmark's tensor functions are such)."""
    memo: dict[str, bool] = p.__dict__.setdefault("_depends", {})
    if name not in memo:
        got = []
        for seed in (0, 1):
            call = Call(p, sig, lay)
            try:
                for i in tensor_params(sig):
                    call.tensor(i, contiguous(BASE_SHAPE[lay.ndim]), seed=seed)
                obs, outs = call.run(fn, full=False)
            finally:
                call.done()
            got.append((obs.get("rc"), obs.get("fingerprint"), outs))
        memo[name] = got[0] != got[1]
    return memo[name]


def base_ndim(p: Any, name: str, fn: Caller, sig: sigs.Sig) -> int:
    lay = layout(p, name, fn, sig)
    return lay.ndim if lay is not None else 1


# -- the steps ------------------------------------------------------------------------
def _views(ndim: int) -> dict[str, tuple[View, View]]:
    """kind -> (the view, a contiguous tensor of the same logical shape)."""
    if ndim == 1:
        n = 24
        base = contiguous((n,))
        return {
            "strided": (View((n,), (2,), 2 * n - 1), base),
            "broadcast": (View((n,), (0,), n), base),
        }
    r = 6
    base = contiguous((r, r))
    return {
        "transposed": (View((r, r), (1, r), r * r), base),
        "strided": (View((r, r), (4 * r, 2), 2 * r * r * 2), base),
        "broadcast": (View((r, r), (0, 1), r * r), base),
    }


def strides(p: Any, fn: Caller, sig: sigs.Sig, lay: Layout) -> Msg:
    """Each tensor argument in turn as a non-contiguous view, the others
    contiguous, against the same call with a contiguous copy of that view:
    results and every tensor's elements after the call must be equal."""
    views = _views(lay.ndim)
    base = next(iter(views.values()))[1]
    tps = tensor_params(sig)

    def once(
        k: int | None, view: View | None, vals: list[int] | None
    ) -> tuple[Msg, list[bytes | None]]:
        call = Call(p, sig, lay)
        try:
            for i in tps:
                if i == k and view is not None:
                    call.tensor(i, view, vals, poison=0 if view.dense else 40)
                else:
                    call.tensor(i, base)
            return call.run(fn)
        finally:
            call.done()

    first = once(None, None, None)
    if first[0].get("rc") != 0:
        return dict(first[0], skipped=f"the call with contiguous {base.shape} tensors failed")
    if not _same(first, once(None, None, None)):
        return dict(first[0], varies=True)
    written = {i for i, out in zip(tps, first[1]) if out is not None}
    mismatches: list[Msg] = []
    refusals: list[Msg] = []
    tried = 0
    for k in tps:
        for kind, (view, contig) in views.items():
            if kind == "broadcast" and k in written:
                continue  # elements of an output aliasing each other differ by design
            if time_left(p) < p.timeout / 2:
                break  # a slow kernel: the views tried so far
            # The value of an element is that of its memory position: the
            # view and its contiguous copy hold the same logical values.
            vals = [value(k, pos) for pos in view.positions()]
            ref = once(k, contig, vals)
            got = once(k, view, vals)
            tried += 1
            what = f"argument {k} {kind} (shape {list(view.shape)}, strides {list(view.strides)})"
            if got[0].get("rc") != 0:
                refusals.append(_refusal(what, got[0]))
                continue
            if ref[0].get("rc") != 0 or _same(ref, got):
                continue
            parts = []
            if ref[0].get("fingerprint") != got[0].get("fingerprint"):
                parts.append("the result")
            parts += [
                f"tensor argument {tps[j]}"
                for j, (a, b) in enumerate(zip(ref[1], got[1]))
                if a != b
            ]
            mismatches.append({"call": what, "kind": kind, "arg": k, "differs": parts})
    return dict(
        first[0],
        layout=lay.words(),
        tried=tried,
        mismatches=mismatches,
        refusals=refusals,
    )


def shrink(p: Any, fn: Caller, sig: sigs.Sig, lay: Layout, k: int) -> Msg:
    """Tensor argument K (of the tensor arguments) half as long as the others,
    every tensor's data ending at a guard page."""
    tps = tensor_params(sig)
    if len(tps) < 2:
        return {"skipped": "fewer than two tensor arguments"}
    if k >= len(tps):
        return {"skipped": f"no tensor argument {k}"}
    shape = BASE_SHAPE[lay.ndim]
    small = (shape[0] // 2, *shape[1:])
    call = Call(p, sig, lay, guarded=True)
    try:
        for j, i in enumerate(tps):
            call.tensor(i, contiguous(small if j == k else shape))
        obs, _ = call.run(fn)
    finally:
        call.done()
    obs.update(arg=tps[k], shape=list(small), others=list(shape), layout=lay.words())
    if obs.get("rc") != 0:
        obs["refusals"] = [_refusal(f"argument {tps[k]} of shape {list(small)}", obs)]
    return obs


def count(p: Any, fn: Caller, sig: sigs.Sig, lay: Layout) -> Msg:
    """2^32 + 64 logical elements over 64 real ones. A kernel that counts in
    64 bits reads element 64 (the guard page: this step dies, which is the
    expected end) or refuses; one that counts in 32 bits sees 64 elements
    and returns what the 64-element call returns."""
    tps = tensor_params(sig)
    small = contiguous((COUNT_REAL,) if lay.ndim == 1 else (1, COUNT_REAL))
    huge = COUNT_SHAPE[lay.ndim]
    hview = View(huge, contiguous(huge).strides, COUNT_REAL)

    def once(view: View, bump: int) -> tuple[Msg, list[bytes | None]]:
        call = Call(p, sig, lay, guarded=view is hview)
        try:
            for i in tps:
                vals = [value(i, q) for q in range(COUNT_REAL)]
                vals[-1] += bump
                call.tensor(i, view, vals)
            return call.run(fn, full=view is hview)
        finally:
            call.done()

    a = once(small, 0)
    if a[0].get("rc") != 0:
        return {"skipped": f"the call with {COUNT_REAL}-element tensors failed"}
    if _same(a, once(small, 1)):
        return {"count": {"depends": False}, "rc": 0}
    c = once(hview, 0)
    obs = dict(c[0])
    obs["count"] = {
        "depends": True,
        "shape": list(huge),
        "truncated": c[0].get("rc") == 0 and _same(a, c),
        "layout": lay.words(),
    }
    return obs

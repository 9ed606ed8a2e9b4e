"""Checks of the kernel probes (probe_kernel.py, probe_loops.py): strided
views, mismatched shapes, 32-bit element counts, heap growth, error kinds,
scaling and threads with arguments of their own. Pure functions of the
facts of one probed function, like checks_probe.py."""

from __future__ import annotations

from typing import Iterator

from .checks_crash import FunctionFacts, Obs, _crash_text, _output
from .results import FAIL, PASS, SKIP, Result

#: A call at 4n elements this many times slower than at n is superlinear
#: work: 4 for linear, 16 for quadratic; the threshold sits between them
#: with a factor of two to spare on either side.
SCALE_RATIO = 8.0
#: ... and only when a call at 4n takes this long (ns): below it the loop's
#: own cost and the caches decide the ratio, not the kernel's work.
SCALE_FLOOR_NS = 20_000
#: Heap growth: bytes per call in both halves of the heap probe.
HEAP_PER_CALL = 16
#: Error kinds that say "a bug of the library", not "your input is wrong".
INTERNAL_KINDS = ("InternalError",)


def search_found(f: FunctionFacts) -> list[str] | None:
    """The parameter types the signature search found (no metadata), if any:
    its call is recorded as "objects:search:<code>:<dtype>"."""
    for step, o in f.obs.items():
        if step.startswith("objects:search:") and o.get("found"):
            return list(o["found"])
    return None


def _sub(f: FunctionFacts, prefix: str) -> Iterator[tuple[str, Obs]]:
    for step, o in f.obs.items():
        if step.startswith(prefix) and "/" not in step:
            yield step, o


def _skipped(cid: str, f: FunctionFacts, step: str) -> Result:
    o = f.obs.get(step)
    if o is not None and "skipped" in o:
        return Result(cid, f.name, SKIP, str(o["skipped"]))
    if step in f.crashes:
        return Result(cid, f.name, SKIP, "the probe call did not return (see no-crash / no-hang)")
    return Result(cid, f.name, SKIP, f.note or "no tensor parameter")


def check_tensor_strides(f: FunctionFacts) -> Result:
    o = f.obs.get("kernel:strides")
    if o is None or "skipped" in o:
        return _skipped("tensor-strides", f, "kernel:strides")
    if o.get("varies"):
        return Result(
            "tensor-strides",
            f.name,
            SKIP,
            "two identical calls gave different results: views cannot be compared",
        )
    bad = o.get("mismatches") or []
    if bad:
        first = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return Result(
            "tensor-strides",
            f.name,
            FAIL,
            f"{first['call']}: {' and '.join(first['differs'])} "
            f"{'differ' if len(first['differs']) > 1 else 'differs'} from the same call "
            f"with a contiguous copy of that view ({o.get('layout')}){more}; the kernel "
            "reads or writes memory order, not the view's elements",
            {"views": bad},
        )
    n, refused = o.get("tried", 0), len(o.get("refusals") or ())
    return Result(
        "tensor-strides",
        f.name,
        PASS,
        f"{n} strided, transposed or broadcast view(s) ({o.get('layout')}): "
        f"{n - refused} gave the contiguous copy's result, {refused} refused",
    )


def check_tensor_shapes(f: FunctionFacts) -> Result:
    steps = [s for s, _ in _sub(f, "tensor:shrink:")] + [
        s for s in f.crashes if s.startswith("tensor:shrink:") and "/" not in s
    ]
    oob = [s for s in steps if (f.crashes.get(s) or {}).get("tensor_oob")]
    if oob:
        words = []
        for s in oob:
            k = s.rsplit(":", 1)[1]
            words.append(
                f"{s}: tensor argument {k} half as long as the others: "
                f"{_crash_text(f.crashes[s], f.timeout)} past the end of a tensor's data "
                "(the same call with the data in ordinary memory returned)"
            )
        return Result(
            "tensor-shapes",
            f.name,
            FAIL,
            "; ".join(words),
            {"steps": list(oob)},
            output=_output(f, oob),
        )
    ran = [s for s in steps if s in f.obs and "skipped" not in f.obs[s]]
    if not ran:
        o = f.obs.get("tensor:shrink:0") or {}
        why = o.get("skipped") or f.note or "fewer than two tensor arguments"
        return Result("tensor-shapes", f.name, SKIP, str(why))
    refused = sum(1 for s in ran if f.obs[s].get("rc") != 0)
    return Result(
        "tensor-shapes",
        f.name,
        PASS,
        f"{len(ran)} call(s) with one tensor shorter than the others: {refused} refused, "
        f"{len(ran) - refused} stayed inside the data",
    )


def check_element_count(f: FunctionFacts) -> Result:
    step = "kernel:count"
    if step in f.crashes:
        c = f.crashes[step]
        if c.get("hang"):
            return Result("element-count", f.name, SKIP, "the call did not return (see no-hang)")
        return Result(
            "element-count",
            f.name,
            PASS,
            "with 2^32 + 64 elements it went past the 64 real ones "
            f"({_crash_text(c, f.timeout)}): element counts are not truncated to 32 bits",
        )
    o = f.obs.get(step)
    if o is None or "skipped" in o:
        return _skipped("element-count", f, step)
    c = o.get("count") or {}
    if not c.get("depends"):
        return Result(
            "element-count",
            f.name,
            SKIP,
            "the result does not depend on the last element: a truncated count would not show",
        )
    if c.get("truncated"):
        return Result(
            "element-count",
            f.name,
            FAIL,
            f"tensors of shape {c.get('shape')} ({c.get('layout')}, 2^32 + 64 elements) gave "
            "exactly what 64-element tensors give, and succeeded: the kernel counts elements "
            "in 32 bits (`int n = numel()`) and handles 64 of them",
        )
    if o.get("rc") != 0:
        return Result(
            "element-count", f.name, PASS, "refused tensors of 2^32 + 64 elements with an error"
        )
    return Result(
        "element-count", f.name, PASS, "with 2^32 + 64 elements it did not act on just 64"
    )


def check_heap_growth(f: FunctionFacts) -> Result:
    o = f.obs.get("kernel:heap")
    if o is None or "skipped" in o:
        return _skipped("heap-growth", f, "kernel:heap")
    h = o.get("heap") or {}
    n = int(h.get("calls") or 1)
    g1, g2 = (h.get("grew") or [0, 0])[:2]
    per = [g1 / n, g2 / n]
    if min(per) < HEAP_PER_CALL:
        # No numbers: a pass reads the same on every run.
        return Result(
            "heap-growth",
            f.name,
            PASS,
            f"the heap did not grow with the calls (a warm-up, then twice {n} calls)",
        )
    leaked = (h.get("live") or 0) >= n or any(
        o.get("result_leak") or o.get("live_delta_repeat") for _, o in f.call_obs()
    )
    if leaked or (h.get("refs") or 0) >= n:
        why = (
            "objects it leaks (see no-leak)" if leaked else "arguments it keeps (see arg-refcount)"
        )
        return Result(
            "heap-growth",
            f.name,
            PASS,
            f"the heap grows with the calls, held by {why}",
        )
    return Result(
        "heap-growth",
        f.name,
        FAIL,
        f"malloc'ed memory in use grows on every call: {g1:+d} bytes over {n} calls, then "
        f"{g2:+d} over {n} more (about {int(min(per))} bytes per call, after a warm-up); "
        "a buffer allocated per call is never freed",
        {"bytes": [g1, g2], "calls": n},
    )


def _refusals(f: FunctionFacts) -> Iterator[tuple[str, str, Obs]]:
    """(step, what was wrong with the input, the error) of every call that
    passed a value the function must refuse, and was refused."""
    declared = f.params is not None
    found = search_found(f)
    for step, o in f.obs.items():
        if "/" in step or "skipped" in o:
            continue
        err = o.get("error")
        if o.get("rc") == -1 and err:
            if step.startswith("wrong-type:"):
                yield (
                    step,
                    f"a {o.get('wrong_kind') == 65 and 'String' or 'int'} for parameter {o.get('param')}",
                    err,
                )
            elif step == "too-few" or (step == "zero-args" and (f.params or found)):
                yield (
                    step,
                    f"{'one argument too few' if step == 'too-few' else 'no arguments'}",
                    err,
                )
            elif step.startswith("tensor:") and (declared or found):
                yield step, f"tensor variant {step.split(':', 1)[1]}", err
        for r in o.get("refusals") or ():
            yield step, str(r.get("call")), {"kind": r.get("kind"), "message": r.get("message")}


def check_error_kind(f: FunctionFacts) -> Result:
    if f.is_global and f.params is None:
        return Result(
            "error-kind",
            f.name,
            SKIP,
            "a global registered without a signature: no input is wrong by its declaration",
        )
    bad = [(s, what, e) for s, what, e in _refusals(f) if str(e.get("kind")) in INTERNAL_KINDS]
    total = sum(1 for _ in _refusals(f))
    if bad:
        s, what, e = bad[0]
        more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
        return Result(
            "error-kind",
            f.name,
            FAIL,
            f"{s}: {what} was refused with {e.get('kind')}: {e.get('message')}{more}; a wrong "
            "input is the caller's mistake (TypeError, ValueError, IndexError), InternalError "
            "says the library is broken",
            {"calls": [{"step": s, "input": w, "kind": x.get("kind")} for s, w, x in bad[:20]]},
        )
    if not total:
        return Result("error-kind", f.name, SKIP, "no call with a wrong input was refused")
    return Result(
        "error-kind", f.name, PASS, f"{total} wrong input(s) refused with a caller's error kind"
    )


def check_scaling(f: FunctionFacts) -> Result:
    o = f.obs.get("kernel:scale")
    if o is None or "skipped" in o:
        return _skipped("scaling", f, "kernel:scale")
    sc = o.get("scale") or {}
    (n0, n1), (t0, t1) = sc.get("n") or (0, 0), sc.get("ns") or (0, 0)
    ratio = t1 / t0 if t0 else 0.0
    words = f"{t0 / 1000:.1f} us at {n0} elements, {t1 / 1000:.1f} us at {n1}"
    if ratio >= SCALE_RATIO and t1 >= SCALE_FLOOR_NS:
        return Result(
            "scaling",
            f.name,
            FAIL,
            f"{words}: {ratio:.0f}x the time for 4x the elements (linear work takes 4x, "
            "quadratic 16x)",
            {"n": [n0, n1], "ns": [t0, t1]},
        )
    return Result(
        "scaling",
        f.name,
        PASS,
        f"a call with {n1} elements takes less than {SCALE_RATIO:g}x the time of one with {n0}",
    )


def thread_verdict(f: FunctionFacts, o: Obs) -> Result:
    """thread-safety of threads that called with arguments of their own."""
    calls = o.get("calls") or []
    bad = [(i, c) for i, c in enumerate(calls) if c.get("mismatch")]
    rounds = sum(int(c.get("rounds") or 0) for c in calls)
    if bad:
        i, c = bad[0]
        m = c["mismatch"]
        return Result(
            "thread-safety",
            f.name,
            FAIL,
            f"{len(calls)} threads called at once, each with tensors of its own values "
            f"({o.get('layout')}, shape {o.get('shape')}): thread {i} got {m.get('got')} in "
            f"round {m.get('round')} than the same call alone gives ({len(bad)} of "
            f"{len(calls)} threads differed); state shared between calls (a static "
            "buffer) is overwritten by another thread",
        )
    return Result(
        "thread-safety",
        f.name,
        PASS,
        f"{len(calls)} threads with arguments of their own, {rounds} calls: each got what "
        "the same call alone gives",
    )

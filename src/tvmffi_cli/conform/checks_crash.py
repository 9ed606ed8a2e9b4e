"""Facts of one probed function, and the checks about calls that did not
return: crashes (no-crash, tensor-bounds) and hangs (no-hang). Pure
functions of the facts, like checks_probe.py, which holds the other checks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Collection, Dict, Iterator

from ..text import JsonDict, JsonValue
from . import callargs
from .messages import Memcheck
from .probe_tensors import describe as describe_tensor
from .results import FAIL, PASS, SKIP, Result

#: One observation of the worker (a JSON object), or a crash record.
Obs = Dict[str, Any]
#: The pseudo step of a probe child that died after its last answer.
AFTER_CALLS = "after-calls"


class FunctionFacts:
    def __init__(self, name: str, getters: Collection[str] = ()) -> None:
        self.name = name
        self.getters = set(getters)
        self.plan: list[str] | None = None
        self.note: str | None = None
        self.params: list[str] | None = None
        self.obs: dict[str, Obs] = {}
        self.crashes: dict[str, Obs] = {}
        self.tool_error: str | None = None  # the probe itself could not run (worker failure)
        self.timeout: float | None = None
        self.is_global = False  # registered at load rather than exported
        #: the CUDA device the probe child used for GPU steps, or why it had
        #: none (None: no GPU steps were asked for; conform/probe_gpu.py)
        self.gpu: str | None = None
        #: what `--sanitizer memcheck` found (conform/sanitizer.py), None: not run
        self.memcheck: Memcheck | None = None

    def call_obs(self) -> Iterator[tuple[str, Obs]]:
        """(step, obs) for completed calls of the function itself (not getters,
        not the readable re-runs used to diagnose a fault)."""
        for step, o in self.obs.items():
            if "/" in step or step in ("metadata", "doc") or "skipped" in o:
                continue
            if step in ("threads", "kernel:heap", "kernel:scale") or step.startswith(
                "kernel:layout"
            ):
                continue  # not one call each (checks_kernel.py judges them)
            yield step, o


def _crash_text(c: Obs, timeout: float | None) -> str:
    if c.get("hang"):
        return f"no return within {timeout:g} s" if timeout else "no return within the timeout"
    how = f"killed by {c.get('signal') or 'an unknown cause'}"
    if c.get("alone") is False:
        how += (
            " only after earlier calls of the function in the same process; called alone "
            "it returns (state the function keeps between calls)"
        )
    return how


def _explained(step: str, c: Obs) -> bool:
    """Crashes another check already reports."""
    if step in ("metadata", "doc"):
        return True
    if step.startswith("wrong-type:"):
        return True
    if step == "threads":
        return True  # thread-safety reports it (an error only with --threads)
    if step == "kernel:count":
        return True  # a kernel counting in 64 bits reads past the 64 real elements
    if step == "kernel:layout":
        return True  # contiguous tensors of 9 dtypes: the valid call and the variants tell
    if c.get("alone") is False and step.startswith(("objects:", "tensors:")):
        # The same guessed arguments returned alone: the crash needs earlier
        # calls of the function (state it keeps), whatever it takes.
        return False
    if step == "objects:search":
        return True  # calls with guessed arguments (no metadata), like objects:*
    if c.get("tensor_oob"):
        return True  # tensor-bounds reports it
    if c.get("fault") == "device-memory" or step.startswith("gpu:"):
        return True  # device-mismatch / device-call report it (checks_gpu.py)
    if step.startswith("objects:") or (step.startswith("tensors:") and step.count(":") == 1):
        # Without metadata nothing says which types the function takes; a
        # crash on object arguments is noted by arg-refcount, not failed.
        # A tensor variant ("tensors:1:complex64") crashing after the plain
        # float32 call succeeded is a finding.
        return True
    return step in ("zero-args", "too-few") and bool(c.get("oob"))


def _step_words(f: FunctionFacts, step: str) -> str:
    """A probe step and the exact arguments of its call."""
    if step == AFTER_CALLS:
        return "after the last probe call returned (a thread the function started)"
    args = callargs.args_of(step, f.params)
    if args == [] and f.crashes.get(step, {}).get("alone") is not False:
        return step  # zero-args: the name says it all
    if args is None:
        if step.startswith("tensor:"):
            return f"{step} (called with {describe_tensor(step.split(':', 1)[1])})"
        return step
    words = f"{step} {callargs.words(args)}"
    if step.startswith("tensors:") and step.count(":") == 2:
        words += " (the same call with float32 tensors returned)"
    c = f.crashes.get(step) or {}
    if c.get("alone") is False:
        words += f" after {', '.join(c.get('after') or ())}"
    return words


def _calls(f: FunctionFacts, steps: list[str]) -> JsonDict:
    """details of a finding: the steps, the arguments of the first one's call
    and the `tvmffi call` arguments that build them (when there are)."""
    d: JsonDict = {"steps": list(steps)}
    args = callargs.args_of(steps[0], f.params) if steps else None
    if args is not None:
        listed: list[JsonValue] = [*args]
        d["args"] = listed
        argv = callargs.call_argv(args)
        c = f.crashes.get(steps[0]) or {}
        if argv is not None and c.get("alone") is not False and steps[0] != AFTER_CALLS:
            words: list[JsonValue] = [*argv]
            d["call"] = words
    return d


def _output(f: FunctionFacts, steps: list[str]) -> str | None:
    """The library's own output before the first of these crashes."""
    for s in steps:
        out = (f.crashes.get(s) or {}).get("output")
        if out:
            return str(out)
    return None


#: The fix of a crash on a tensor variant, by what the variant changes.
_VARIANT_FIX = {
    "cuda": "Check `device.device_type` before touching `data` and raise for a device the "
    "kernel does not handle: a CUDA pointer is not CPU memory.",
    "offset": "Add `byte_offset` to `data`: the first element is at `data + byte_offset`.",
    "strided": "Index with `strides` (or refuse a non-contiguous tensor with a ValueError): "
    "a transposed view is not laid out row-major.",
    "ndim": "Check `ndim` before reading `shape[i]` and raise a ValueError for a rank the "
    "kernel does not handle.",
    "dtype": "Check `dtype` (code, bits, lanes) before reading `data` and raise a TypeError "
    "for a dtype the kernel does not handle; size sub-byte elements by bits, not bytes.",
}


def variant_of(step: str) -> str | None:
    """The tensor variant a step passes ("float64", "offset", ...), if any."""
    base = step.split("/")[0]
    if base.startswith("tensor:"):
        return base.split(":", 1)[1]
    if base.startswith("tensors:") and base.count(":") == 2:
        return base.split(":")[2]
    return None


def variant_fix(steps: list[str]) -> str | None:
    """A fix line when every step passes the same kind of tensor variant."""
    kinds = set()
    for s in steps:
        v = variant_of(s)
        if v is None:
            return None
        kinds.add("ndim" if v.startswith("ndim") else v if v in _VARIANT_FIX else "dtype")
    return _VARIANT_FIX[kinds.pop()] if len(kinds) == 1 else None


#: The fix of a crash that needs earlier calls of the function.
ORDER_FIX = (
    "The crash needs earlier calls: reset or guard the state the function keeps between "
    "calls (static buffers, caches, counters), and check it before use."
)


def check_tensor_bounds(f: FunctionFacts) -> Result:
    # Past a shorter tensor of mismatched shapes: tensor-shapes reports it.
    steps = [
        s
        for s, c in f.crashes.items()
        if c.get("tensor_oob") and not s.startswith("tensor:shrink:")
    ]
    if steps:
        by = _by_cause(f, steps)
        r = Result(
            "tensor-bounds",
            f.name,
            FAIL,
            "; ".join(
                f"{_step_words(f, ss[0])}: {how} touching the guard page next to a tensor's "
                "data, and the same call returned with the data in ordinary memory (a read or "
                f"write past the end, or before the start){_also(ss)}"
                for how, ss in by.items()
            ),
            _calls(f, steps),
            output=_output(f, steps),
            hint=variant_fix(steps),
        )
        if all(s.endswith(":offset") for s in steps):
            # Only byte_offset ignored: an error all the same (it reads and
            # writes other data than the caller's), said in words.
            return replace(
                r,
                message=r.message + " (the kernel ignores byte_offset: `data + byte_offset` "
                "is the first element)",
            )
        return r
    n = sum(1 for s, o in f.call_obs() if s.startswith(("tensor:", "tensors:", "valid")))
    seen = [*(f.plan or ()), *f.obs, *f.crashes]
    if not any(s.startswith(("tensor:", "tensors:")) for s in seen):
        return Result("tensor-bounds", f.name, SKIP, "no tensor argument was passed")
    return Result("tensor-bounds", f.name, PASS, f"{n} call(s) with guarded tensors")


def check_no_crash(f: FunctionFacts) -> Result:
    steps = [
        s
        for s, c in f.crashes.items()
        if not c.get("hang") and not _explained(s.split("/")[0], c) and "/" not in s
    ]
    if steps:
        order = all(f.crashes[s].get("alone") is False for s in steps)
        return Result(
            "no-crash",
            f.name,
            FAIL,
            _grouped(f, steps),
            _calls(f, steps),
            output=_output(f, steps),
            hint=ORDER_FIX if order else variant_fix(steps),
        )
    return Result("no-crash", f.name, PASS, "no probe call crashed")


def _by_cause(f: FunctionFacts, steps: list[str]) -> dict[str, list[str]]:
    by: dict[str, list[str]] = {}
    for s in steps:
        by.setdefault(_crash_text(f.crashes[s], f.timeout), []).append(s)
    return by


def _also(ss: list[str]) -> str:
    if len(ss) < 2:
        return ""
    more = f" (+{len(ss) - 6} more)" if len(ss) > 6 else ""
    return f"; the same on {', '.join(ss[1:6])}{more}"


def _grouped(f: FunctionFacts, steps: list[str]) -> str:
    """One clause per way of dying: the first step and its arguments, then
    the other steps by name ("killed by SIGABRT: tensor:complex64 (...); the
    same on tensor:handle, ...")."""
    return "; ".join(
        f"{_step_words(f, ss[0])}: {how}{_also(ss)}" for how, ss in _by_cause(f, steps).items()
    )


def check_no_hang(f: FunctionFacts) -> Result:
    steps = [s for s, c in f.crashes.items() if c.get("hang")]
    if steps:
        return Result(
            "no-hang",
            f.name,
            FAIL,
            _grouped(f, steps),
            _calls(f, steps),
            output=_output(f, steps),
        )
    return Result("no-hang", f.name, PASS, "every probe call returned in time")


def fault_of(tail: str) -> str | None:
    """Where the worker's last fault was ("args-guard", "device-memory" or "elsewhere"), from
    the line probe_memory.report_faults wrote, if any."""
    from ..ffi.guardpages import fault_of as read

    return read(tail)


def library_output(tail: str, lines: int = 12, limit: int = 1500) -> str:
    """The library's own output before a crash: the end of the worker's
    stderr (already sanitized by the sandbox), without the worker's Python
    stack dump, bounded."""
    from .. import text

    cut = tail.find("Fatal Python error")
    if cut >= 0:
        tail = tail[:cut]
    kept = [ln for ln in tail.splitlines() if ln.strip() and not ln.startswith("tvmffi-probe-")]
    kept = kept[-lines:]
    out, _ = text.cap("\n".join(kept), limit)
    return out

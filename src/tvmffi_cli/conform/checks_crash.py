"""Facts of one probed function, and the checks about calls that did not
return: crashes (no-crash, tensor-bounds) and hangs (no-hang). Pure
functions of the facts, like checks_probe.py, which holds the other checks."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Collection, Dict, Iterator

from .probe_tensors import describe as describe_tensor
from .results import FAIL, PASS, SKIP, Result

#: One observation of the worker (a JSON object), or a crash record.
Obs = Dict[str, Any]


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
    return f"killed by {c.get('signal') or 'an unknown cause'}"


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
    if step == "objects:search":
        return True  # calls with guessed arguments (no metadata), like objects:*
    if c.get("tensor_oob"):
        return True  # tensor-bounds reports it
    if step.startswith("objects:") or (step.startswith("tensors:") and step.count(":") == 1):
        # Without metadata nothing says which types the function takes; a
        # crash on object arguments is noted by arg-refcount, not failed.
        # A tensor variant ("tensors:1:complex64") crashing after the plain
        # float32 call succeeded is a finding.
        return True
    return step in ("zero-args", "too-few") and bool(c.get("oob"))


def _step_words(step: str) -> str:
    """A probe step in words, for findings about tensors."""
    if step.startswith("tensor:"):
        return f"{step} (called with {describe_tensor(step.split(':', 1)[1])})"
    if step.startswith("tensors:") and step.count(":") == 2:
        _, n, v = step.split(":")
        return f"{step} ({n} x {describe_tensor(v)}; the same call with float32 succeeded)"
    return step


def _output(f: FunctionFacts, steps: list[str]) -> str | None:
    """The library's own output before the first of these crashes."""
    for s in steps:
        out = (f.crashes.get(s) or {}).get("output")
        if out:
            return str(out)
    return None


def check_tensor_bounds(f: FunctionFacts) -> Result:
    # Past a shorter tensor of mismatched shapes: tensor-shapes reports it.
    steps = [
        s
        for s, c in f.crashes.items()
        if c.get("tensor_oob") and not s.startswith("tensor:shrink:")
    ]
    if steps:
        r = Result(
            "tensor-bounds",
            f.name,
            FAIL,
            "; ".join(
                f"{_step_words(s)}: {_crash_text(f.crashes[s], f.timeout)} touching the guard "
                "page next to a tensor's data; the same call with the data in ordinary memory "
                "returned (a read or write past the end, or before the start)"
                for s in steps
            ),
            {"steps": steps},
            output=_output(f, steps),
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
        return Result(
            "no-crash",
            f.name,
            FAIL,
            _grouped(f, steps),
            {"steps": steps},
            output=_output(f, steps),
        )
    return Result("no-crash", f.name, PASS, "no probe call crashed")


def _grouped(f: FunctionFacts, steps: list[str]) -> str:
    """One clause per way of dying: the first step in words, then the others
    by name ("killed by SIGABRT: tensor:complex64 (...); also tensor:handle, ...")."""
    by: dict[str, list[str]] = {}
    for s in steps:
        by.setdefault(_crash_text(f.crashes[s], f.timeout), []).append(s)
    parts = []
    for how, ss in by.items():
        also = f"; the same on {', '.join(ss[1:6])}" if len(ss) > 1 else ""
        more = f" (+{len(ss) - 6} more)" if len(ss) > 6 else ""
        parts.append(f"{_step_words(ss[0])}: {how}{also}{more}")
    return "; ".join(parts)


def check_no_hang(f: FunctionFacts) -> Result:
    steps = [s for s, c in f.crashes.items() if c.get("hang")]
    if steps:
        return Result(
            "no-hang",
            f.name,
            FAIL,
            "; ".join(f"{s}: {_crash_text(f.crashes[s], f.timeout)}" for s in steps),
            {"steps": steps},
            output=_output(f, steps),
        )
    return Result("no-hang", f.name, PASS, "every probe call returned in time")


def fault_of(tail: str) -> str | None:
    """Where the worker's last fault was ("args-guard" or "elsewhere"), from
    the line probe_memory.report_faults wrote, if any."""
    from .probe_memory import FAULT_MARK

    at = tail.rfind(FAULT_MARK)
    if at < 0:
        return None
    words = tail[at + len(FAULT_MARK) :].split()
    return words[1] if len(words) > 1 and words[1] in ("args-guard", "elsewhere") else None


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

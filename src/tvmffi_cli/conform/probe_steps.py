"""The kernel probes' steps (child side): which step runs what, for the
probe worker (probe_task.py). Each step records facts; checks_kernel.py
judges them."""

from __future__ import annotations

from typing import Any, Collection

from . import probe_kernel, probe_loops, probe_threads, sigs
from .probe_extra import variant_steps
from .probe_kernel import Caller, Msg, layout, tensor_params

#: Steps this module (and probe_loops.py) runs.
OWN = ("objects:search", "kernel:", "tensor:shrink:")


#: Why a global registered without a signature gets no kernel probe.
UNSIGNED = (
    "a global registered without a signature (a packed function, internal plumbing more "
    "often than a kernel): the kernel probes need a declared signature or an export"
)


def followups(step: str, split: Collection[str], is_global: bool) -> list[str]:
    """Steps to run after `step` succeeded: after the signature search found
    one with tensors ("objects:search:<code>:<dtype>"), the tensor variants
    and, for an export, the kernel probes (the count last); none else."""
    if not step.startswith("objects:search:") or "t" not in step.split(":")[2].lower():
        return []
    steps = variant_steps("tensor", split)
    if not is_global:
        steps += [*variant_steps("kernel", split), "kernel:count"]
    return steps


def owns(step: str) -> bool:
    return step.startswith(OWN)


def unsigned_global(p: Any, name: str, is_global: bool) -> bool:
    """A global whose signature came from the search, not from a declaration."""
    return is_global and name in p.__dict__.get("_found", {})


def run_step(
    p: Any, name: str, step: str, sig: sigs.Sig | None, fn: Caller, is_global: bool = False
) -> Msg:
    if step == "objects:search":
        return probe_kernel.search_step(p, name, fn, is_global)
    if sig is None:
        return {"skipped": "no signature (no metadata, and the search found none)"}
    if unsigned_global(p, name, is_global):
        return {"skipped": UNSIGNED}
    if not tensor_params(sig):  # the kernel probes, the heap's too, are for kernels
        return {"skipped": "no tensor parameter"}
    if step == "kernel:heap":
        return probe_loops.heap(p, name, fn, sig, is_global)
    if step.startswith("tensor:shrink:"):
        k, n = int(step.rsplit(":", 1)[1]), len(tensor_params(sig))
        if n < 2 or k >= n:
            return {"skipped": "fewer than two tensor arguments" if n < 2 else f"no tensor {k}"}
    if step == "kernel:layout":
        return probe_kernel.layout_step(p, name, fn, sig)
    lay = layout(p, name, fn, sig)
    if lay is None:
        return {"skipped": "no call with contiguous tensors succeeded (1-d or 2-d, 9 dtypes)"}
    if lay.ndim > 2:
        return {"skipped": f"a {lay.ndim}-d kernel"}
    if step in ("kernel:strides", "kernel:scale") and not probe_kernel.depends(
        p, name, fn, sig, lay
    ):
        return {"skipped": "the result and what the call writes do not depend on tensor values"}
    if step == "kernel:strides":
        return probe_kernel.strides(p, fn, sig, lay)
    if step.startswith("tensor:shrink:"):
        return probe_kernel.shrink(p, fn, sig, lay, int(step.rsplit(":", 1)[1]))
    if step == "kernel:count":
        return probe_kernel.count(p, fn, sig, lay)
    if step == "kernel:scale":
        return probe_loops.scale(p, fn, sig, lay, name, is_global)
    return {"skipped": f"unknown step {step}"}


def threads(
    p: Any, name: str, sig: sigs.Sig | None, fn: Caller, n: int, is_global: bool
) -> Msg | None:
    """The thread probe with arguments of each thread's own, or None: the
    prober then makes n identical calls with valid arguments, their tensors
    in ordinary memory (accesses past the data are tensor-bounds' finding)
    and of the kernel's number of dimensions."""
    if sig is not None and not unsigned_global(p, name, is_global):
        got = probe_threads.threads(p, fn, sig, name, n, p.parallel)
        if got is not None:
            return got
    p.padded = True
    if sig is not None and tensor_params(sig):
        p.base_ndim = probe_kernel.base_ndim(p, name, fn, sig)
    return None

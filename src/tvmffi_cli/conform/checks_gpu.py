"""The CUDA checks (parent side): pure functions of what the probe observed
(conform/probe_gpu.py's steps, the host steps' "cuda_error", crash records
with their fault address), plus the library-level facts conform needs for
them: whether a library looks like CUDA code (then its probes get GPU steps)
and whether any function was exercised at all (else "not exercised").
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Optional

from .checks_crash import FunctionFacts, _crash_text, _output
from .results import ERROR, FAIL, PASS, SKIP, Result

VALID, STREAM = "gpu:valid", "gpu:stream"

#: Libraries a CUDA kernel pack links (DT_NEEDED) and functions it imports.
_CUDA_NEEDED = re.compile(r"^lib(cuda|cudart|nvrtc|cublas|cublasLt|cudnn|nccl|cufft|curand)\b")
_CUDA_IMPORTS = frozenset(
    {
        "TVMFFIEnvGetStream",
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "cudaMalloc",
        "cuMemAlloc_v2",
        "__cudaRegisterFatBinary",
    }
)
_CUDA_SECTIONS = frozenset({".nv_fatbin", "__nv_relfatbin", ".nvFatBinSegment"})


def looks_cuda(binary: Any) -> bool:
    """Whether a library looks like CUDA code: it asks for the caller's stream,
    links a CUDA library, launches kernels or carries a fatbin. Its functions
    with tensor parameters then get GPU steps (where a device is present)."""
    if any(_CUDA_NEEDED.match(n) for n in binary.needed):
        return True
    if any(s.name in _CUDA_SECTIONS for s in binary.sections):
        return True
    return bool(_CUDA_IMPORTS & set(binary.imports))


def _err(e: Optional[Mapping[str, Any]]) -> str:
    return f"{e.get('kind')}: {e.get('message')}" if e else "an error"


#: A GPU check that does not apply: the library does not look like CUDA code
#: or the function takes no tensor (no GPU steps were asked for); not reported.
NOT_APPLICABLE = "not applicable"


def _gpu_skip(cid: str, f: FunctionFacts) -> Optional[Result]:
    """The SKIP of a GPU check when the function had no GPU steps."""
    if f.gpu is None:
        return Result(cid, f.name, SKIP, NOT_APPLICABLE)
    if VALID not in (f.plan or ()):
        return Result(cid, f.name, SKIP, f"no CUDA device to probe with: {f.gpu}")
    return None


def check_device_call(f: FunctionFacts) -> Result:
    skip = _gpu_skip("device-call", f)
    if skip is not None:
        return skip
    if VALID in f.crashes:
        c = f.crashes[VALID]
        if c.get("fault") == "device-memory":
            return Result("device-call", f.name, SKIP, "the call crashed (see device-mismatch)")
        return Result(
            "device-call",
            f.name,
            FAIL,
            f"with CUDA tensors: {_crash_text(c, f.timeout)}",
            {"steps": [VALID]},
            output=_output(f, [VALID]),
        )
    o = f.obs.get(VALID) or {}
    if "skipped" in o:
        return Result("device-call", f.name, SKIP, str(o["skipped"]))
    err = o.get("cuda_error")
    variant = [
        (s, v["cuda_error"])
        for s, v in f.obs.items()
        if _device_step(s) and s != VALID and isinstance(v.get("cuda_error"), dict)
    ]
    if not err and variant:
        s, e = variant[0]
        return Result(
            "device-call",
            f.name,
            FAIL,
            f"{s}: called with a CUDA tensor, it returned and then CUDA reported {e['name']} "
            f"({e['message']}) at the synchronization: its kernel failed",
            {"steps": [x for x, _ in variant], "cuda_error": e},
        )
    if err:
        return Result(
            "device-call",
            f.name,
            FAIL,
            f"called with CUDA tensors, it returned and then CUDA reported {err['name']} "
            f"({err['message']}) at the synchronization: its kernel failed",
            {"steps": [VALID], "cuda_error": err},
        )
    if o.get("rc") != 0:
        return Result("device-call", f.name, PASS, f"raised {_err(o.get('error'))}")
    return Result("device-call", f.name, PASS, f"returned on {f.gpu}; no CUDA error")


def check_device_mismatch(f: FunctionFacts) -> Result:
    # A CUDA tensor to a host kernel: the host dereferenced device memory.
    deref = [s for s, c in f.crashes.items() if c.get("fault") == "device-memory"]
    if deref:
        s = deref[0]
        return Result(
            "device-mismatch",
            f.name,
            FAIL,
            f"{s}: called with a CUDA tensor, the host dereferenced device memory "
            f"({_crash_text(f.crashes[s], f.timeout)} at an address of the tensor's device "
            "memory); a host kernel must raise for a tensor that is not on the CPU",
            {"steps": list(deref)},
            output=_output(f, deref),
        )
    # A host tensor to a CUDA kernel: launched on host memory.
    launched = [
        (s, o["cuda_error"])
        for s, o in f.obs.items()
        if not _device_step(s) and isinstance(o.get("cuda_error"), dict) and o.get("rc") == 0
    ]
    if launched:
        s, err = launched[0]
        return Result(
            "device-mismatch",
            f.name,
            FAIL,
            f"{s}: called with host tensors, it returned and CUDA then reported {err['name']} "
            f"({err['message']}): a kernel was launched on host memory instead of raising",
            {"steps": [x for x, _ in launched], "cuda_error": err},
        )
    host = f.obs.get("valid") or {}
    dev = f.obs.get(VALID) or {}
    cuda_variant = [o for s, o in f.obs.items() if s.endswith(":cuda") and "skipped" not in o]
    if dev.get("rc") == 0 and not dev.get("cuda_error") and "rc" in host:
        if host.get("rc") != 0:
            return Result(
                "device-mismatch",
                f.name,
                PASS,
                f"a CUDA kernel: host tensors refused ({_err(host.get('error'))})",
            )
        return Result("device-mismatch", f.name, PASS, "takes host and CUDA tensors alike")
    if cuda_variant:
        refused = sum(1 for o in cuda_variant if o.get("rc") != 0)
        return Result(
            "device-mismatch",
            f.name,
            PASS,
            f"{len(cuda_variant)} call(s) with a CUDA tensor returned or raised without "
            f"touching it ({refused} raised)",
        )
    return Result("device-mismatch", f.name, SKIP, "no call with a tensor on the other device ran")


def _device_step(step: str) -> bool:
    """Steps whose tensors are on the CUDA device (GPU steps, the CUDA variant)."""
    return step.startswith("gpu:") or step.endswith(":cuda")


def check_device_bounds(f: FunctionFacts) -> Result:
    skip = _gpu_skip("device-bounds", f)
    if skip is not None:
        return skip
    o = f.obs.get(VALID) or {}
    if o.get("rc") != 0 or o.get("cuda_error") or "guard_damage" not in o:
        return Result("device-bounds", f.name, SKIP, "the CUDA call did not succeed")
    damage = o.get("guard_damage") or {}
    if damage:
        parts = []
        for arg, ds in sorted(damage.items(), key=lambda kv: int(kv[0])):
            for d in ds:
                where = (
                    f"{d['offset']} bytes past its end"
                    if d["side"] > 0
                    else f"{-d['offset']} bytes before its start"
                )
                parts.append(f"argument {arg}: {d['bytes']} guard byte(s) written, from {where}")
        return Result(
            "device-bounds",
            f.name,
            FAIL,
            "after the CUDA call, " + "; ".join(parts),
            {"steps": [VALID], "guard_damage": damage},
        )
    return Result("device-bounds", f.name, PASS, "guard regions of every CUDA tensor intact")


def check_stream_use(f: FunctionFacts) -> Result:
    skip = _gpu_skip("stream-use", f)
    if skip is not None:
        return skip
    if STREAM in f.crashes:
        return Result("stream-use", f.name, SKIP, "the held call crashed (see no-crash)")
    o = f.obs.get(STREAM) or {}
    if "skipped" in o or not o:
        return Result("stream-use", f.name, SKIP, str(o.get("skipped") or "not run"))
    if o.get("early"):
        args = ", ".join(str(i) for i in o["early"])
        return Result(
            "stream-use",
            f.name,
            FAIL,
            f"tensor argument(s) {args} were written while the published stream was held: "
            "the kernel ran on another stream (the legacy default stream?) instead of "
            "TVMFFIEnvGetStream's",
            {"steps": [STREAM], "early": o["early"]},
        )
    if o.get("waited"):
        return Result(
            "stream-use",
            f.name,
            PASS,
            "the call returned only once the held stream was released (it waits for "
            "its work on the published stream)",
        )
    return Result("stream-use", f.name, PASS, "nothing written before the published stream ran")


def check_memcheck(f: FunctionFacts) -> Result:
    got = f.memcheck
    if got is None:
        skip = _gpu_skip("memcheck", f)
        if skip is not None and skip.message == NOT_APPLICABLE:
            return skip
        return Result("memcheck", f.name, SKIP, "not asked for (--sanitizer memcheck)")
    if got.skipped is not None:
        return Result("memcheck", f.name, SKIP, got.skipped)
    if got.error:
        return Result("memcheck", f.name, ERROR, got.error)
    if got.errors:
        return Result(
            "memcheck",
            f.name,
            FAIL,
            f"compute-sanitizer memcheck: {got.errors} error(s): {got.first}",
            {"report": got.report},
        )
    return Result("memcheck", f.name, PASS, "compute-sanitizer memcheck: 0 errors")


def _applicable(
    check: Callable[[FunctionFacts], Result],
) -> Callable[[FunctionFacts], Optional[Result]]:
    """The check, reporting nothing for a function without GPU steps (a host
    library, a function without tensors): device-mismatch alone speaks of
    every tensor function (a host kernel given a CUDA tensor)."""

    def run(f: FunctionFacts) -> Optional[Result]:
        r = check(f)
        return None if r.message == NOT_APPLICABLE else r

    return run


CHECKS: dict[str, Callable[[FunctionFacts], Optional[Result]]] = {
    "device-call": _applicable(check_device_call),
    "device-mismatch": check_device_mismatch,
    "device-bounds": _applicable(check_device_bounds),
    "stream-use": _applicable(check_stream_use),
    "memcheck": _applicable(check_memcheck),
}


def poisoned(f: FunctionFacts) -> bool:
    """The probe child's CUDA context died in this function (a sticky error):
    the next function needs a fresh child."""
    return any(
        isinstance(o.get("cuda_error"), dict) and o["cuda_error"].get("sticky")
        for o in f.obs.values()
    )


# -- was anything exercised? ------------------------------------------------------
def exercised(f: FunctionFacts) -> bool:
    """A call of the function returned successfully: with valid arguments
    (host or CUDA tensors), or for a function without a signature any call."""
    for step in ("valid", VALID):
        o = f.obs.get(step) or {}
        if o.get("rc") == 0 and not o.get("cuda_error"):
            return True
    if f.params is None:
        return any(
            o.get("rc") == 0
            for s, o in f.obs.items()
            if s not in ("metadata", "doc") and "skipped" not in o
        )
    return False


def not_run(facts: Mapping[str, FunctionFacts]) -> list[str]:
    """Functions whose kernels never ran for want of a device: GPU steps were
    asked for (a CUDA library, tensor parameters), no device was there, and
    no call returned. They are never counted as passed."""
    return sorted(
        n for n, f in facts.items() if f.gpu and not f.gpu.startswith("cuda:") and not exercised(f)
    )


def not_exercised(facts: Mapping[str, FunctionFacts]) -> Optional[str]:
    """Why tvmffi cannot judge the library: no function was exercised, or
    some CUDA kernels never ran (no device); None when every function that
    needs a device ran (or none was probed)."""
    if not facts:
        return None
    gpus = {f.gpu for f in facts.values() if f.gpu}
    no_device = sorted(g for g in gpus if not g.startswith("cuda:"))
    device = f" ({no_device[0]})" if no_device else ""
    if any(exercised(f) for f in facts.values()):
        idle = not_run(facts)
        if not idle:
            return None
        names = ", ".join(idle[:3]) + (f" (+{len(idle) - 3} more)" if len(idle) > 3 else "")
        return (
            f"{len(idle)} of {len(facts)} function(s) could not be exercised ({names}):"
            f" no CUDA device to call their kernels with{device}"
        )
    said = []
    for name in sorted(facts)[:3]:
        f = facts[name]
        o = f.obs.get("valid") or f.obs.get(VALID) or f.obs.get("zero-args") or {}
        if f.tool_error:
            said.append(f"{name}: {f.tool_error}")
        elif o.get("error"):
            said.append(f"{name}: {_err(o['error'])}")
        elif "valid" in f.crashes or VALID in f.crashes:
            said.append(f"{name}: crashed")
    more = f" (+{len(facts) - 3} more)" if len(facts) > 3 else ""
    why = "no function could be exercised: every valid call failed"
    if said:
        why += " (" + "; ".join(said) + more + ")"
    if no_device:
        why += f"; no CUDA device to call its kernels with{device}"
    return why

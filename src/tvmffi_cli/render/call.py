"""Output of `tvmffi call` and `tvmffi bench`: JSON documents (see
schemas/call.schema.json and bench.schema.json) and the human rendering."""

from __future__ import annotations

from typing import Any

from .. import text
from ..call import describe as values
from ..call.engine import bench_json, call_json, error_json

# ---------------------------------------------------------------------------
# call (the JSON documents are the engine's: call/engine.py)


def call_text(reply: dict[str, Any]) -> str:
    """Human rendering: the result, then every tensor argument as it is after
    the call (kernels write into their arguments), then the files written."""
    lines = [values.to_text(reply["result"])]
    for i, a in enumerate(reply.get("args", [])):
        if a.get("type") in ("Tensor", "DLTensor*"):
            lines.append(f"arg{i} after the call: {values.to_text(a)}")
    for f in reply.get("files", []):
        if f.get("path"):
            lines.append(f"wrote {f['path']}")
        else:
            lines.append(f"{f.get('what')}: {f.get('error')}")
    return "\n".join(lines)


def raised_text(err: dict[str, Any], verbose: bool = False) -> str:
    """`ValueError: message`, with the backtrace (and cause) under -v."""
    # Library text: the kind on one line, message and backtrace inert (their
    # own lines kept, none able to start a workflow command).
    lines = [f"{text.one_line(str(err.get('kind')))}: {text.terminal(str(err.get('message')))}"]
    cause = err.get("cause")
    if cause:
        lines.append(
            f"  caused by {text.one_line(str(cause.get('kind')))}: "
            f"{text.terminal(str(cause.get('message')))}"
        )
    reached = err.get("memory_limit_reached")
    if reached:
        mib = reached["limit"] >> 20
        limit = f"{mib >> 10}G" if mib % 1024 == 0 else f"{mib}M"
        lines.append(
            f"memory limit reached (--memory-limit {limit}, "
            f"peak {reached['peak'] >> 20} MiB): allocations may have failed"
        )
    for d in err.get("sandbox_denied") or ():
        lines.append(
            f"the sandbox denies {text.one_line(str(d['path']))}: if the library needs it, "
            f"rerun with {d['option']} {text.one_line(str(d['value']))}"
        )
    if verbose:
        bt = text.terminal(err.get("backtrace") or "").rstrip()
        lines.append("Backtrace:" if bt else "(no backtrace recorded)")
        if bt:
            lines.append(bt)
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# bench


def _ns(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.3f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.3f} us"
    return f"{v:.2f} ns"


def bench_text(reply: dict[str, Any], func: str) -> str:
    s = reply["ns_per_call"]
    if reply.get("timer") == "cuda-events":
        host = reply["host_ns_per_call"]
        cuda = reply.get("cuda") or {}
        bw = reply.get("bandwidth_gbps")
        return (
            f"{func}: {_ns(s['median'])} device time per call (median; min {_ns(s['min'])}, "
            f"max {_ns(s['max'])}) over {reply['rounds']} rounds of "
            f"{reply['calls_per_round']:,} calls, CUDA events on the "
            f"{'legacy default' if cuda.get('stream') == 'default' else 'call'}'s stream of "
            f"{cuda.get('device')} ({text.one_line(str(cuda.get('name')))})\n"
            f"host launch {_ns(host['median'])} per call (median)"
            + (
                f"; {reply['bytes_per_call']:,} tensor bytes per call: {bw:.1f} GB/s"
                if bw is not None
                else ""
            )
        )
    return (
        f"{func}: {_ns(s['median'])} per call (median; min {_ns(s['min'])}, "
        f"max {_ns(s['max'])}) over {reply['rounds']} rounds of "
        f"{reply['calls_per_round']:,} calls, "
        + (
            "timed in C"
            if reply.get("timer", "c") == "c"
            else "looped through ctypes (this runtime has no C timing loop)"
        )
    )


__all__ = ["bench_json", "bench_text", "call_json", "call_text", "error_json", "raised_text"]

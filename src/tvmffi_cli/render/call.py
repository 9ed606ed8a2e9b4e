"""Output of `tvmffi call` and `tvmffi bench`: JSON documents (see
schemas/call.schema.json and bench.schema.json) and the human rendering of
the replies (call/messages.py) and of the values they describe
(call/describe.py)."""

from __future__ import annotations

import base64
import json

from .. import text
from ..call.describe import (
    Blob,
    Desc,
    ErrorValue,
    Handle,
    Items,
    Pairs,
    Scalar,
    ShapeValue,
    TensorValue,
    Text,
)
from ..call.engine import bench_json, call_json, error_json
from ..call.messages import BenchOk, CallOk, RaisedError

# ---------------------------------------------------------------------------
# call (the JSON documents are the engine's: call/engine.py)


def call_text(reply: CallOk) -> str:
    """Human rendering: the result, then every tensor argument as it is after
    the call (kernels write into their arguments), then the files written."""
    lines = [to_text(reply.result)]
    for i, a in enumerate(reply.args):
        if isinstance(a, TensorValue):
            lines.append(f"arg{i} after the call: {to_text(a)}")
    for f in reply.files or ():
        lines.append(f"wrote {f.path}" if f.path else f"{f.what}: {f.error}")
    return "\n".join(lines)


def raised_text(err: RaisedError, verbose: bool = False) -> str:
    """`ValueError: message`, with the backtrace (and cause) under -v."""
    # Library text: the kind on one line, message and backtrace inert (their
    # own lines kept, none able to start a workflow command).
    lines = [f"{text.one_line(err.kind)}: {text.terminal(err.message)}"]
    if err.cause is not None:
        lines.append(
            f"  caused by {text.one_line(err.cause.kind)}: {text.terminal(err.cause.message)}"
        )
    reached = err.memory_limit_reached
    if reached is not None:
        mib = reached.limit >> 20
        limit = f"{mib >> 10}G" if mib % 1024 == 0 else f"{mib}M"
        lines.append(
            f"memory limit reached (--memory-limit {limit}, "
            f"peak {reached.peak >> 20} MiB): allocations may have failed"
        )
    for d in err.sandbox_denied:
        lines.append(
            f"the sandbox denies {text.one_line(d.path)}: if the library needs it, "
            f"rerun with {d.option} {text.one_line(d.value)}"
        )
    if verbose:
        bt = text.terminal(err.backtrace).rstrip()
        lines.append("Backtrace:" if bt else "(no backtrace recorded)")
        if bt:
            lines.append(bt)
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# values


def tensor_header(d: TensorValue) -> str:
    shape = ", ".join(str(x) for x in d.shape or ())
    s = f"{d.type} {d.dtype or '?'}[{shape}] on {d.device or '?'}"
    if d.strides is not None:
        s += f" strides {list(d.strides)}"
    return s


def to_text(d: Desc, indent: int = 0) -> str:
    """Readable one- or multi-line rendering of a description's value."""
    pad = " " * indent
    if isinstance(d, Scalar):
        v = d.value
        if d.type == "float" and isinstance(v, str):
            return {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(v, repr(v))
        return repr(v) if d.type == "float" else str(v)
    if isinstance(d, Text):
        return json.dumps(d.value, ensure_ascii=False) + (" ..." if d.size is not None else "")
    if isinstance(d, Blob):
        raw = base64.b64decode(d.base64)
        return "b" + repr(raw)[1:] if len(raw) <= 64 else f"<{d.size} bytes> {raw[:32].hex()}..."
    if isinstance(d, ShapeValue):
        return "Shape(" + ", ".join(str(x) for x in d.value) + ")"
    if isinstance(d, Items):
        parts = [to_text(x, indent + 2) for x in d.items]
        more = ", ..." if d.size is not None else ""
        flat = "[" + ", ".join(parts) + more + "]"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
        inner = ",\n".join(pad + "  " + p for p in parts)
        return "[\n" + inner + (",\n" + pad + "  ..." if more else "") + "\n" + pad + "]"
    if isinstance(d, Pairs):
        parts = [f"{to_text(k, indent + 2)}: {to_text(v, indent + 2)}" for k, v in d.items]
        flat = "{" + ", ".join(parts) + "}"
        if len(flat) <= 80 and "\n" not in flat:
            return flat
        return "{\n" + ",\n".join(pad + "  " + p for p in parts) + "\n" + pad + "}"
    if isinstance(d, TensorValue):
        head = tensor_header(d)
        if d.error:
            return f"<{head}: {d.error}>"
        if d.preview is None:
            return f"<{head}>"
        body = d.preview.replace("\n", "\n" + pad + "  ")
        return f"<{head}>\n{pad}  {body}"
    if isinstance(d, Handle):
        return "<Function>" if d.type == "Function" else f"<Module {d.kind or '?'}>"
    if isinstance(d, ErrorValue):
        return f"{d.kind}: {d.message}"
    parts = [f"{k}={to_text(v, indent + 2)}" for k, v in d.fields]
    if d.fields_error:
        parts.append(f"<fields unreadable: {d.fields_error}>")
    flat = f"{d.type_key}(" + ", ".join(parts) + ")"
    if len(flat) <= 80 and "\n" not in flat:
        return flat
    return f"{d.type_key}(\n" + ",\n".join(pad + "  " + p for p in parts) + "\n" + pad + ")"


# ---------------------------------------------------------------------------
# bench


def _ns(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:.3f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.3f} us"
    return f"{v:.2f} ns"


def bench_text(reply: BenchOk, func: str) -> str:
    s = reply.ns_per_call
    gpu = reply.gpu
    if gpu is not None:
        host, cuda, bw = gpu.host_ns_per_call, gpu.cuda, gpu.bandwidth_gbps
        return (
            f"{func}: {_ns(s.median)} device time per call (median; min {_ns(s.min)}, "
            f"max {_ns(s.max)}) over {reply.rounds} rounds of "
            f"{reply.calls_per_round:,} calls, CUDA events on the "
            f"{'legacy default' if cuda.stream == 'default' else 'call'}'s stream of "
            f"{cuda.device} ({text.one_line(cuda.name)})\n"
            f"host launch {_ns(host.median)} per call (median)"
            + (
                f"; {gpu.bytes_per_call:,} tensor bytes per call: {bw:.1f} GB/s"
                if bw is not None
                else ""
            )
        )
    return (
        f"{func}: {_ns(s.median)} per call (median; min {_ns(s.min)}, "
        f"max {_ns(s.max)}) over {reply.rounds} rounds of "
        f"{reply.calls_per_round:,} calls, "
        + (
            "timed in C"
            if reply.timer == "c"
            else "looped through ctypes (this runtime has no C timing loop)"
        )
    )


__all__ = ["bench_json", "bench_text", "call_json", "call_text", "error_json", "raised_text"]

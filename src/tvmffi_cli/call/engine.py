"""The call engine, parent side (no click): build a request, run it in the
sandboxed child (task call.task or call.bench_task) and describe the outcome
as the documented --json documents (schemas/call.schema.json, bench.schema.json).

    job = make_request("lib.so", "add_one", specs, timeout=60.0)
    outcome = run_call(job)            # CallOk, Raised or ChildFailure
    doc = call_json(outcome, "add_one", job.request.path)

`tvmffi call`/`tvmffi bench` (cli/) and tvmffi_cli.call() (api) both use it;
what crosses to the worker and back is call/messages.py's.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence, Union, cast

from ..errors import InputError, TvmffiError
from .describe import JsonDict, value_json
from .messages import (
    BenchOk,
    CallJob,
    CallOk,
    CallRequest,
    ChildFailure,
    LoadFailed,
    MemoryReached,
    Raised,
    Refused,
    decode_bench_reply,
    decode_call_reply,
    decode_load_reply,
    encode,
)
from .specs import ArgSpec

DEFAULT_TIMEOUT = 60.0
TENSOR_MODES = ("dltensor", "object")

__all__ = ["ChildFailure", "make_request", "run_bench", "run_call"]


def parse_timeout(
    text: str | float | None, default: float = DEFAULT_TIMEOUT, flag: str = "--timeout"
) -> float:
    """Seconds as a positive finite float (InputError otherwise)."""
    if text is None:
        return default
    try:
        v = float(text)
    except (TypeError, ValueError):
        raise InputError(f"{flag} {text}: not a number of seconds") from None
    if not 0 < v < float("inf"):  # also rejects NaN
        raise InputError(f"{flag} {text}: must be a positive number of seconds")
    return v


def make_request(
    lib: str | os.PathLike[str],
    func: str,
    args: Sequence[ArgSpec],
    *,
    timeout: str | float | None = None,
    runtime: str | os.PathLike[str] | None = None,
    tensor_mode: str = "dltensor",
    cwd: str | None = None,
    stream: str | None = None,
) -> CallJob:
    """The call of call.task/call.bench_task: library, function, argument
    specs (call/specs.py), runtime and timeout; stream: "tvmffi" or "default"
    (the CUDA stream of the call, call/device.py). InputError for a missing file."""
    path = os.path.abspath(os.path.expanduser(os.fspath(lib)))
    if not os.path.isfile(path):
        what = "is a directory, not a library" if os.path.isdir(path) else "no such file"
        raise InputError(f"{os.fspath(lib)}: {what}")
    if tensor_mode not in TENSOR_MODES:
        raise InputError(f"tensor mode must be one of {', '.join(TENSOR_MODES)}")
    if stream is not None:
        from .device import STREAM_MODES

        if stream not in STREAM_MODES:
            raise InputError(f"--stream {stream}: expected one of {', '.join(STREAM_MODES)}")
    from ..binary import open_binary, require_library
    from ..ffi.hosts import choose_runtime

    b = open_binary(path)  # not a library (a program, a text file): exit 2, before any load
    try:
        require_library(b)
    finally:
        b.close()

    # runtime: auto (None), builtin, official or a path; which one hosts the
    # library is decided here, from the file, before anything loads.
    choice = choose_runtime(None if runtime is None else os.fspath(runtime), path)
    request = CallRequest(
        path=path,
        func=func,
        args=tuple(args),
        cwd=cwd or os.getcwd(),
        tensor_mode=tensor_mode,
        runtime=choice.path,
        stream=stream,
    )
    return CallJob(request, choice, parse_timeout(timeout))


def run_call(job: CallJob) -> Union[CallOk, Raised, ChildFailure]:
    """Run the call of `job` in a fresh sandboxed worker (task call.task)."""
    out = _run_in_child(job, bench=False)
    assert not isinstance(out, BenchOk)  # decode_call_reply gives none
    return out


def run_bench(job: CallJob) -> Union[BenchOk, Raised, ChildFailure]:
    """Run the benchmark of `job` in a fresh sandboxed worker (call.bench_task)."""
    out = _run_in_child(job, bench=True)
    assert not isinstance(out, CallOk)  # decode_bench_reply gives none
    return out


def _run_in_child(job: CallJob, bench: bool) -> Union[CallOk, BenchOk, Raised, ChildFailure]:
    """Run the job in a fresh sandboxed worker.

    Inputs reach the worker as private copies; `--out` files are staged by
    the worker and published (hash-checked) only after it is gone. Returns
    the task's reply (the function returned or raised), or a ChildFailure
    when the worker crashed, ran out of memory, timed out, tampered with
    its channel or replied with what is not a reply. A refused request (no
    such function, arguments that cannot be passed) raises InputError."""
    from ..binary.deps import load_read_paths
    from ..sandbox import process as _sandbox
    from ..sandbox.files import private_dir
    from ..sandbox.messages import MessageError
    from . import files

    sandbox = cast(Any, _sandbox)
    request, timeout = job.request, job.timeout
    func, path = request.func, request.path
    task = "call.bench_task" if bench else "call.task"
    if request.runtime is None:
        from ..ffi import paths

        paths.runtime_library()  # a bad TVMFFI_RUNTIME is exit 2, judged before any load
    inputs, args = files.private_inputs(request.args, request.cwd)
    final_out, stage = request.out, None
    if final_out:
        stage = private_dir("tvmffi-out-")
    sent = dataclasses.replace(request, args=args, out=stage)
    lib_name = os.path.basename(path)
    phase = "load"
    reply: Union[CallOk, BenchOk, Raised, Refused]
    try:
        from ..abi.cuda import DRIVER_ENV

        reads = [inputs, *load_read_paths(path), path]
        if os.environ.get(DRIVER_ENV):  # a driver named by TVMFFI_CUDA_DRIVER (tests)
            from ..ffi.cuda import driver_read_paths  # ctypes tables: only then

            reads += driver_read_paths()
        if request.runtime:
            reads.append(request.runtime)
        with sandbox.Worker(
            runtime=request.runtime,
            read_paths=reads,
            write_paths=[stage] if stage else [],
            cpu_limit=sandbox.cpu_seconds(timeout),
        ) as w:
            # The library is loaded by a request of its own first, so a library
            # that raises or aborts while loading is reported as the load.
            loaded = decode_load_reply(w.call("call.task", encode(request.load()), timeout))
            if isinstance(loaded, LoadFailed):
                return ChildFailure(
                    "LoadError",
                    f"{lib_name}: failed while loading: {loaded.message}" + _runtime_hint(request),
                )
            if isinstance(loaded, Refused):
                reply = loaded
            else:
                phase = "call"
                got = w.call(task, encode(sent), timeout)
                reply = decode_bench_reply(got) if bench else decode_call_reply(got)
                if isinstance(reply, Raised):
                    reply = _observed(reply, w)
        if stage and final_out and isinstance(reply, CallOk) and reply.files is not None:
            # The worker is gone: check what it staged, then publish it.
            published = files.publish_outputs(stage, final_out, reply.files, request.force)
            reply = dataclasses.replace(reply, files=published)
    except MessageError as e:
        return ChildFailure("Tampered", f"{func}: the worker's reply is malformed: {e}")
    except sandbox.ChannelTampered as e:
        return ChildFailure("Tampered", f"{func}: {e}")
    except sandbox.ChildCrashed as e:
        sig = getattr(e, "signal", None)
        how = sig or f"exit status {getattr(e, 'returncode', '?')}"
        msg = f"{func} crashed the worker process ({how})"
        if phase == "load":
            from ..ffi.hosts import library_message

            said = library_message(getattr(e, "stderr", "") or "")
            msg = f"{lib_name} crashed the worker process ({how}) while loading" + (
                f": {said}" if said else ""
            )
            msg += _runtime_hint(request)
        elif phase == "call":
            msg += _read_past_arguments(getattr(e, "stderr", "") or "", len(request.args))
        if getattr(e, "after_reply", False):
            msg = f"{func} returned, then crashed the worker process ({how})"
        if isinstance(e, (sandbox.MemoryLimitExceeded, sandbox.ScratchLimitExceeded)):
            msg = f"{func}: {e}"
        stderr = getattr(e, "stderr", "") or ""
        if sig:
            return ChildFailure("Crash", msg, signal=sig, stderr=stderr)
        return ChildFailure("Crash", msg, exit_status=getattr(e, "returncode", None), stderr=stderr)
    except sandbox.ChildTimeout as e:
        msg = f"{func} did not return within {timeout:g} s; the worker was killed"
        if phase == "load":
            msg = f"{lib_name} did not finish loading within {timeout:g} s; the worker was killed"
        return ChildFailure("Timeout", msg, timeout=timeout, stderr=getattr(e, "stderr", "") or "")
    finally:
        # Places the worker could reach (with --no-sandbox, change): removed
        # without following a link, whatever modes it set.
        sandbox.remove_tree(inputs)
        if stage:
            sandbox.remove_tree(stage)
    if isinstance(reply, Refused):
        err = InputError(reply.message)
        err.exit_code = reply.exit_code
        raise err
    return reply


def _observed(reply: Raised, w: Any) -> Raised:
    """The error with what the parent observed of the worker (never the
    library's words): its memory near the limit, paths the sandbox denied
    that the error or the worker's output names."""
    reached = w.memory_limit_reached()
    said = f"{reply.error.message}\n{w.stderr_text()}"
    err = dataclasses.replace(
        reply.error,
        memory_limit_reached=MemoryReached(reached["limit"], reached["peak"]) if reached else None,
        sandbox_denied=tuple(w.denials(said)),
    )
    return dataclasses.replace(reply, error=err)


def _runtime_hint(request: CallRequest) -> str:
    """Which --runtime may host a library that failed to load (ffi/hosts.py)."""
    from ..ffi.hosts import hint_for_runtime

    try:
        return hint_for_runtime(request.path, request.runtime)
    except (TvmffiError, OSError):
        return ""


def _read_past_arguments(tail: str, n: int) -> str:
    """What a crash was, when the worker's fault report (call/guard.py) puts
    it in the guard page right after the argument array: the function read
    arguments it was not given (conform's arg-bounds finding)."""
    from ..ffi.guardpages import fault_of

    if fault_of(tail) != "args-guard":
        return ""
    if n == 0:
        return ": out-of-bounds argument read: called with 0 arguments, it read args[0] from the guard page"
    return (
        f": out-of-bounds argument read: called with {n} argument(s), it read past "
        f"args[{n - 1}] into the guard page"
    )


# ---------------------------------------------------------------------------
# The --json documents (schemas/call.schema.json, bench.schema.json)


def call_json(reply: CallOk, func: str, lib_path: str) -> JsonDict:
    """The --json document of a successful call."""
    doc: JsonDict = {
        "library": lib_path,
        "function": func,
        "resolved": reply.resolved,
        "type": reply.result.type,
        "result": value_json(reply.result),
        "args": [
            {"index": i, "type": a.type, "value": value_json(a)} for i, a in enumerate(reply.args)
        ],
        "call_ns": reply.call_ns,
    }
    if reply.cuda is not None:
        doc["cuda"] = reply.cuda.to_json()
    if reply.files is not None:
        doc["files"] = [f.to_json() for f in reply.files]
    if reply.notes:
        doc["notes"] = list(reply.notes)
    return doc


def error_json(kind: str, message: str, backtrace: str | None = None) -> JsonDict:
    """The --json document of a failed call: {"error": {kind, message, backtrace}};
    backtrace is null when none was recorded (never "")."""
    return {"error": {"kind": kind, "message": message, "backtrace": backtrace or None}}


def raised_json(reply: Raised, details: bool = True) -> JsonDict:
    """The --json document of a call whose function raised; details: with its
    cause, what the parent observed (memory, the sandbox's denials) and the
    CUDA error (`tvmffi bench` leaves them out)."""
    e = reply.error
    err: JsonDict = {"kind": e.kind, "message": e.message, "backtrace": e.backtrace or None}
    if details and e.cause is not None:
        err["cause"] = {"kind": e.cause.kind, "message": e.cause.message}
    if details and e.memory_limit_reached is not None:
        m = e.memory_limit_reached
        err["memory_limit_reached"] = {"limit": m.limit, "peak": m.peak}
    if details and e.sandbox_denied:
        err["sandbox_denied"] = [
            {"path": d.path, "option": d.option, "value": d.value} for d in e.sandbox_denied
        ]
    if details and e.cuda is not None:
        err["cuda"] = {"code": e.cuda.code, "sticky": e.cuda.sticky}
    return {"error": err}


def bench_json(reply: BenchOk, func: str, lib_path: str) -> JsonDict:
    """The --json document of a benchmark."""
    doc: JsonDict = {
        "library": lib_path,
        "function": func,
        "resolved": reply.resolved,
        "ns_per_call": reply.ns_per_call.to_json(),
        "calls": reply.calls,
        "calls_per_round": reply.calls_per_round,
        "rounds": reply.rounds,
        "round_ns": list(reply.round_ns),
        "timer": reply.timer,
    }
    gpu = reply.gpu
    if gpu is not None:  # what a benchmark with CUDA tensors adds (call/bench_gpu.py)
        doc["host_ns_per_call"] = gpu.host_ns_per_call.to_json()
        doc["bytes_per_call"] = gpu.bytes_per_call
        doc["bandwidth_gbps"] = gpu.bandwidth_gbps
        doc["cuda"] = gpu.cuda.to_json()
    return doc

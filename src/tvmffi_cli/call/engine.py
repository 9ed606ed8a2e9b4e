"""The call engine, parent side (no click): build a request, run it in the
sandboxed child (task call.task or call.bench_task) and describe the outcome
as the documented --json documents (schemas/call.schema.json, bench.schema.json).

    request = make_request("lib.so", "add_one", specs, timeout=60.0)
    outcome = run_in_child("call.task", request)   # reply dict or ChildFailure
    doc = call_json(outcome, "add_one", request["path"])

`tvmffi call`/`tvmffi bench` (cli/) and tvmffi_cli.call() (api) both use it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import InputError, TvmffiError

DEFAULT_TIMEOUT = 60.0
TENSOR_MODES = ("dltensor", "object")


@dataclass(frozen=True)
class ChildFailure:
    """The worker process crashed or was killed for taking too long.

    kind: "Crash" or "Timeout"; message: one line naming the function;
    extra: the fields of the --json error object besides kind/message/backtrace
    ({"signal": "SIGSEGV"}, {"exit_status": 3} or {"timeout": 5.0});
    stderr: the tail of what the worker wrote on stderr."""

    kind: str
    message: str
    extra: dict[str, Any] = field(default_factory=dict)
    stderr: str = ""

    def to_json(self) -> dict[str, Any]:
        """The --json document of this failure."""
        return error_json(self.kind, self.message, None, **self.extra)


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
    args: list[dict[str, Any]],
    *,
    timeout: str | float | None = None,
    runtime: str | os.PathLike[str] | None = None,
    tensor_mode: str = "dltensor",
    cwd: str | None = None,
    stream: str | None = None,
) -> dict[str, Any]:
    """The request of call.task/call.bench_task: library, function, argument
    specs (call.literals), runtime and timeout; stream: "tvmffi" or "default"
    (the CUDA stream of the call, call/device.py). InputError for a missing file."""
    path = os.path.abspath(os.path.expanduser(os.fspath(lib)))
    if not os.path.isfile(path):
        what = "is a directory, not a library" if os.path.isdir(path) else "no such file"
        raise InputError(f"{os.fspath(lib)}: {what}")
    if tensor_mode not in TENSOR_MODES:
        raise InputError(f"tensor mode must be one of {', '.join(TENSOR_MODES)}")
    request: dict[str, Any] = {
        "path": path,
        "func": func,
        "args": args,
        "cwd": cwd or os.getcwd(),
        "tensor_mode": tensor_mode,
    }
    if stream is not None:
        from .device import STREAM_MODES

        if stream not in STREAM_MODES:
            raise InputError(f"--stream {stream}: expected one of {', '.join(STREAM_MODES)}")
        request["stream"] = stream
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
    request["runtime"] = choice.path
    request["runtime_choice"] = choice.to_json()
    request["timeout"] = parse_timeout(timeout)
    return request


def run_in_child(task: str, request: dict[str, Any]) -> dict[str, Any] | ChildFailure:
    """Run `task` with `request` in a fresh sandboxed worker.

    Inputs reach the worker as private copies; `--out` files are staged by
    the worker and published (hash-checked) only after it is gone. Returns
    the task's reply (status "ok" or "raised"), or a ChildFailure when the
    worker crashed, ran out of memory, timed out or tampered with its channel.
    A reply of status "input_error" (no such function, arguments that cannot
    be passed) raises InputError."""
    from ..binary.deps import load_read_paths
    from ..sandbox import process as _sandbox
    from ..sandbox.files import private_dir
    from . import files

    sandbox = cast(Any, _sandbox)
    func = request.get("func")
    timeout = request.pop("timeout", DEFAULT_TIMEOUT)
    if request.get("runtime") is None:
        from ..ffi import paths

        paths.runtime_library()  # a bad TVMFFI_RUNTIME is exit 2, judged before any load
    inputs = files.private_inputs(request)
    final_out, stage = request.get("out"), None
    if final_out:
        stage = private_dir("tvmffi-out-")
        request["out"] = stage
    lib_name = os.path.basename(request["path"])
    phase = "load"
    try:
        from ..ffi.cuda import driver_read_paths

        reads = [inputs, *load_read_paths(request["path"]), request["path"]]
        reads += driver_read_paths()  # a driver named by TVMFFI_CUDA_DRIVER (tests)
        if request.get("runtime"):
            reads.append(request["runtime"])
        with sandbox.Worker(
            runtime=request.get("runtime"),
            read_paths=reads,
            write_paths=[stage] if stage else [],
            cpu_limit=sandbox.cpu_seconds(timeout),
        ) as w:
            # The library is loaded by a request of its own first, so a library
            # that raises or aborts while loading is reported as the load.
            loaded = w.call(
                task.split(".")[0] + ".task",
                {
                    "phase": "load",
                    "path": request["path"],
                    "runtime": request.get("runtime"),
                    "tensor_mode": request.get("tensor_mode"),
                },
                timeout,
            )
            if isinstance(loaded, dict) and loaded.get("status") == "load_failed":
                return ChildFailure(
                    "LoadError",
                    f"{lib_name}: failed while loading: {loaded.get('message', '')}"
                    + _runtime_hint(request),
                )
            if isinstance(loaded, dict) and loaded.get("status") == "input_error":
                reply = loaded
            else:
                phase = "call"
                reply = w.call(task, request, timeout)
                if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
                    # Observed here, not taken from the library's words.
                    reached = w.memory_limit_reached()
                    if reached:
                        reply["error"]["memory_limit_reached"] = reached
                    err = reply["error"]
                    said = f"{err.get('message', '')}\n{w.stderr_text()}"
                    denied = [d.to_json() for d in w.denials(said)]
                    if denied:
                        err["sandbox_denied"] = denied
        if stage and isinstance(reply, dict) and isinstance(reply.get("files"), list):
            # The worker is gone: check what it staged, then publish it.
            reply["published"] = files.publish_outputs(
                stage, str(final_out), reply["files"], bool(request.get("force"))
            )
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
            msg += _read_past_arguments(
                getattr(e, "stderr", "") or "", len(request.get("args") or [])
            )
        if getattr(e, "after_reply", False):
            msg = f"{func} returned, then crashed the worker process ({how})"
        if isinstance(e, (sandbox.MemoryLimitExceeded, sandbox.ScratchLimitExceeded)):
            msg = f"{func}: {e}"
        extra = {"signal": sig} if sig else {"exit_status": getattr(e, "returncode", None)}
        return ChildFailure("Crash", msg, extra, getattr(e, "stderr", "") or "")
    except sandbox.ChildTimeout as e:
        msg = f"{func} did not return within {timeout:g} s; the worker was killed"
        if phase == "load":
            msg = f"{lib_name} did not finish loading within {timeout:g} s; the worker was killed"
        return ChildFailure("Timeout", msg, {"timeout": timeout}, getattr(e, "stderr", "") or "")
    finally:
        request["timeout"] = timeout
        # Places the worker could reach (with --no-sandbox, change): removed
        # without following a link, whatever modes it set.
        sandbox.remove_tree(inputs)
        if stage:
            sandbox.remove_tree(stage)
        if final_out:
            request["out"] = final_out
    if not isinstance(reply, dict):
        raise InputError(f"unexpected reply from the worker: {reply!r}"[:200])
    if reply.get("status") == "input_error":
        err = InputError(reply.get("message", "bad input"))
        err.exit_code = reply.get("exit_code", err.exit_code)
        raise err
    return reply


def _runtime_hint(request: dict[str, Any]) -> str:
    """Which --runtime may host a library that failed to load (ffi/hosts.py)."""
    from ..ffi.hosts import hint_for_runtime

    try:
        return hint_for_runtime(request["path"], request.get("runtime"))
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


def call_json(reply: dict[str, Any], func: str, lib_path: str) -> dict[str, Any]:
    """The --json document of a successful call."""
    from . import describe as values

    result = reply["result"]
    doc: dict[str, Any] = {
        "library": lib_path,
        "function": func,
        "resolved": reply.get("resolved"),
        "type": result.get("type"),
        "result": values.to_json(result),
        "args": [
            {"index": i, "type": a.get("type"), "value": values.to_json(a)}
            for i, a in enumerate(reply.get("args", []))
        ],
        "call_ns": reply.get("call_ns"),
    }
    if reply.get("cuda"):
        doc["cuda"] = reply["cuda"]
    if "files" in reply:
        doc["files"] = reply["files"]
    if reply.get("notes"):
        doc["notes"] = list(reply["notes"])
    return doc


def error_json(
    kind: str, message: str, backtrace: str | None = None, **extra: Any
) -> dict[str, Any]:
    """The --json document of a failed call: {"error": {kind, message, backtrace}};
    backtrace is null when none was recorded (never "")."""
    err: dict[str, Any] = {"kind": kind, "message": message, "backtrace": backtrace or None}
    err.update(extra)
    return {"error": err}


def raised_json(reply: dict[str, Any], with_cause: bool = True) -> dict[str, Any]:
    """The --json document of a call whose function raised (reply status "raised")."""
    err = reply["error"]
    extra = {"cause": err["cause"]} if with_cause and err.get("cause") else {}
    for key in ("memory_limit_reached", "sandbox_denied", "cuda"):
        if err.get(key):
            extra[key] = err[key]
    return error_json(err["kind"], err["message"], err.get("backtrace"), **extra)


def bench_json(reply: dict[str, Any], func: str, lib_path: str) -> dict[str, Any]:
    """The --json document of a benchmark."""
    return {
        "library": lib_path,
        "function": func,
        "resolved": reply.get("resolved"),
        "ns_per_call": dict(reply["ns_per_call"]),
        "calls": reply["calls"],
        "calls_per_round": reply["calls_per_round"],
        "rounds": reply["rounds"],
        "round_ns": list(reply.get("round_ns", [])),
        "timer": reply.get("timer", "c"),
        **{k: reply[k] for k in _BENCH_GPU_KEYS if k in reply},
    }


#: What a benchmark with CUDA tensors adds (call/bench_gpu.py).
_BENCH_GPU_KEYS = ("host_ns_per_call", "bytes_per_call", "bandwidth_gbps", "cuda")

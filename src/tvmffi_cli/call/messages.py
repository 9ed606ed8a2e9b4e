"""The protocol of `tvmffi call` and `tvmffi bench` between the parent and its
sandboxed worker (tasks call.task and call.bench_task), typed:

    parent -> worker   LoadRequest   load the library only (a failing load is told apart)
    worker -> parent   Loaded | LoadFailed | Refused
    parent -> worker   CallRequest   the call (or the benchmark): its argument specs
    worker -> parent   CallOk | BenchOk | Raised | Refused

Argument specs (NoneArg ... TensorArg, Positional) are what call/literals.py
and call/argv.py read from the command line and call/pyargs.py from Python
values; the worker materializes them (call/task.py). Values the worker
describes are call/describe.py's. encode(msg) gives the JSON object of any of
them; decode_request and decode_*_reply read one back and raise MessageError
for anything else: the worker is not trusted, so a malformed reply is
refused with the first field that is wrong (call/engine.py reports it as a
tampered worker). CallJob, ChildFailure and the parent's observations
(MemoryReached, the sandbox's denials) never cross the channel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Optional, Sequence, Tuple, Union, final

from ..sandbox.messages import Fields, Frozen, MessageError
from .describe import Desc, JsonDict, decode_desc, encode_desc
from .specs import ArgSpec, decode_spec, encode_spec

if TYPE_CHECKING:
    from ..ffi.hosts import RuntimeChoice
    from ..sandbox.denials import Denial

# ---------------------------------------------------------------------------
# requests


class LoadRequest(Frozen):
    """Only load the library; a later CallRequest in the same worker reuses it."""

    path: str
    runtime: Optional[str]
    tensor_mode: str


class CallRequest(Frozen):
    """One call (call.task) or one benchmark (call.bench_task, which reads
    repeat, rounds and target_round_ns: None calibrates, call/calibrate.py).
    runtime: the libtvm_ffi.so hosting the library (None: tvmffi's); stream:
    "tvmffi" or "default" (call/device.py); out: where the worker stages
    --out files; guard: tensor data ends at a guard page (call/guard.py);
    verbose: a crash keeps the runtime's own report."""

    path: str
    func: str
    args: Tuple[ArgSpec, ...]
    cwd: str
    tensor_mode: str = "dltensor"
    runtime: Optional[str] = None
    stream: Optional[str] = None
    out: Optional[str] = None
    force: bool = False
    guard: bool = False
    verbose: bool = False
    repeat: Optional[int] = None
    rounds: Optional[int] = None
    target_round_ns: Optional[int] = None

    def load(self) -> LoadRequest:
        return LoadRequest(self.path, self.runtime, self.tensor_mode)


class CallJob(Frozen):
    """A call as the parent runs it: the request, the runtime chosen for it
    (ffi/hosts.py; the --json documents' "runtime") and the timeout."""

    request: CallRequest
    runtime: RuntimeChoice
    timeout: float


# ---------------------------------------------------------------------------
# replies


@final
class Loaded(Frozen):
    status: ClassVar[str] = "loaded"


@final
class LoadFailed(Frozen):
    message: str
    status: ClassVar[str] = "load_failed"


@final
class Refused(Frozen):
    """The request cannot run: no such function, arguments that cannot be
    passed (exit 2), or a result tvmffi cannot read (exit 1)."""

    message: str
    exit_code: int
    status: ClassVar[str] = "input_error"


class Cause(Frozen):
    kind: str
    message: str


class CudaFault(Frozen):
    """A CUDA error after the call returned: the driver's code; sticky: the
    context is unusable afterwards."""

    code: int
    sticky: bool


class MemoryReached(Frozen):
    """The worker's memory came near --memory-limit (bytes): observed by the parent."""

    limit: int
    peak: int


class RaisedError(Frozen):
    """What the function raised (or its CUDA work, asynchronously: `cuda`).
    memory_limit_reached and sandbox_denied are the parent's observations,
    never read from the worker's reply."""

    kind: str
    message: str
    backtrace: str = ""
    cause: Optional[Cause] = None
    cuda: Optional[CudaFault] = None
    memory_limit_reached: Optional[MemoryReached] = None
    sandbox_denied: Tuple[Denial, ...] = ()


class CudaInfo(Frozen):
    """The CUDA device of a call (ffi/cuda.py Context.describe) and its stream."""

    device: str
    name: str
    compute_capability: str
    driver_version: int
    driver: str
    stream: str  # "tvmffi" | "default"

    def to_json(self) -> JsonDict:
        return {
            "device": self.device,
            "name": self.name,
            "compute_capability": self.compute_capability,
            "driver_version": self.driver_version,
            "driver": self.driver,
            "stream": self.stream,
        }


@final
class Raised(Frozen):
    error: RaisedError
    cuda: Optional[CudaInfo] = None
    status: ClassVar[str] = "raised"


class OutFile(Frozen):
    """An --out file: `what` (arg<i> or result), its path (None: not written,
    `error` says why) and, while staged, the SHA-256 the worker wrote."""

    what: str
    path: Optional[str]
    sha256: Optional[str] = None
    error: Optional[str] = None

    def to_json(self) -> JsonDict:
        out: JsonDict = {"what": self.what, "path": self.path}
        if self.sha256 is not None:
            out["sha256"] = self.sha256
        if self.error is not None:
            out["error"] = self.error
        return out


@final
class CallOk(Frozen):
    """The function returned: how it was found ("export" | "global"), its
    result and arguments after the call, what was assumed reading inputs,
    the CUDA device, the --out files (None: no --out)."""

    resolved: str
    call_ns: int
    result: Desc
    args: Tuple[Desc, ...]
    notes: Tuple[str, ...] = ()
    cuda: Optional[CudaInfo] = None
    files: Optional[Tuple[OutFile, ...]] = None
    status: ClassVar[str] = "ok"


class Stats(Frozen):
    """Nanoseconds per call over the rounds."""

    min: float
    median: float
    max: float

    @classmethod
    def of(cls, xs: Sequence[float]) -> Stats:
        import statistics  # the worker's: the parent only reads them

        return cls(min(xs), statistics.median(xs), max(xs))

    def to_json(self) -> JsonDict:
        return {"min": self.min, "median": self.median, "max": self.max}


class BenchGpu(Frozen):
    """A benchmark timed by CUDA events (call/bench_gpu.py): the host's launch
    time, the tensor bytes per call and the bandwidth (None: no device time)."""

    host_ns_per_call: Stats
    bytes_per_call: int
    bandwidth_gbps: Optional[float]
    cuda: CudaInfo


@final
class BenchOk(Frozen):
    resolved: str
    calls: int
    timer: str  # "c" | "ctypes" | "cuda-events"
    calls_per_round: int
    rounds: int
    round_ns: Tuple[int, ...]
    ns_per_call: Stats
    gpu: Optional[BenchGpu] = None
    status: ClassVar[str] = "ok"


Reply = Union[Loaded, LoadFailed, Refused, Raised, CallOk, BenchOk]
Message = Union[LoadRequest, CallRequest, Reply]


class ChildFailure(Frozen):
    """The worker failed as a process: kind "Crash" (signal or exit_status),
    "Timeout" (timeout), "LoadError" or "Tampered"; message: one line naming
    the function; stderr: the tail of what the worker wrote on stderr."""

    kind: str
    message: str
    signal: Optional[str] = None
    exit_status: Optional[int] = None
    timeout: Optional[float] = None
    stderr: str = ""

    def to_json(self) -> JsonDict:
        """The --json document of this failure."""
        err: JsonDict = {"kind": self.kind, "message": self.message, "backtrace": None}
        if self.kind == "Crash":
            err.update(
                {"signal": self.signal} if self.signal else {"exit_status": self.exit_status}
            )
        elif self.timeout is not None:
            err["timeout"] = self.timeout
        return {"error": err}


# ---------------------------------------------------------------------------
# the encoder


def encode(msg: Message) -> JsonDict:
    """The JSON object of a message (decode_request / decode_*_reply read it)."""
    if isinstance(msg, LoadRequest):
        return {
            "phase": "load",
            "path": msg.path,
            "runtime": msg.runtime,
            "tensor_mode": msg.tensor_mode,
        }
    if isinstance(msg, CallRequest):
        return {
            "path": msg.path,
            "func": msg.func,
            "args": [encode_spec(s) for s in msg.args],
            "cwd": msg.cwd,
            "tensor_mode": msg.tensor_mode,
            "runtime": msg.runtime,
            "stream": msg.stream,
            "out": msg.out,
            "force": msg.force,
            "guard": msg.guard,
            "verbose": msg.verbose,
            "repeat": msg.repeat,
            "rounds": msg.rounds,
            "target_round_ns": msg.target_round_ns,
        }
    out: JsonDict = {"status": msg.status}
    if isinstance(msg, LoadFailed):
        out["message"] = msg.message
    elif isinstance(msg, Refused):
        out.update(message=msg.message, exit_code=msg.exit_code)
    elif isinstance(msg, Raised):
        e = msg.error
        err: JsonDict = {"kind": e.kind, "message": e.message, "backtrace": e.backtrace}
        if e.cause is not None:
            err["cause"] = {"kind": e.cause.kind, "message": e.cause.message}
        if e.cuda is not None:
            err["cuda"] = {"code": e.cuda.code, "sticky": e.cuda.sticky}
        out["error"] = err
        if msg.cuda is not None:
            out["cuda"] = msg.cuda.to_json()
    elif isinstance(msg, CallOk):
        out.update(resolved=msg.resolved, call_ns=msg.call_ns, result=encode_desc(msg.result))
        out["args"] = [encode_desc(a) for a in msg.args]
        if msg.notes:
            out["notes"] = list(msg.notes)
        if msg.cuda is not None:
            out["cuda"] = msg.cuda.to_json()
        if msg.files is not None:
            out["files"] = [f.to_json() for f in msg.files]
    elif isinstance(msg, BenchOk):
        out.update(resolved=msg.resolved, calls=msg.calls, timer=msg.timer)
        out.update(calls_per_round=msg.calls_per_round, rounds=msg.rounds)
        out.update(round_ns=list(msg.round_ns), ns_per_call=msg.ns_per_call.to_json())
        if msg.gpu is not None:
            out["host_ns_per_call"] = msg.gpu.host_ns_per_call.to_json()
            out["bytes_per_call"] = msg.gpu.bytes_per_call
            out["bandwidth_gbps"] = msg.gpu.bandwidth_gbps
            out["cuda"] = msg.gpu.cuda.to_json()
    return out


# ---------------------------------------------------------------------------
# the decoders


def decode_request(obj: object) -> Union[LoadRequest, CallRequest]:
    """A request from the parent (the worker's side)."""
    f = Fields(obj, "request")
    if f.obj.get("phase") == "load":
        return LoadRequest(f.text("path"), f.text_or_none("runtime"), f.text("tensor_mode"))
    return CallRequest(
        path=f.text("path"),
        func=f.text("func"),
        args=tuple(decode_spec(s) for s in f.items("args")) if f.has("args") else (),
        cwd=f.text("cwd") if f.has("cwd") else "",
        tensor_mode=f.text("tensor_mode") if f.obj.get("tensor_mode") else "dltensor",
        runtime=f.text_or_none("runtime"),
        stream=f.text_or_none("stream"),
        out=f.text_or_none("out"),
        force=f.flag("force", False),
        guard=f.flag("guard", False),
        verbose=f.flag("verbose", False),
        repeat=f.integer_or_none("repeat"),
        rounds=f.integer_or_none("rounds"),
        target_round_ns=f.integer_or_none("target_round_ns"),
    )


def _reply(obj: object, own: str, others: Tuple[str, ...]) -> Tuple[Fields, str]:
    f = Fields(obj, "reply")
    status = f.text("status")
    if status not in (own, *others):
        raise MessageError(f"reply: status {status[:40]!r} is not a reply to this request")
    return f, status


def _refused(f: Fields) -> Refused:
    return Refused(f.text("message"), f.integer("exit_code"))


def decode_load_reply(obj: object) -> Union[Loaded, LoadFailed, Refused]:
    """The worker's reply to a LoadRequest; MessageError for anything else."""
    f, status = _reply(obj, "loaded", ("load_failed", "input_error"))
    if status == "load_failed":
        return LoadFailed(f.text("message"))
    return _refused(f) if status == "input_error" else Loaded()


def decode_call_reply(obj: object) -> Union[CallOk, Raised, Refused]:
    """The worker's reply to a call; MessageError names what is wrong with
    anything else."""
    f, status = _reply(obj, "ok", ("raised", "input_error"))
    if status == "input_error":
        return _refused(f)
    return _raised(f) if status == "raised" else _call_ok(f)


def decode_bench_reply(obj: object) -> Union[BenchOk, Raised, Refused]:
    """The worker's reply to a benchmark, as decode_call_reply."""
    f, status = _reply(obj, "ok", ("raised", "input_error"))
    if status == "input_error":
        return _refused(f)
    return _raised(f) if status == "raised" else _bench_ok(f)


def _raised(f: Fields) -> Raised:
    return Raised(_raised_error(f.fields("error")), _cuda_or_none(f, "cuda"))


def _raised_error(e: Fields) -> RaisedError:
    cause = cuda = None
    if e.obj.get("cause") is not None:
        c = e.fields("cause")
        cause = Cause(c.text("kind"), c.text("message"))
    if e.obj.get("cuda") is not None:
        g = e.fields("cuda")
        cuda = CudaFault(g.integer("code"), g.flag("sticky"))
    return RaisedError(
        e.text("kind"), e.text("message"), e.text_or_none("backtrace") or "", cause, cuda
    )


def _cuda_or_none(f: Fields, key: str) -> Optional[CudaInfo]:
    if f.obj.get(key) is None:
        return None
    c = f.fields(key)
    return CudaInfo(
        c.text("device"),
        c.text("name"),
        c.text("compute_capability"),
        c.integer("driver_version"),
        c.text("driver"),
        c.text("stream"),
    )


def _out_file(obj: object) -> OutFile:
    f = Fields(obj, "reply.files[]")
    return OutFile(
        f.text("what"), f.text_or_none("path"), f.text_or_none("sha256"), f.text_or_none("error")
    )


def _call_ok(f: Fields) -> CallOk:
    return CallOk(
        resolved=f.text("resolved"),
        call_ns=f.count("call_ns"),
        result=decode_desc(f.obj.get("result")),
        args=tuple(decode_desc(a) for a in f.items("args")),
        notes=f.texts("notes") if f.has("notes") else (),
        cuda=_cuda_or_none(f, "cuda"),
        files=tuple(_out_file(x) for x in f.items("files")) if f.has("files") else None,
    )


def _stats(f: Fields) -> Stats:
    return Stats(f.number("min"), f.number("median"), f.number("max"))


def _bench_ok(f: Fields) -> BenchOk:
    gpu = None
    if f.has("host_ns_per_call"):
        cuda = _cuda_or_none(f, "cuda")
        if cuda is None:
            raise f.bad("cuda", "the CUDA device of a benchmark timed by CUDA events")
        bw = None if f.obj.get("bandwidth_gbps") is None else f.number("bandwidth_gbps")
        gpu = BenchGpu(_stats(f.fields("host_ns_per_call")), f.count("bytes_per_call"), bw, cuda)
    return BenchOk(
        resolved=f.text("resolved"),
        calls=f.count("calls"),
        timer=f.text("timer"),
        calls_per_round=f.count("calls_per_round"),
        rounds=f.count("rounds"),
        round_ns=f.integers("round_ns"),
        ns_per_call=_stats(f.fields("ns_per_call")),
        gpu=gpu,
    )

"""The public Python API of tvmffi (docs/python-api.md).

    import tvmffi_cli
    report = tvmffi_cli.inspect_library("libk.so")               # InspectReport
    result = tvmffi_cli.call_function("libk.so", "mul3", 2, 3, 7)  # CallResult, value 42
    checks = tvmffi_cli.conform_library("libk.so")               # ConformReport
    lib = tvmffi_cli.load("libk.so")                             # in this process, unsandboxed

call_function and conform_library are also tvmffi_cli.api.call and
tvmffi_cli.api.conform; the package itself cannot export them under those
names: tvmffi_cli.call and tvmffi_cli.conform are the engine packages, and
importing any of their modules rebinds those attributes.

inspect_library, call_function and conform_library run the library's code
only in child processes (the sandbox the CLI uses); load runs it in this
process. Results are frozen dataclasses whose to_json() returns the document
`tvmffi ... --json` prints. The engines build those documents; this module
only wraps them.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Union, cast

from .errors import InputError
from .ffi.coexist import RuntimeConflict, guard_official_import, official_runtime_loaded

if TYPE_CHECKING:
    import numpy as np

    from .call.describe import JsonDict
    from .call.messages import OutFile
    from .ffi.library import Library

__all__ = [
    "CallError",
    "CallResult",
    "CheckResult",
    "ConformReport",
    "FunctionInfo",
    "InspectReport",
    "Problem",
    "RuntimeConflict",
    "call",
    "call_function",
    "conform",
    "conform_library",
    "inspect_library",
    "load",
]

PathLike = Union[str, "os.PathLike[str]"]


def _frozen_map(d: Mapping[Any, Any] | None) -> Mapping[Any, Any]:
    return MappingProxyType(dict(d or {}))


# ---------------------------------------------------------------------------
# inspect


@dataclass(frozen=True)
class Problem:
    """Something malformed in the file: where (a symbol, "binary", "load"),
    message, and the byte offset when one is known."""

    where: str
    message: str
    offset: int | None = None


@dataclass(frozen=True)
class FunctionInfo:
    """One exported function (`__tvm_ffi_<name>`)."""

    name: str
    symbol: str
    signature: str | None
    doc: str | None
    metadata: Mapping[str, Any] | None
    has_metadata: bool
    has_doc: bool


@dataclass(frozen=True)
class InspectReport:
    """What `tvmffi inspect` reports about a library.

    mode is "static" (only the file was read) or "loaded" (it was also loaded
    in a child process: signatures, docs, globals and types are known).
    errors lists problems (the CLI exits 1 when there is one); ok is True
    when there is none."""

    path: str
    format: str
    arch: str
    bits: int
    kind: str
    soname: str | None
    needed: tuple[str, ...]
    mode: str
    functions: tuple[FunctionInfo, ...]
    globals: tuple[str, ...]
    types: tuple[str, ...]
    runtime_imports: tuple[str, ...]
    needs_runtime: bool
    errors: tuple[Problem, ...]
    warnings: tuple[str, ...]
    _doc: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the file was fully understood (CLI exit status 0)."""
        return not self.errors

    def function(self, name: str) -> FunctionInfo:
        """The exported function called `name` (KeyError if there is none)."""
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        """The document `tvmffi inspect --json` prints (schemas/inspect.schema.json)."""
        return copy.deepcopy(dict(self._doc))

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> InspectReport:
        """Wrap a report document built by the inspect engine."""
        funcs = tuple(
            FunctionInfo(
                name=f["name"],
                symbol=f["symbol"],
                signature=f.get("signature"),
                doc=f.get("doc"),
                metadata=_frozen_map(f["metadata"])
                if isinstance(f.get("metadata"), dict)
                else None,
                has_metadata=bool(f.get("has_metadata")),
                has_doc=bool(f.get("has_doc")),
            )
            for f in doc["functions"]
        )
        return cls(
            path=str(doc["path"]),
            format=doc["format"],
            arch=doc["arch"],
            bits=doc["bits"],
            kind=doc["kind"],
            soname=doc.get("soname"),
            needed=tuple(doc["needed"]),
            mode=doc["mode"],
            functions=funcs,
            globals=tuple(doc["globals"]),
            types=tuple(t.get("type_key", "") for t in doc["types"]),
            runtime_imports=tuple(doc["runtime_imports"]),
            needs_runtime=bool(doc["needs_runtime"]),
            errors=tuple(Problem(e["where"], e["message"], e.get("offset")) for e in doc["errors"]),
            warnings=tuple(doc["warnings"]),
            _doc=MappingProxyType(copy.deepcopy(dict(doc))),
        )


def inspect_library(
    path: PathLike, *, static: bool = False, timeout: float = 30.0, runtime: PathLike | None = None
) -> InspectReport:
    """What the library at `path` exports, embeds and imports (`tvmffi inspect`).

    static=True reads the file only and never runs any of its code; otherwise
    the library is also loaded in a sandboxed child process (killed after
    `timeout` seconds) with `runtime` (a libtvm_ffi.so; default tvmffi's).
    A failed load is reported in `errors`, not raised. Raises InputError or
    FormatError when the file cannot be read as a library."""
    from .inspect import engine

    t = _positive(timeout, "timeout")
    rt = None if runtime is None else os.fspath(runtime)
    return InspectReport.from_json(
        _machine_doc(
            engine.run(os.fspath(path), static=static, timeout=t, runtime=rt), ran=not static
        )
    )


# ---------------------------------------------------------------------------
# call


@dataclass(frozen=True)
class CallError:
    """Why a call failed: kind is the error kind the function raised
    ("ValueError", ...), or "Crash"/"Timeout" when it took the worker down."""

    kind: str
    message: str
    backtrace: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class CallResult:
    """The outcome of one call (`tvmffi call --json`).

    value: the result as a JSON-like Python value (int, float, str, list,
    dict, None...), or a NumPy array when the function returned a tensor.
    args: every argument after the call, as JSON-like values; tensors: the
    tensor arguments after the call (index -> NumPy array), which is where
    kernels write their output. error is set, and value is None, when the
    function raised, crashed or timed out."""

    library: str
    function: str
    resolved: str | None
    type: str | None
    value: Any
    args: tuple[Any, ...]
    tensors: Mapping[int, np.ndarray[Any, Any]]
    call_ns: int | None
    error: CallError | None
    _doc: Mapping[str, Any] = field(repr=False, compare=False)

    @property
    def ok(self) -> bool:
        """True when the function returned (CLI exit status 0)."""
        return self.error is None

    def to_json(self) -> dict[str, Any]:
        """The document `tvmffi call --json` prints (schemas/call.schema.json)."""
        return copy.deepcopy(dict(self._doc))


def call_function(
    path: PathLike,
    function: str,
    *args: Any,
    timeout: float = 60.0,
    runtime: PathLike | None = None,
    owned_tensors: bool = False,
    device: str | None = None,
) -> CallResult:
    """Call `function` of the library at `path` once, in a sandboxed child
    process, with `args` (`tvmffi call`); device="cuda[:N]" places every
    array argument on that CUDA device (copied back after; docs/gpu.md).

    function: an export (`__tvm_ffi_<function>`) or a global function the
    library registers (dotted names are always globals). args: None, bool,
    int, float, str, bytes, NumPy arrays (passed as DLTensor*, or as owned
    ffi.Tensor objects with owned_tensors=True), and lists/tuples and dicts of
    these (Array and Map). The arrays given are not modified: the results show
    the tensors after the call. A function that raises, crashes or runs longer
    than `timeout` seconds gives a CallResult with `error` set. Raises
    InputError when the function does not exist or the arguments cannot be
    passed to it."""
    from dataclasses import replace

    from .call import engine
    from .call.messages import ChildFailure, Raised

    with tempfile.TemporaryDirectory(prefix="tvmffi-call-") as tmp:
        from .call.pyargs import place_on, value_to_spec

        specs = [value_to_spec(a, tmp, f"argument {i}") for i, a in enumerate(args)]
        job = engine.make_request(
            path,
            function,
            place_on(specs, device),
            timeout=_positive(timeout, "timeout"),
            runtime=runtime,
            tensor_mode="object" if owned_tensors else "dltensor",
        )
        job = replace(job, request=replace(job.request, out=os.path.join(tmp, "out"), force=True))
        outcome = engine.run_call(job)
        lib = job.request.path
        runtime_doc = {"library": lib, "runtime": job.runtime.to_json()}
        if isinstance(outcome, ChildFailure):
            return _failed(lib, function, outcome.to_json(), runtime_doc)
        if isinstance(outcome, Raised):
            return _failed(lib, function, engine.raised_json(outcome), runtime_doc)
        # The staged outputs are gone with the worker; read the published copies.
        arrays = _read_outputs(outcome.files or ())
        doc = _machine_doc(
            {
                **engine.call_json(replace(outcome, files=None), function, lib),
                "runtime": job.runtime.to_json(),
            }
        )
    value = arrays.pop("result", doc["result"])
    tensors = {int(k[3:]): v for k, v in arrays.items() if k.startswith("arg")}
    return CallResult(
        library=lib,
        function=function,
        resolved=doc["resolved"],
        type=doc["type"],
        value=value,
        args=tuple(a["value"] for a in doc["args"]),
        tensors=MappingProxyType(tensors),
        call_ns=doc["call_ns"],
        error=None,
        _doc=MappingProxyType(doc),
    )


def _machine_doc(
    doc: Mapping[str, Any], ran: bool = True, started: float | None = None
) -> dict[str, Any]:
    """The document as the CLI's --json prints it: library text made valid
    JSON text, and the keys every command has (cli/jsonout.py): `library`,
    `runtime`, `sandbox` (what confined the worker), `elapsed_s`, `errors`."""
    import time

    from . import text
    from .sandbox import process

    d = dict(text.json_clean(dict(doc)), sandbox=process.sandbox_field(ran))
    d.setdefault("library", d.get("path"))
    d.setdefault("runtime", None)
    d.setdefault("elapsed_s", round(time.perf_counter() - (started or _STARTED), 3))
    if not isinstance(d.get("errors"), list):
        d["errors"] = [d["error"]] if isinstance(d.get("error"), dict) else []
    return d


#: elapsed_s of a document built without a start time counts from here.
_STARTED = __import__("time").perf_counter()


def _failed(lib: str, function: str, doc: JsonDict, runtime: Mapping[str, object]) -> CallResult:
    """The CallResult of a call that raised or failed: doc is its --json
    document ({"error": {...}}), runtime the keys every document adds."""
    e = doc["error"]
    assert isinstance(e, dict)  # the engine's error documents
    extra = {k: v for k, v in e.items() if k not in ("kind", "message", "backtrace")}
    bt = e.get("backtrace")
    err = CallError(
        str(e["kind"]),
        str(e["message"]),
        bt if isinstance(bt, str) else None,
        MappingProxyType(extra),
    )
    return CallResult(
        library=lib,
        function=function,
        resolved=None,
        type=None,
        value=None,
        args=(),
        tensors=MappingProxyType({}),
        call_ns=None,
        error=err,
        _doc=MappingProxyType(_machine_doc({**doc, **runtime})),
    )


def _read_outputs(files: Sequence[OutFile]) -> dict[str, np.ndarray[Any, Any]]:
    """The --out files as arrays, by what they hold (arg<i>, result)."""
    import numpy as np

    return {f.what: np.load(f.path, allow_pickle=False) for f in files if f.path}


def _positive(v: float, name: str) -> float:
    from .call.engine import parse_timeout

    return parse_timeout(v, flag=name)


# ---------------------------------------------------------------------------
# conform


@dataclass(frozen=True)
class CheckResult:
    """One check on the library (function None) or on one of its functions.
    status: "pass", "fail", "skip" or "error"; severity: "error" or "warning";
    reproduce: a command that repeats a crash or hang, when there is one."""

    check: str
    function: str | None
    status: str
    message: str
    severity: str
    title: str
    details: Any = None
    reproduce: str | None = None


@dataclass(frozen=True)
class ConformReport:
    """The outcome of `tvmffi conform`: passed is False when an error-severity
    check failed (CLI exit status 1)."""

    library: str
    passed: bool
    summary: Mapping[str, int]
    summary_line: str
    functions: tuple[str, ...]
    globals: tuple[str, ...]
    results: tuple[CheckResult, ...]
    min_runtime_version: str | None
    elapsed_s: float | None
    _doc: Mapping[str, Any] = field(repr=False, compare=False)

    def failures(self) -> tuple[CheckResult, ...]:
        """The results that failed or could not be evaluated."""
        return tuple(r for r in self.results if r.status in ("fail", "error"))

    def to_json(self) -> dict[str, Any]:
        """The document `tvmffi conform --json` prints (schemas/conform.schema.json)."""
        return copy.deepcopy(dict(self._doc))


def conform_library(
    path: PathLike,
    *,
    select: Sequence[str] | None = None,
    ignore: Sequence[str] | None = None,
    timeout: float = 10.0,
    jobs: int | None = None,
    threads: int | None = None,
    functions: Sequence[str] | None = None,
    strict: bool = False,
    runtime: PathLike | None = None,
) -> ConformReport:
    """Check the library at `path` against the TVM-FFI ABI rules (`tvmffi
    conform`; the checks are listed in docs/checks.md). select/ignore: check
    ids to run or skip; timeout: seconds each probe call may take; jobs:
    probing worker processes (default: number of CPUs); threads: call each
    function from this many threads at once (thread-safety is then an
    error); functions: probe only these; strict: warnings fail the run too;
    runtime: the libtvm_ffi.so hosting the library in the workers (default
    tvmffi's). Library code runs only in those workers. Unlike the CLI, no
    [tool.tvmffi.conform] configuration is read: pass options explicitly."""
    from .conform import registry as _registry
    from .conform import runner as _runner

    registry, runner = cast(Any, _registry), cast(Any, _runner)

    t = _positive(timeout, "timeout")
    if jobs is not None and jobs < 1:
        raise InputError("jobs must be at least 1")
    if threads is not None and not 2 <= threads <= 256:
        raise InputError("threads must be between 2 and 256")
    p = os.fspath(path)
    if os.path.isdir(p):
        raise InputError(f"{p}: is a directory")
    rt = None
    if runtime is not None:
        rt = os.path.abspath(os.fspath(runtime))
        if not os.path.isfile(rt):
            raise InputError(f"runtime {os.fspath(runtime)}: no such file")
    sel = frozenset(registry.parse_ids(list(select))) if select else frozenset()
    ign = frozenset(registry.parse_ids(list(ignore))) if ignore else frozenset()
    opts = runner.Options(sel, ign, t, jobs, threads, None, rt, frozenset(functions or ()), strict)
    doc = runner.run(p, options=opts).to_json()
    doc["errors"] = [
        {"check": r["check"], "function": r.get("function"), "message": r.get("message")}
        for r in doc["results"]
        if r.get("status") == "error"
    ]
    from .ffi.hosts import choose_runtime

    doc["runtime"] = choose_runtime(rt, p).to_json()
    doc = _machine_doc(doc)
    results = tuple(
        CheckResult(
            r["check"],
            r["function"],
            r["status"],
            r["message"],
            r["severity"],
            r["title"],
            r.get("details"),
            r.get("reproduce"),
        )
        for r in doc["results"]
    )
    return ConformReport(
        library=doc["library"],
        passed=doc["passed"],
        summary=_frozen_map(doc["summary"]),
        summary_line=str(doc.get("summary_line", "")),
        functions=tuple(doc["functions"]),
        globals=tuple(doc.get("globals", ())),
        results=results,
        min_runtime_version=doc.get("min_runtime_version"),
        elapsed_s=doc.get("elapsed_s"),
        _doc=MappingProxyType(doc),
    )


# ---------------------------------------------------------------------------
# load (in this process) and the official tvm_ffi package


def load(
    path: PathLike, *, runtime: PathLike | None = None, tensor_mode: str | None = None
) -> Library:
    """Load the library at `path` into THIS process and return it: its
    functions are then plain Python callables (`lib.add_one(x)`).

    Unlike inspect_library/call/conform this runs the library's code in the
    calling process without any sandbox: a crash takes the process down. Use
    it only for libraries you trust.

    runtime: the libtvm_ffi.so to host it; default tvmffi's, or the official
    tvm_ffi package's when `tvm_ffi` is already imported. After load() has
    put tvmffi's runtime in the process, `import tvm_ffi` raises
    RuntimeConflict (an ImportError would be an abort otherwise); asking for a
    runtime other than the one already in the process raises RuntimeConflict.
    tensor_mode: "dltensor" (default) or "object": how NumPy arrays are passed."""
    from .ffi import library as _library
    from .ffi import runtime as _ffi_runtime

    ffi_runtime, _load = cast(Any, _ffi_runtime), cast(Any, _library).load

    official = official_runtime_loaded()
    rt = None if runtime is None else os.path.realpath(os.fspath(runtime))
    if official is not None:
        if rt is not None and rt != official:
            raise RuntimeConflict(
                f"the official tvm_ffi package is imported in this process; its runtime "
                f"{official} is the only one load() can use here (got runtime={rt})"
            )
        rt = official
    try:
        lib = _load(os.fspath(path), runtime=rt, tensor_mode=tensor_mode)
    except InputError as e:
        if "already loaded in this process" in str(e):
            raise RuntimeConflict(str(e)) from None
        raise
    loaded = ffi_runtime.loaded_runtime()
    if official is None and loaded is not None and loaded.is_ours:
        guard_official_import()
    return cast("Library", lib)


#: Short names, for `from tvmffi_cli.api import call, conform`.
call = call_function
conform = conform_library

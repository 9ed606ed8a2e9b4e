"""`tvmffi call LIB FUNC ARGS --runtime A --runtime B ...`: the same call once
per runtime, each in its own worker, and one result with a column per runtime.

Every runtime is resolved before any call (a bad path, an unknown release or
an offline fetch is exit 2 first). A run that the runtime cannot take (an
input error of that run alone, e.g. a value an older runtime lacks a C
function for) is that column's failure; when every run is refused that way,
the matrix is the same exit 2 a single run gives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Sequence

from ..errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, InputError
from ..text import JsonDict
from . import engine
from .messages import CallOk, ChildFailure, Raised
from .specs import ArgSpec

if TYPE_CHECKING:
    from ..ffi.hosts import RuntimeChoice

OK, RAISED, INPUT_ERROR = "ok", "raised", "input_error"


@dataclass(frozen=True)
class CallRun:
    """One column: the runtime, how the call ended and its --json document
    (that of a single run; None for an input error, then `message` says why)."""

    label: str
    runtime: RuntimeChoice
    status: str  # ok | raised | Crash | Timeout | input_error
    reply: Optional[CallOk]
    document: Optional[JsonDict]
    message: str = ""

    @property
    def exit_code(self) -> int:
        if self.status == OK:
            return EXIT_OK
        return EXIT_USAGE if self.status == INPUT_ERROR else EXIT_FAILED

    def to_json(self) -> JsonDict:
        return {
            "label": self.label,
            "runtime": self.runtime.to_json(),
            "status": self.status,
            "exit_code": self.exit_code,
            "document": self.document,
            "message": self.message,
        }


@dataclass(frozen=True)
class CallMatrix:
    library: str
    function: str
    runs: tuple[CallRun, ...]

    def exit_code(self) -> int:
        codes = [r.exit_code for r in self.runs]
        if all(c == EXIT_USAGE for c in codes):
            return EXIT_USAGE
        return EXIT_OK if all(c == EXIT_OK for c in codes) else EXIT_FAILED

    def to_json(self) -> JsonDict:
        return {
            "library": self.library,
            "function": self.function,
            "passed": self.exit_code() == EXIT_OK,
            "runs": [r.to_json() for r in self.runs],
        }


def run_matrix(
    lib: str,
    func: str,
    args: Sequence[ArgSpec],
    runtimes: list[str],
    *,
    timeout: float,
    tensor_mode: str,
) -> CallMatrix:
    """Call `func` once per --runtime value (task call.task)."""
    jobs = [
        engine.make_request(lib, func, args, timeout=timeout, runtime=v, tensor_mode=tensor_mode)
        for v in runtimes
    ]
    runs = []
    for job in jobs:
        choice = job.runtime
        label = choice.label()
        try:
            outcome = engine.run_call(job)
        except InputError as e:
            runs.append(CallRun(label, choice, INPUT_ERROR, None, None, str(e)))
            continue
        runtime = {"runtime": choice.to_json()}
        doc: JsonDict
        if isinstance(outcome, ChildFailure):
            doc = {**outcome.to_json(), **runtime}
            runs.append(CallRun(label, choice, outcome.kind, None, doc, outcome.message))
        elif isinstance(outcome, Raised):
            doc = {**engine.raised_json(outcome), **runtime}
            err = outcome.error
            runs.append(CallRun(label, choice, RAISED, None, doc, f"{err.kind}: {err.message}"))
        else:
            doc = {**engine.call_json(outcome, func, job.request.path), **runtime}
            runs.append(CallRun(label, choice, OK, outcome, doc))
    return CallMatrix(jobs[0].request.path, func, tuple(runs))

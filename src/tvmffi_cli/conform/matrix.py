"""`tvmffi conform LIB --runtime A --runtime B ...`: one run per runtime, one
report with a column per runtime (a compatibility matrix in one command).

Every runtime is resolved first (a bad path, an unknown release or an
offline fetch is exit 2 before anything runs); then the checks run once per
runtime, each exactly as a single `--runtime X` run would. The matrix fails
(exit 1) when any run fails.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from ..ffi.hosts import RuntimeChoice, choose_runtime
from ..text import JsonDict
from .results import ERROR, FAIL, PASS, Report
from .runner import Options, Progress, run


@dataclass(frozen=True)
class RuntimeRun:
    """One column: the runtime and the report of the run on it."""

    choice: RuntimeChoice
    report: Report

    def to_json(self) -> JsonDict:
        return {
            "label": self.choice.label(),
            "runtime": self.choice.to_json(),
            "passed": self.report.passed,
            "report": self.report.to_json(),
        }


@dataclass(frozen=True)
class Matrix:
    library: str
    runs: tuple[RuntimeRun, ...]

    @property
    def passed(self) -> bool:
        return all(r.report.passed for r in self.runs)

    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def columns(self) -> list[str]:
        return [r.choice.label() for r in self.runs]

    def rows(self) -> list[tuple[str, list[str]]]:
        """(check id, one cell per runtime): "pass N", "FAIL k/N" (blocking),
        "warn k/N" (findings that do not fail the run) or "skip"."""
        ids: list[str] = []
        for run_ in self.runs:
            for r in run_.report.results:
                if r.check not in ids:
                    ids.append(r.check)
        out = []
        for check in ids:
            cells = []
            for run_ in self.runs:
                rs = [r for r in run_.report.results if r.check == check]
                ran = [r for r in rs if r.status in (PASS, FAIL, ERROR)]
                bad = [r for r in ran if r.bad and r.suppressed is None]
                if any(r.blocking for r in bad):
                    cells.append(f"FAIL {len(bad)}/{len(ran)}")
                elif bad:
                    cells.append(f"warn {len(bad)}/{len(ran)}")
                elif ran:
                    cells.append(f"pass {len(ran)}")
                else:
                    cells.append("skip" if rs else "-")
            out.append((check, cells))
        return out

    def to_json(self) -> JsonDict:
        return {
            "library": self.library,
            "passed": self.passed,
            "runtimes": [r.to_json() for r in self.runs],
        }


def run_matrix(
    library: str,
    runtimes: list[str],
    options: Options,
    progress: Progress | None = None,
) -> Matrix:
    """Run the checks of `options` once per --runtime value."""
    lib = library if os.path.isfile(library) else None
    choices = [choose_runtime(v, lib) for v in runtimes]  # exit 2 before any run
    runs = []
    for value, choice in zip(runtimes, choices):
        o = replace(
            options,
            runtime=None if choice.kind == "builtin" else choice.path,
            runtime_arg=value,
        )
        runs.append(RuntimeRun(choice, run(library, progress=progress, options=o)))
    return Matrix(os.path.abspath(library), tuple(runs))

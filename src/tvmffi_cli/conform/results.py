"""The outcome of a conformance run: a flat list of results and what it means."""

from __future__ import annotations

from dataclasses import dataclass, field

from .. import text
from ..text import JsonDict
from . import registry

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
ERROR = "error"  # the check could not be evaluated (a problem of the tool or setup)
STATUSES = (PASS, FAIL, SKIP, ERROR)


@dataclass(frozen=True)
class Result:
    check: str
    function: str | None  # None for library-level results
    status: str
    message: str = ""
    #: check-specific facts, the --json `details` object (JSON of each
    #: check's own shape: the schema says only "object")
    details: JsonDict | None = None
    #: a command that shows this failure again and exits 1
    reproduce: str | None = None
    #: why a configuration suppressed this finding (it then never blocks)
    suppressed: str | None = None
    #: the severity for this run when it differs from the registry's
    #: (thread-safety is an error only with --threads)
    severity_override: str | None = None
    #: the library's own output before the failure (stderr tail, bounded and
    #: sanitized): `terminate called after throwing ... what(): ...`
    output: str | None = None
    #: how to fix this finding when the check's general fix line does not
    #: match its cause (a CUDA tensor read as host memory, byte_offset ignored)
    hint: str | None = None

    def __post_init__(self) -> None:
        assert self.check in registry.BY_ID, self.check
        assert self.status in STATUSES, self.status

    @property
    def severity(self) -> str:
        return self.severity_override or registry.BY_ID[self.check].severity

    @property
    def title(self) -> str:
        return registry.BY_ID[self.check].title

    @property
    def fix(self) -> str:
        """How to fix this finding, in one line (docs/checks.md has more)."""
        return self.hint or registry.BY_ID[self.check].fix

    @property
    def bad(self) -> bool:
        """A finding (failed, or could not be evaluated)."""
        return self.status in (FAIL, ERROR)

    @property
    def blocking(self) -> bool:
        """True when this result makes the run fail (exit 1)."""
        return self.severity == registry.ERROR and self.bad and self.suppressed is None

    def to_json(self) -> JsonDict:
        d: JsonDict = {
            "check": self.check,
            "function": self.function,
            "status": self.status,
            "message": self.message,
            "severity": self.severity,
            "title": self.title,
        }
        if self.details:
            d["details"] = self.details
        if self.reproduce:
            d["reproduce"] = self.reproduce
        if self.bad:
            d["fix"] = self.fix
        if self.output:
            d["output"] = self.output
        if self.suppressed is not None:
            d["suppressed"] = self.suppressed
        return d


@dataclass(frozen=True)
class Report:
    path: str
    results: list[Result]
    functions: list[str]  # names of the exported functions found, in order
    elapsed: float | None = None
    jobs: int = 1
    globals: list[str] = field(default_factory=list)  # globals registered while loading
    min_runtime: str | None = None  # the oldest runtime the imports need
    max_runtime: str | None = None  # the newest runtime providing them (None: newest known)
    #: why no function could be exercised (every valid call raised): the
    #: library is then never PASSED (conform/exercise.py); None when some was
    not_exercised: str | None = None
    #: CUDA kernels that never ran (no device): shown as "not run", never "ok"
    not_run: list[str] = field(default_factory=list)
    #: Why probed functions shared a process (None: each started in a fresh
    #: probe child, from the state the load left).
    shared_process: str | None = None

    @property
    def passed(self) -> bool:
        return not any(r.blocking for r in self.results) and self.not_exercised is None

    @property
    def verdict(self) -> str:
        """ "passed", "failed" (a blocking finding), or "not exercised"
        (nothing failed, but no function ran: tvmffi cannot judge it)."""
        if any(r.blocking for r in self.results):
            return "failed"
        return "passed" if self.not_exercised is None else "not exercised"

    def counts(self) -> dict[str, int]:
        """Results by status, and the findings by weight: `blocking` ones fail
        the run, `warning` ones do not (suppressed ones are neither)."""
        c = {s: 0 for s in STATUSES}
        for r in self.results:
            c[r.status] += 1
        bad = self.failures()
        c["blocking"] = sum(r.blocking for r in bad)
        c["warning"] = len(bad) - c["blocking"]
        return c

    def checked(self) -> int:
        """Functions the results speak of: exports, globals registered at
        load, and any other symbol a finding names (an orphan getter's)."""
        names = set(self.functions) | set(self.globals)
        names.update(r.function for r in self.results if r.function is not None)
        return len(names)

    def failures(self) -> list[Result]:
        """Findings that were not suppressed."""
        return [r for r in self.results if r.bad and r.suppressed is None]

    def summary_line(self) -> str:
        """One plain line for a CI log."""
        from pathlib import Path

        bad = self.failures()
        errors = sum(r.blocking for r in bad)
        warnings = len(bad) - errors
        fns = {r.function for r in bad if r.function is not None}
        sup = sum(r.suppressed is not None for r in self.results)
        n_fn = self.checked()
        verdict = self.verdict.upper()
        line = (
            f"tvmffi conform {verdict} {Path(self.path).name}: {errors} error(s), "
            f"{warnings} warning(s)"
        )
        if fns:
            line += f" in {len(fns)} of {n_fn} function(s)"
        else:
            line += f" over {n_fn} function(s)"
        if sup:
            line += f", {sup} suppressed"
        if self.elapsed is not None:
            line += f" ({self.elapsed:.2f} s, -j {self.jobs})"
        if self.verdict == "not exercised":
            line += f"; {self.not_exercised}"
        elif self.not_run:
            line += f"; {len(self.not_run)} function(s) not run (no CUDA device)"
        return line

    def to_json(self) -> JsonDict:
        d: JsonDict = {
            "library": self.path,
            "passed": self.passed,
            "summary": dict(self.counts()),
            "functions": list(self.functions),
            "globals": list(self.globals),
            "results": [r.to_json() for r in self.results],
            "summary_line": self.summary_line(),
            "verdict": self.verdict,
            "isolation": {
                "per_function": self.shared_process is None,
                "reason": self.shared_process,
            },
        }
        if self.not_exercised is not None:
            d["not_exercised"] = self.not_exercised
        if self.not_run:
            d["not_run"] = list(self.not_run)
        if self.min_runtime is not None:
            d["min_runtime_version"] = self.min_runtime
            d["max_runtime_version"] = self.max_runtime
        if self.elapsed is not None:
            d["elapsed_s"] = round(self.elapsed, 3)
        return d

    def exit_code(self) -> int:
        """0 passed, 1 failed, 2 not exercised (tvmffi cannot judge the library)."""
        return {"passed": 0, "failed": 1}.get(self.verdict, 2)


#: GitHub shows at most this many annotations of one level per step.
GH_SHOWN = 10


def github_annotations(report: Report) -> list[str]:
    """Workflow-command lines (::error / ::warning), one per check that found
    something, with `file=` the library; blocking findings first, then by the
    number of functions affected, so the first ten carry the most severe."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in report.failures():
        groups.setdefault((r.check, r.severity), []).append(r)

    def rank(item: tuple[tuple[str, str], list[Result]]) -> tuple[int, int, str]:
        (check, _sev), rs = item
        return (0 if any(r.blocking for r in rs) else 1, -len(rs), check)

    lines = []
    for (check, sev), rs in sorted(groups.items(), key=rank):
        level = "error" if any(r.blocking for r in rs) else "warning"
        where = [r.function if r.function is not None else "(library)" for r in rs]
        shown = ", ".join(where[:5]) + (f" (+{len(where) - 5} more)" if len(where) > 5 else "")
        title = _gh_escape_prop(f"tvmffi conform {check} ({sev}): {shown}")
        first = rs[0]
        text = f"{first.title}. {where[0]}: {first.message or first.title}"
        if first.reproduce:
            text += f"\nreproduce: {first.reproduce}"
        if len(rs) > 1:
            text += f"\n{len(rs) - 1} more function(s): " + ", ".join(where[1:20])
        lines.append(
            f"::{level} file={_gh_escape_prop(report.path)},title={title}::{_gh_escape_data(text)}"
        )
    return lines


def _gh_escape_data(s: str) -> str:
    # Library text: escape sequences and other controls visible; newlines
    # become %0A, so a finding is one line of the log.
    s = text.terminal(s)
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s: str) -> str:
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")

"""The outcome of a conformance run: a flat list of results and what it means."""

from . import registry

PASS = "pass"
FAIL = "fail"
SKIP = "skip"
ERROR = "error"  # the check could not be evaluated (a problem of the tool or setup)
STATUSES = (PASS, FAIL, SKIP, ERROR)


class Result:
    __slots__ = ("check", "function", "status", "message", "details")

    def __init__(self, check, function, status, message="", details=None):
        assert check in registry.BY_ID, check
        assert status in STATUSES, status
        self.check = check
        self.function = function  # None for library-level results
        self.status = status
        self.message = message
        self.details = details

    @property
    def severity(self):
        return registry.BY_ID[self.check].severity

    @property
    def title(self):
        return registry.BY_ID[self.check].title

    @property
    def blocking(self):
        """True when this result makes the run fail (exit 1)."""
        return self.severity == registry.ERROR and self.status in (FAIL, ERROR)

    def to_json(self):
        d = {"check": self.check, "function": self.function, "status": self.status,
             "message": self.message, "severity": self.severity, "title": self.title}
        if self.details:
            d["details"] = self.details
        return d

    def __repr__(self):
        return f"Result({self.check}, {self.function}, {self.status}, {self.message!r})"


class Report:
    def __init__(self, path, results, functions, elapsed=None, jobs=1):
        self.path = str(path)
        self.results = results
        self.functions = functions  # names of the functions found, in order
        self.elapsed = elapsed
        self.jobs = jobs

    @property
    def passed(self):
        return not any(r.blocking for r in self.results)

    def counts(self):
        c = {s: 0 for s in STATUSES}
        for r in self.results:
            c[r.status] += 1
        return c

    def failures(self):
        return [r for r in self.results if r.status in (FAIL, ERROR)]

    def to_json(self):
        d = {"library": self.path, "passed": self.passed, "summary": self.counts(),
             "functions": list(self.functions), "results": [r.to_json() for r in self.results]}
        if self.elapsed is not None:
            d["elapsed_s"] = round(self.elapsed, 3)
        return d

    def exit_code(self):
        return 0 if self.passed else 1


def github_annotations(report):
    """Workflow-command lines (::error / ::warning) for failed checks."""
    lines = []
    for r in report.failures():
        level = "error" if r.severity == registry.ERROR else "warning"
        where = r.function if r.function is not None else "(library)"
        title = _gh_escape_prop(f"tvmffi conform {r.check}: {where}")
        lines.append(f"::{level} title={title}::{_gh_escape_data(r.message or r.title)}")
    return lines


def _gh_escape_data(s):
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_escape_prop(s):
    return _gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")

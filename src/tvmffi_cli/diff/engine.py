"""`tvmffi diff OLD NEW`: is NEW a drop-in replacement for OLD?

Both libraries are described by the inspect engine (static facts from the
file; types, globals and metadata from the loaded view unless `static`) and
turned into the API model (inspect.api.Api). Every difference is a `Change`
with a stable `kind` id (kinds.KINDS) and a verdict: compatible (a caller of
OLD keeps working with NEW) or not. Removing or retyping anything a caller
can use is incompatible; additions are compatible; NEW must run on every
official release OLD runs on: NEW is loaded on each release of OLD's range by
symbols, and OLD where NEW fails (inspect/ranges.py cover), runtimes not at
hand fetched.

The result fails closed: when a side could not be loaded, what only loading
shows was not compared; when a release of OLD's range could not be loaded on
(its runtime could not be fetched), the range was not either; with no break
seen the verdict is then "cannot judge" (exit 2), never "compatible".
--static and --symbols-range state what they leave out instead (`promise`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..abi.versions import releases_text
from ..inspect.api import Api, Func
from ..inspect.ranges import Coverage
from . import compare as cmp
from .kinds import (
    KINDS,
    LOADED_ONLY,
    NOTES,
    RANGE_GAP,
    STATIC_PROMISE,
    SYMBOLS_PROMISE,
    Change,
    DiffResult,
)

__all__ = [
    "KINDS",
    "NOTES",
    "Change",
    "DiffResult",
    "Suppression",
    "compare",
    "parse_suppressions",
    "run",
    "suppress",
]


def _static_view(api: Api) -> Api:
    return replace(
        api, mode="static", globals=(), types=(), exports=tuple(Func(f.name) for f in api.exports)
    )


def _why_static(side: str, api: Api) -> str:
    if api.load_error:
        return f"{side} ({api.path}) could not be loaded: {api.load_error}"
    return f"{side} ({api.path}) was not loaded (it cannot be on this host)"


def compare(
    old: Api,
    new: Api,
    static_requested: bool = False,
    symbols_range: bool = False,
    coverage: Coverage | None = None,
    range_gap: str = "not checked by loading",
) -> DiffResult:
    """All changes from OLD to NEW (pure: no files, no processes).
    `static_requested`: the user asked for a static comparison (--static), so
    a static side is the promise, not a gap. `symbols_range`: the runtime
    ranges by symbols by request (--symbols-range). Else the runtime range is
    judged on `coverage` (inspect/ranges.py cover); without it, by symbols,
    and `range_gap` says why in not_compared."""
    warnings: list[str] = []
    not_compared: list[str] = []
    promise = STATIC_PROMISE if static_requested else SYMBOLS_PROMISE if symbols_range else None
    if not static_requested:
        for side, api in (("OLD", old), ("NEW", new)):
            if api.mode != "loaded":
                not_compared.append(
                    f"{_why_static(side, api)}; its {LOADED_ONLY} were not compared"
                )
    if promise is None:
        not_compared += _range_gaps(coverage, range_gap)
    else:
        coverage = None
    if old.mode != new.mode:
        # One side could not be loaded: compare what both have, the static facts.
        old, new = _static_view(old), _static_view(new)
        warnings.append("one library was read statically only; comparing static facts")
    acc = cmp.Acc()
    cmp.funcs(acc, "export", old.exports, new.exports)
    cmp.funcs(acc, "global", old.globals, new.globals)
    cmp.types(acc, old.types, new.types)
    cmp.modules(acc, old.modules, new.modules)
    cmp.cubins(acc, old, new)
    cmp.runtime(acc, old, new)
    ranges = cmp.releases(acc, old, new, coverage)
    mode = "loaded" if old.mode == new.mode == "loaded" else "static"
    for side, api in (("OLD", old), ("NEW", new)):
        warnings += [f"{side}: {p}" for p in api.problems]
    return DiffResult(
        old.path,
        new.path,
        mode,
        tuple(acc.changes),
        tuple(warnings),
        tuple(not_compared),
        promise,
        ranges,
        (old.runtime, new.runtime),
        coverage,
    )


def _range_gaps(coverage: Coverage | None, range_gap: str) -> list[str]:
    """not_compared lines for a runtime range not (wholly) checked by loading."""
    if coverage is None:
        return [f"{RANGE_GAP}compared by symbols only ({range_gap})"]
    unchecked = [c for c in coverage.rows if c.verdict == "unchecked"]
    if not unchecked:
        return []
    first = unchecked[0]
    return [
        f"{RANGE_GAP}NEW was not judged on {releases_text(c.release for c in unchecked)} "
        f"of OLD's range ({first.release}: {first.why}); it may not run there"
    ]


@dataclass(frozen=True)
class Suppression:
    """One accepted change: a kind pattern and an optional subject pattern
    (shell-style globs, e.g. `export.removed export legacy*`)."""

    kind: str
    subject: str = "*"

    def matches(self, c: Change) -> bool:
        from fnmatch import fnmatchcase

        return fnmatchcase(c.kind, self.kind) and fnmatchcase(c.subject, self.subject)


def parse_suppressions(text: str, where: str = "suppress file") -> tuple[Suppression, ...]:
    """Lines `KIND [SUBJECT]` (globs); blank lines and lines starting with `#`
    are skipped.
    InputError when a kind pattern matches no known kind (a typo)."""
    from fnmatch import fnmatchcase

    from ..errors import InputError

    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):  # subjects may hold '#': no inline comments
            continue
        kind, _, subject = line.partition(" ")
        if not any(fnmatchcase(k, kind) for k in KINDS):
            raise InputError(f"{where}:{n}: {kind!r} matches no change kind")
        out.append(Suppression(kind, subject.strip() or "*"))
    return tuple(out)


def suppress(result: DiffResult, rules: Iterable[Suppression]) -> DiffResult:
    rules = tuple(rules)
    changes = tuple(
        replace(c, suppressed=True) if any(r.matches(c) for r in rules) else c
        for c in result.changes
    )
    return replace(result, changes=changes)


def run(
    old_path: str,
    new_path: str,
    static: bool = False,
    timeout: float = 30.0,
    runtime: str | None = None,
    symbols_range: bool = False,
) -> DiffResult:
    """Describe both libraries (the inspect engine), check NEW's runtime range
    by loading (check_range) unless static or symbols_range, and compare.
    Problems reading either file raise InputError/FormatError (exit 2); a
    library that fails to load leaves its side static, and the result says
    what was not compared (exit 2 unless a break was seen)."""
    from ..inspect.api import load_api

    old, rep_old = load_api(old_path, static=static, timeout=timeout, runtime=runtime)
    new, rep_new = load_api(new_path, static=static, timeout=timeout, runtime=runtime)
    coverage, gap = None, ""
    if not (static or symbols_range):
        coverage, gap = check_range(old_path, new_path, (old, rep_old), (new, rep_new), timeout)
    result = compare(old, new, static, symbols_range, coverage, gap)
    extra = []
    for side, api, rep in (("OLD", old, rep_old), ("NEW", new, rep_new)):
        # the load failure itself is in not_compared
        extra += [f"{side}: {e['message']}" for e in _errors(rep) if e["message"] != api.load_error]
        extra += [f"{side}: {w}" for w in rep.get("warnings") or () if "static results" in w]
    if extra:
        result = replace(result, warnings=result.warnings + tuple(extra))
    return result


Side = tuple[Api, Mapping[str, Any]]


def check_range(
    old_path: str, new_path: str, old: Side, new: Side, timeout: float
) -> tuple[Coverage | None, str]:
    """NEW loaded on each release of OLD's symbol range, OLD where NEW fails
    (inspect/ranges.py cover), reusing what auto's loads showed; (None, why)
    when nothing can be loaded here."""
    from ..inspect import ranges

    for side, (api, _rep) in (("OLD", old), ("NEW", new)):
        if api.mode != "loaded" and api.load_error is None:
            return None, f"{side} cannot be loaded on this host"
    old_range = tuple(str(r) for r in old[1].get("runtime_releases") or ())
    new_range = tuple(str(r) for r in new[1].get("runtime_releases") or ())
    if _same_file(old_path, new_path):
        return ranges.Coverage((), 0, same_file=True), ""
    known = {**_known(ranges.OLD, old[0]), **_known(ranges.NEW, new[0])}
    return ranges.cover(old_path, new_path, old_range, new_range, known, timeout), ""


def _known(side: str, api: Api) -> dict[tuple[str, str], Any]:
    """What auto's loads showed: the releases it failed on, the one that hosted it."""
    from ..inspect.ranges import FAILS, LOADS, ReleaseLoad

    out = {(side, r): ReleaseLoad(r, FAILS, why) for r, why in api.range_failures}
    release = (api.runtime or {}).get("release")
    if api.mode == "loaded" and release:
        out[(side, str(release))] = ReleaseLoad(str(release), LOADS)
    return out


def _same_file(a: str, b: str) -> bool:
    """The same bytes (a library diffed against itself, or a copy of it)."""
    import filecmp

    try:
        return filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def _errors(rep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    errs = rep.get("errors") or []
    return [e for e in errs if isinstance(e, Mapping) and "message" in e]

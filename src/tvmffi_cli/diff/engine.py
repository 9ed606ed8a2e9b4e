"""`tvmffi diff OLD NEW`: is NEW a drop-in replacement for OLD?

Both libraries are described by the inspect engine (static facts from the
file; types, globals and metadata from the loaded view unless `static`) and
turned into the API model (inspect.api.Api). Every difference is a `Change`
with a stable `kind` id (kinds.KINDS) and a verdict: compatible (a caller of
OLD keeps working with NEW) or not. Removing or retyping anything a caller
can use is incompatible; additions are compatible; NEW must run on every
official release OLD runs on.

The result fails closed: when a side could not be loaded, what only loading
shows was not compared, and with no break seen the verdict is "cannot judge"
(exit 2), never "compatible".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..inspect.api import Api, Func
from . import compare as cmp
from .kinds import KINDS, LOADED_ONLY, NOTES, STATIC_PROMISE, Change, DiffResult, SideRange

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


def compare(old: Api, new: Api, static_requested: bool = False) -> DiffResult:
    """All changes from OLD to NEW (pure: no files, no processes).
    `static_requested`: the user asked for a static comparison (--static), so
    a static side is the promise, not a gap."""
    warnings: list[str] = []
    not_compared: list[str] = []
    promise = STATIC_PROMISE if static_requested else None
    if not static_requested:
        for side, api in (("OLD", old), ("NEW", new)):
            if api.mode != "loaded":
                not_compared.append(
                    f"{_why_static(side, api)}; its {LOADED_ONLY} were not compared"
                )
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
    cmp.releases(acc, old, new)
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
        (
            SideRange(old.runtime_releases, old.range_basis),
            SideRange(new.runtime_releases, new.range_basis),
        ),
        (old.runtime, new.runtime),
    )


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
    verify_range: bool = False,
) -> DiffResult:
    """Describe both libraries (the inspect engine) and compare them. Problems
    reading either file raise InputError/FormatError (exit 2); a library that
    fails to load leaves its side static, and the result says what was not
    compared (exit 2 unless a break was seen). verify_range: load each
    library on every release of its symbol range, so the ranges compared are
    the ones loading shows."""
    from ..inspect.api import load_api

    old, rep_old = load_api(
        old_path, static=static, timeout=timeout, runtime=runtime, verify_range=verify_range
    )
    new, rep_new = load_api(
        new_path, static=static, timeout=timeout, runtime=runtime, verify_range=verify_range
    )
    result = compare(old, new, static_requested=static)
    extra = []
    for side, api, rep in (("OLD", old, rep_old), ("NEW", new, rep_new)):
        # the load failure itself is in not_compared
        extra += [f"{side}: {e['message']}" for e in _errors(rep) if e["message"] != api.load_error]
        extra += [f"{side}: {w}" for w in rep.get("warnings") or () if "static results" in w]
    if extra:
        result = replace(result, warnings=result.warnings + tuple(extra))
    return result


def _errors(rep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    errs = rep.get("errors") or []
    return [e for e in errs if isinstance(e, Mapping) and "message" in e]

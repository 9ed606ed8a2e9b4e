"""The `declared-runtime` check (wheel input only): the apache-tvm-ffi range a
wheel declares in Requires-Dist, against the releases its libraries can run
on (abi/versions.py, from the exports of every known release).

A declared range that admits a release some library cannot run on fails,
naming the release, the library and the symbols that release lacks. Symbols
are necessary, not sufficient: where a release's runtime is at hand, the
wheel engine loads each library on it (inspect/ranges.py) and passes what
happened as `loads`; a library that aborts or is refused there fails the
check the same way, with the library's own message. A load that fails for a
missing shared library other than the runtime (libz3 of z3-solver, not in
the wheel), or that fails on every release tried (a module loader this host
lacks), says nothing about the releases and is listed as not verified. No
requirement at all admits every release (an installer keeps whatever runtime
is there, or picks the newest): it fails when a known release cannot run the
libraries, and passes with a note otherwise. A wheel that ships its own
runtime (it defines the C API) passes with a note: its libraries meet that.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..abi.versions import KNOWN_RELEASES, releases_text, runtime_range
from ..ffi.hosts import MISSING_DEPENDENCY as MISSING_DEPENDENCY
from ..text import JsonDict, JsonValue
from .results import FAIL, PASS, Result

CHECK = "declared-runtime"
SHOWN_SYMBOLS = 3
#: (release, status "loads"|"fails"|"not-checked", message), per library.
Loads = Mapping[str, Sequence[tuple[str, str, str]]]


def admits(specifier: str, version: str) -> bool:
    from packaging.specifiers import SpecifierSet

    # Post releases (0.1.13.post3) are releases; pre-releases are never known ones.
    return SpecifierSet(specifier).contains(version, prereleases=True)


def _span(releases: Sequence[str]) -> str:
    if not releases:
        return "none"
    return releases[0] if len(releases) == 1 else f"{releases[0]}..{releases[-1]}"


def _symbols(names: Sequence[str]) -> str:
    more = len(names) - SHOWN_SYMBOLS
    return ", ".join(names[:SHOWN_SYMBOLS]) + (f" (+{more} more)" if more > 0 else "")


def blockers(
    libraries: Sequence[tuple[str, Sequence[str]]],
) -> dict[str, list[tuple[str, list[str]]]]:
    """Known release -> [(library, symbols that release lacks)] for every
    release some library cannot run on (releases in KNOWN_RELEASES order)."""
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for name, imports in libraries:
        rr = runtime_range(list(imports))
        for v in KNOWN_RELEASES:
            if v in rr.ok_releases:
                continue
            missing = sorted(rr.missing_in(v))
            out.setdefault(v, []).append((name, missing))
    return {v: out[v] for v in KNOWN_RELEASES if v in out}


def _load_findings(
    loads: Loads,
) -> tuple[dict[str, list[tuple[str, str]]], list[str], list[str], list[str]]:
    """(release -> [(library, message)] where loading failed, the releases it
    loaded on, those not loaded (runtime not at hand), and one line per
    library whose load failed for a missing dependency)."""
    failed: dict[str, list[tuple[str, str]]] = {}
    loaded: set[str] = set()
    unchecked: set[str] = set()
    deps: dict[str, str] = {}
    for lib, entries in loads.items():
        # A library that loads on no release tried says nothing of releases:
        # the host lacks something (a dependency, a module loader).
        anywhere = any(status == "loads" for _r, status, _m in entries)
        for release, status, message in entries:
            if status == "fails" and (MISSING_DEPENDENCY in message or not anywhere):
                deps.setdefault(lib, message)
        for release, status, message in entries:
            if lib in deps:
                break
            elif status == "fails":
                failed.setdefault(release, []).append((lib, message))
            elif status == "loads":
                loaded.add(release)
            else:
                unchecked.add(release)
    order = [v for v in KNOWN_RELEASES if v in failed]
    return (
        {v: failed[v] for v in order},
        [v for v in KNOWN_RELEASES if v in loaded],
        [v for v in KNOWN_RELEASES if v in unchecked],
        [f"{lib} needs {_missing_dependency(m)}" for lib, m in sorted(deps.items())],
    )


def _missing_dependency(message: str) -> str:
    """ "libz3.so.4.15, which is not found" out of a loader's "libz3.so.4.15:
    cannot open shared object file"; else what loading said, shortened."""
    import re

    m = re.search(r"([^\s:]+): " + MISSING_DEPENDENCY, message)
    if m:
        return f"{m.group(1)}, which is not found"
    return "what fails on every release tried: " + (
        message if len(message) <= 200 else message[:199] + "…"
    )


def declared_runtime(
    specifier: str | None,
    libraries: Sequence[tuple[str, Sequence[str]]],
    shipped_runtimes: Sequence[str] = (),
    loads: Loads | None = None,
) -> Result:
    """The check's result. `specifier`: the wheel's combined Requires-Dist
    specifier on apache-tvm-ffi ("" names no version, None: no requirement);
    `libraries`: (name, runtime imports) of each TVM-FFI library;
    `shipped_runtimes`: the runtimes the wheel ships itself; `loads`: what
    loading each library on the admitted releases' runtimes did (None: not
    loaded, the verdict rests on symbols)."""
    bad = blockers(libraries)
    load_bad, loaded, unchecked, deps = _load_findings(loads or {})
    runs_on = [v for v in KNOWN_RELEASES if v not in bad and v not in load_bad]
    admitted = (
        list(KNOWN_RELEASES)
        if not specifier
        else [v for v in KNOWN_RELEASES if admits(specifier, v)]
    )
    wrong = [v for v in admitted if v in bad or v in load_bad]
    failing: list[JsonValue] = [
        {"release": v, "library": lib, "symbols": list(syms), "load_error": None}
        for v in wrong
        for lib, syms in bad.get(v, [])
    ]
    failing += [
        {"release": v, "library": lib, "symbols": [], "load_error": msg}
        for v in wrong
        if v not in bad
        for lib, msg in load_bad.get(v, [])
    ]
    details: JsonDict = {
        "declared": specifier,
        "admitted": list(admitted),
        "runs_on": list(runs_on),
        "failing": failing,
        "loaded_on": list(loaded),
        "not_loaded": list(unchecked),
        "load_unverified": list(deps),
    }
    said = (
        "declares no apache-tvm-ffi requirement"
        if specifier is None
        else (
            f"declares apache-tvm-ffi{specifier}"
            if specifier
            else "declares apache-tvm-ffi (any version)"
        )
    )
    basis = _basis(loads, loaded, unchecked, deps)
    if shipped_runtimes and specifier is None:
        details["failing"] = []
        return Result(
            CHECK,
            None,
            PASS,
            f"{said}; it ships its own runtime ({', '.join(shipped_runtimes)}), "
            "which its libraries meet",
            details,
        )
    if wrong:
        v = wrong[0]
        if v in bad:
            lib, syms = bad[v][0]
            why = f"cannot run on {v}: it lacks {_symbols(syms) or 'what the library imports'}"
        else:
            lib, msg = load_bad[v][0]
            why = f"does not load on {v} (it has every symbol): {msg}"
        others = f" (and {len(wrong) - 1} more admitted release(s): {', '.join(wrong[1:])})"
        return Result(
            CHECK,
            None,
            FAIL,
            f"{said}, which admits {v}, but {lib} {why}"
            + (others if len(wrong) > 1 else "")
            + f"; the libraries run on {_span(runs_on)}{basis}",
            details,
        )
    if not admitted:
        return Result(
            CHECK,
            None,
            PASS,
            f"{said}, which admits no known release (known: {_span(KNOWN_RELEASES)}); "
            "nothing to judge it by",
            details,
        )
    note = (
        "; any release may be met, and the libraries run on every known one"
        if specifier is None
        else f": every admitted release ({_span(admitted)}) runs the libraries"
    )
    return Result(CHECK, None, PASS, f"{said}{note} (they run on {_span(runs_on)}){basis}", details)


def _basis(loads: Loads | None, loaded: list[str], unchecked: list[str], deps: list[str]) -> str:
    """What the verdict rests on, for the message."""
    if loads is None:
        return " [by symbols]"
    parts = []
    if loaded:
        parts.append(f"loaded on {releases_text(loaded)}")
    if unchecked:
        parts.append(
            f"not loaded on {releases_text(unchecked)} (runtime not at hand, or past the "
            "loads per library; `tvmffi inspect --verify-range LIB` loads it on each)"
        )
    if deps:
        more = f" (+{len(deps) - 1} more)" if len(deps) > 1 else ""
        parts.append(f"not verifiable by loading: {deps[0]}{more}")
    return f" [by symbols; {'; '.join(parts)}]" if parts else " [by symbols]"

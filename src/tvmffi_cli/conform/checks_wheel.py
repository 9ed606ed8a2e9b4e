"""The `declared-runtime` check (wheel input only): the apache-tvm-ffi range a
wheel declares in Requires-Dist, against the releases its libraries can run
on (abi/versions.py, from the exports of every known release).

A declared range that admits a release some library cannot run on fails,
naming the release, the library and the symbols that release lacks. No
requirement at all admits every release (an installer keeps whatever runtime
is there, or picks the newest): it fails when a known release cannot run the
libraries, and passes with a note otherwise. A wheel that ships its own
runtime (it defines the C API) passes with a note: its libraries meet that.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..abi.versions import KNOWN_RELEASES, runtime_range
from .results import FAIL, PASS, Result

CHECK = "declared-runtime"
SHOWN_SYMBOLS = 3


def _admits(specifier: str, version: str) -> bool:
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


def declared_runtime(
    specifier: str | None,
    libraries: Sequence[tuple[str, Sequence[str]]],
    shipped_runtimes: Sequence[str] = (),
) -> Result:
    """The check's result. `specifier`: the wheel's combined Requires-Dist
    specifier on apache-tvm-ffi ("" names no version, None: no requirement);
    `libraries`: (name, runtime imports) of each TVM-FFI library;
    `shipped_runtimes`: the runtimes the wheel ships itself."""
    bad = blockers(libraries)
    runs_on = [v for v in KNOWN_RELEASES if v not in bad]
    admitted = (
        list(KNOWN_RELEASES)
        if not specifier
        else [v for v in KNOWN_RELEASES if _admits(specifier, v)]
    )
    wrong = [v for v in admitted if v in bad]
    details: dict[str, Any] = {
        "declared": specifier,
        "admitted": admitted,
        "runs_on": runs_on,
        "failing": [
            {"release": v, "library": lib, "symbols": syms} for v in wrong for lib, syms in bad[v]
        ],
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
        lib, syms = bad[v][0]
        others = f" (and {len(wrong) - 1} more admitted release(s): {', '.join(wrong[1:])})"
        return Result(
            CHECK,
            None,
            FAIL,
            f"{said}, which admits {v}, but {lib} cannot run on {v}: it lacks "
            f"{_symbols(syms) or 'what the library imports'}"
            + (others if len(wrong) > 1 else "")
            + f"; the libraries run on {_span(runs_on)}",
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
    return Result(CHECK, None, PASS, f"{said}{note} (they run on {_span(runs_on)})", details)

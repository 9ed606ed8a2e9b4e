"""The `min-runtime` and `max-runtime` checks: the range of official runtime
releases whose exports satisfy the library's imports (C functions and tvm::ffi
C++ symbols, abi/release_exports.py), against the range a project promises
(--min-runtime / --max-runtime)."""

from __future__ import annotations

from typing import Any

from ..abi.versions import KNOWN_RELEASES, NEWEST, RuntimeRange, newer, plain, runtime_range
from ..text import JsonDict
from .results import FAIL, PASS, Result


def needed(binary: Any, context_apis: list[str]) -> RuntimeRange:
    """The RuntimeRange of a library: the runtime symbols it and the sibling
    libraries it loads import and none of them defines, plus the C API
    functions it receives through __TVMFFI<name> context symbols."""
    from ..binary.deps import runtime_needs

    return runtime_range(list(runtime_needs(binary).closure) + context_apis)


def lacking(rr: RuntimeRange, version: str) -> tuple[str, ...]:
    """The imports release `version` lacks. A version between known releases
    is judged by the newest known release not newer than it; one newer than
    every known release by the newest."""
    exact = [r for r in KNOWN_RELEASES if r == version or plain(r) == plain(version)]
    if exact:
        return rr.missing_in(exact[0])
    older = [r for r in KNOWN_RELEASES if not newer(r, version)]
    return rr.missing_in(older[-1]) if older else rr.missing_in(KNOWN_RELEASES[0])


def _span(rr: RuntimeRange) -> str:
    if not rr.satisfiable:
        return "no known apache-tvm-ffi release provides every import"
    top = f", <= {rr.max_version}" if rr.max_version else ""
    return f"runs on apache-tvm-ffi >= {rr.min_version}{top}"


def _details(rr: RuntimeRange) -> JsonDict:
    return {
        "min_runtime_version": rr.min_version,
        "max_runtime_version": rr.max_version,
        "min_because": list(rr.min_because),
        "max_because": list(rr.max_because),
        "ok_releases": list(rr.ok_releases),
    }


def _check(check: str, flag: str, rr: RuntimeRange, version: str | None) -> Result:
    details = _details(rr)
    if version is None:
        why = rr.min_because if check == "min-runtime" else rr.max_because
        return Result(
            check,
            None,
            PASS,
            _span(rr)
            + (f" ({', '.join(why)})" if why else "")
            + f"; give {flag} VERSION to enforce it",
            details,
        )
    lack = lacking(rr, version)
    details["missing"] = list(lack)
    if lack:
        shown = ", ".join(lack[:4]) + (f" and {len(lack) - 4} more" if len(lack) > 4 else "")
        if check == "min-runtime" and newer(rr.min_version, version):
            head = f"needs apache-tvm-ffi >= {rr.min_version} but must run on {version}"
        elif rr.max_version is not None and newer(version, rr.max_version):
            head = f"runs on apache-tvm-ffi <= {rr.max_version} but must run on {version}"
        else:
            head = f"must run on apache-tvm-ffi {version} ({flag})"
        return Result(check, None, FAIL, f"{head}: {version} lacks {shown}", details)
    beyond = f" (newer than the newest known release {NEWEST})" if newer(version, NEWEST) else ""
    return Result(
        check, None, PASS, f"runs on {version}{beyond}, as {flag} asks; {_span(rr)}", details
    )


def check_min_runtime(rr: RuntimeRange, oldest: str | None) -> Result:
    """Fails when the oldest release the project supports lacks an import."""
    return _check("min-runtime", "--min-runtime", rr, oldest)


def check_max_runtime(rr: RuntimeRange, newest: str | None) -> Result:
    """Fails when the newest release the project supports lacks an import
    (a C++ symbol that release dropped)."""
    return _check("max-runtime", "--max-runtime", rr, newest)

"""The `min-runtime` check: the oldest runtime the library's imports need,
against the oldest one the user must support (--min-runtime)."""

from __future__ import annotations

from typing import Any

from ..abi.versions import min_runtime, newer
from .results import FAIL, PASS, Result


def needed(binary: Any, context_apis: list[str]) -> Any:
    """The abi.versions.Requirement of a library: its TVMFFI imports plus the
    C API functions it receives through __TVMFFI<name> context symbols."""
    imports = [n for n in binary.imports if n.startswith("TVMFFI")]
    return min_runtime(imports + context_apis)


def check_min_runtime(req: Any, oldest: str | None) -> Result:
    why = "; ".join(req.reasons)
    details = {"min_runtime_version": req.version, "reasons": list(req.reasons)}
    if oldest is None:
        return Result(
            "min-runtime",
            None,
            PASS,
            f"needs apache-tvm-ffi >= {req.version}"
            + (f" ({why})" if why else "")
            + "; give --min-runtime VERSION to enforce a floor",
            details,
        )
    if newer(req.version, oldest):
        return Result(
            "min-runtime",
            None,
            FAIL,
            f"needs apache-tvm-ffi >= {req.version} but must run on {oldest}: {why}",
            details,
        )
    return Result(
        "min-runtime",
        None,
        PASS,
        f"needs apache-tvm-ffi >= {req.version}, within --min-runtime {oldest}",
        details,
    )

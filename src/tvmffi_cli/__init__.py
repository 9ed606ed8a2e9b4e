"""tvmffi: inspect, call and check libraries that speak the TVM-FFI stable C ABI.

The public Python API (docs/python-api.md) lives in tvmffi_cli.api and is
re-exported here on first use, so `import tvmffi_cli` stays cheap (the CLI's
start-up fast path imports this package). The call and conform functions are
call_function and conform_library here: tvmffi_cli.call and tvmffi_cli.conform
are the engine packages (tvmffi_cli.api.call/conform are the short names).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .api import (
        CallError,
        CallResult,
        CheckResult,
        ConformReport,
        FunctionInfo,
        InspectReport,
        Problem,
        RuntimeConflict,
        call_function,
        conform_library,
        inspect_library,
        load,
    )

__all__ = [
    "CallError",
    "CallResult",
    "CheckResult",
    "ConformReport",
    "FunctionInfo",
    "InspectReport",
    "Problem",
    "RuntimeConflict",
    "__version__",
    "call_function",
    "conform_library",
    "inspect_library",
    "load",
]
_API = frozenset(__all__) - {"__version__"}


def __getattr__(name: str) -> Any:
    if name in _API:
        from . import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))

"""Loading a library for `inspect` when the runtime auto chose cannot host it.

Symbols decide auto's first choice (ffi/hosts.py), but only loading shows a
library that aborts on a runtime with every symbol (tilelang 0.1.12 on the
builtin runtime and on 0.1.12: "TypeAttr `__ffi_repr__` is already
registered"). When the load fails and the runtime was auto's choice, the
library is loaded again on hosts.fallback's runtime (the newest release of its
range at hand), up to MAX_TRIES runtimes; the report's `runtime` then names
the runtime that worked (its reason says why), with `tried` listing the ones
that did not and what each load said. When
none works the load error ends with the `--runtime` to pass (hosts.hint).

`check_range` adds `runtime_range_check` (inspect/ranges.py) to a report.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ..binary.model import Binary
    from ..ffi.hosts import RuntimeChoice
    from .report import Problem, Report, Runtime

#: How the engine's load errors begin (engine.dynamic_part), read by api.py too.
LOAD_FAILED = "loading the library failed"

#: Runtimes auto tries for one library, the first included.
MAX_TRIES = 3


def _load_error(rep: Report) -> Problem | None:
    for e in rep["errors"]:
        if e["where"] == "load" and e["message"].startswith(LOAD_FAILED):
            return e
    return None


def _runtime(choice: RuntimeChoice) -> Runtime:
    # ffi/hosts.py builds it as a plain JSON object, of these keys
    return cast("Runtime", choice.to_json())


def load(
    rep: Report,
    b: Binary,
    path: str | os.PathLike[str],
    timeout: float,
    choice: RuntimeChoice,
    dynamic_part: Callable[..., None],
) -> Report:
    """The report after loading on `choice` (and, for auto, the runtimes
    after it that are at hand): `rep` is the static report, left as it is;
    `dynamic_part` is the engine's (it fills a report from one load)."""
    from ..ffi import hosts

    tries = 0
    while True:
        out = copy.deepcopy(rep)
        out["runtime"] = _runtime(choice)
        dynamic_part(out, b, path, timeout, choice.path)
        tries += 1
        err = _load_error(out)
        if err is None:
            return out
        why = err["message"].removeprefix("loading the library failed").lstrip(": ")
        nxt = hosts.fallback(path, choice, why) if tries < MAX_TRIES else None
        if nxt is None:
            if hosts.MISSING_DEPENDENCY not in why:
                err["message"] += hosts.hint(path, choice)
            if choice.tried:
                out["runtime"] = _runtime(choice)
            return out
        choice = nxt


def check_range(
    rep: Report, path: str | os.PathLike[str], timeout: float, fetch_missing: bool
) -> None:
    """Load the library on each release of its symbol range (ranges.verify)
    and put what happened in `rep` (`runtime_range_check`, and the basis)."""
    from .ranges import verify

    check = verify(path, fetch_missing=fetch_missing, timeout=timeout)
    rep["runtime_range_check"] = check.to_json()
    rep["runtime_range_basis"] = check.basis

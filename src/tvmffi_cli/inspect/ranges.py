"""Which official releases a library runs on, checked by loading it.

The range `inspect` reports from symbols (abi/versions.py: the releases
whose runtime exports every symbol the library imports) is necessary, not
sufficient: a library can abort while loading on a release that has every
symbol (tilelang 0.1.12 registers a type attribute 0.1.12's runtime already
registers: "TypeAttr `__ffi_repr__` is already registered"). `verify` loads
the library in the sandboxed worker on the runtime of each release of its
symbol range whose runtime is at hand (ffi/fetch.py: cached, or fetched when
asked) and keeps what each load said.

    check = verify("lib.so")            # cached runtimes only
    check.runs_on                       # releases it loaded on, plus unchecked ones
    check.failed                        # (release, the library's own words)
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

LOADS, FAILS, NOT_CHECKED = "loads", "fails", "not-checked"


@dataclass(frozen=True)
class ReleaseLoad:
    """What loading the library on one release's runtime did."""

    release: str
    status: str  # LOADS | FAILS | NOT_CHECKED (its runtime is not at hand)
    message: str = ""  # why it failed / was not checked

    def to_json(self) -> dict[str, Any]:
        return {"release": self.release, "status": self.status, "message": self.message}


@dataclass(frozen=True)
class RangeCheck:
    """The symbol range of a library and what loading it on each release showed."""

    by_symbols: tuple[str, ...]  # releases whose exports satisfy every import, oldest first
    loads: tuple[ReleaseLoad, ...]  # one per release checked or left unchecked

    @property
    def failed(self) -> tuple[ReleaseLoad, ...]:
        return tuple(x for x in self.loads if x.status == FAILS)

    @property
    def unchecked(self) -> tuple[str, ...]:
        return tuple(x.release for x in self.loads if x.status == NOT_CHECKED)

    @property
    def runs_on(self) -> tuple[str, ...]:
        """The releases of the symbol range it did not fail to load on (those
        not checked count by their symbols)."""
        bad = {x.release for x in self.failed}
        return tuple(r for r in self.by_symbols if r not in bad)

    @property
    def basis(self) -> str:
        """ "loading" when every release of the range was loaded, "loading and
        symbols" when some were not at hand, "symbols" when none was."""
        if not self.loads or len(self.unchecked) == len(self.loads):
            return "symbols"
        return "loading and symbols" if self.unchecked else "loading"

    def to_json(self) -> dict[str, Any]:
        return {
            "basis": self.basis,
            "by_symbols": list(self.by_symbols),
            "runs_on": list(self.runs_on),
            "loads": [x.to_json() for x in self.loads],
        }


def at_hand(releases: Iterable[str]) -> list[str]:
    """The releases among `releases` whose runtime is at hand without the
    network (ffi/fetch.py cached_runtime), in the order given."""
    from ..ffi.fetch import cached_runtime

    return [r for r in releases if cached_runtime(r) is not None]


def _load_on(path: str, runtime: str, timeout: float) -> tuple[bool, str]:
    """(loaded?, what went wrong) for one load in a fresh sandboxed worker."""
    from ..binary.deps import load_read_paths
    from ..ffi.hosts import library_message
    from ..sandbox import process as sandbox

    try:
        # Output kept for the message, not relayed: a range check loads the
        # library a dozen times and reports each failure itself.
        with sandbox.Worker(
            runtime=runtime,
            stderr="capture",
            read_paths=[*load_read_paths(path), runtime],
            cpu_limit=sandbox.cpu_seconds(timeout),
        ) as w:
            reply = w.call("inspect.load_task", {"path": path, "runtime": runtime}, timeout)
    except sandbox.ChildCrashed as e:
        said = library_message(e.stderr or "")
        how = e.signal or f"exit status {e.returncode}"
        return False, f"crashed the worker process ({how}) while loading" + (
            f": {said}" if said else ""
        )
    except sandbox.ChildTimeout:
        return False, f"did not finish loading within {timeout:g} s"
    if isinstance(reply, dict) and reply.get("status") == "loaded":
        return True, ""
    msg = reply.get("message") if isinstance(reply, dict) else None
    return False, str(msg or f"unexpected reply {reply!r}")[:400]


def verify(
    path: str | os.PathLike[str],
    releases: Iterable[str] | None = None,
    fetch_missing: bool = False,
    timeout: float = 30.0,
    by_symbols: tuple[str, ...] | None = None,
) -> RangeCheck:
    """Load `path` on each release of `releases` (default: its symbol range)
    whose runtime is at hand; `fetch_missing` fetches the others first
    (ffi/fetch.py). A release outside the symbol range is not loaded: it
    lacks a symbol the library imports, and lazy binding could hide that.
    `by_symbols`: the symbol range when the caller has it (reading a large
    library's symbols again costs seconds)."""
    from ..abi.versions import runtime_range
    from ..errors import InputError
    from ..ffi import fetch
    from ..ffi.hosts import runtime_imports

    p = os.path.abspath(os.fspath(path))
    if by_symbols is None:
        by_symbols = runtime_range(runtime_imports(p)).ok_releases
    wanted = by_symbols if releases is None else tuple(r for r in by_symbols if r in releases)
    out = []
    for r in wanted:
        rt: Any = None
        why = ""
        if fetch_missing:
            try:
                rt = fetch.release_runtime(r)
            except InputError as e:
                why = str(e)
        else:
            rt = fetch.cached_runtime(r)
            why = f"its runtime is not at hand (--verify-range fetches it: --runtime {r})"
        if rt is None:
            out.append(ReleaseLoad(r, NOT_CHECKED, why))
            continue
        ok, said = _load_on(p, str(rt), timeout)
        out.append(ReleaseLoad(r, LOADS if ok else FAILS, said))
    return RangeCheck(by_symbols, tuple(out))

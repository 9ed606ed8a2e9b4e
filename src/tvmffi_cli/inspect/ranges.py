"""Which official releases a library runs on, checked by loading it.

The range `inspect` reports from symbols (abi/versions.py: the releases
whose runtime exports every symbol the library imports) is necessary, not
sufficient: a library can abort while loading on a release that has every
symbol (tilelang 0.1.12 registers a type attribute 0.1.12's runtime already
registers: "TypeAttr `__ffi_repr__` is already registered"). `verify` loads
the library in the sandboxed worker on the runtime of each release of its
symbol range whose runtime is at hand (ffi/fetch.py: cached, or fetched when
asked) and keeps what each load said. `cover` answers diff's question: does
NEW run wherever OLD runs (below).

    check = verify("lib.so")            # cached runtimes only
    check.runs_on                       # releases it loaded on, plus unchecked ones
    check.failed                        # (release, the library's own words)

Each load is a fresh sandboxed worker; the loads run side by side, as many
as there are CPUs (loads.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from .loads import (
    FAILS,
    FETCH_FAILED,
    LOADS,
    NO_SYMBOLS,
    NOT_CHECKED,
    NOT_NEEDED,
    Launch,
    ReleaseLoad,
    ReleaseLoadJson,
    load_release,
    not_at_hand,
    run_all,
)

__all__ = [
    "FAILS",
    "LOADS",
    "NOT_CHECKED",
    "Cover",
    "Coverage",
    "RangeCheck",
    "ReleaseLoad",
    "at_hand",
    "cover",
    "verify",
]


class RangeCheckJson(TypedDict):
    """RangeCheck.to_json(): inspect's --json "runtime_range_check"."""

    basis: str
    by_symbols: list[str]
    runs_on: list[str]
    loads: list[ReleaseLoadJson]


class CoverJson(TypedDict):
    """Cover.to_json(): one release of diff's --json range coverage."""

    release: str
    verdict: str
    new: str
    old: str
    new_message: str
    old_message: str


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

    def to_json(self) -> RangeCheckJson:
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
    from ..ffi.hosts import runtime_imports

    p = os.path.abspath(os.fspath(path))
    if by_symbols is None:
        by_symbols = runtime_range(runtime_imports(p)).ok_releases
    wanted = by_symbols if releases is None else tuple(r for r in by_symbols if r in releases)
    got: dict[str, ReleaseLoad] = {}
    fetching = _Fetching(fetch_missing)

    def done(r: str, x: ReleaseLoad) -> list[str]:
        got[r] = ReleaseLoad(r, x.status, x.message)
        fetching.saw(got[r])
        return []

    run_all(wanted, lambda r: fetching.launch(p, r, timeout), done)
    return RangeCheck(by_symbols, tuple(got[r] for r in wanted))


class _Fetching:
    """Whether a load may fetch its release's runtime when it is not at hand.
    The first fetch runs alone: when it fails (offline, the registry refused)
    no other is tried (each costs a pip run), the releases are reported not
    checked; once one worked, the others fetch side by side."""

    def __init__(self, allowed: bool) -> None:
        self.allowed: bool | str = allowed
        self.proven = False
        self.probing: str | None = None

    def plan(self, release: str) -> bool | str | None:
        """For the load on `release`: True (fetch when missing), False or why
        not, None (wait: the first fetch is running)."""
        from ..ffi.fetch import cached_runtime

        if self.allowed is not True or self.proven or cached_runtime(release) is not None:
            return self.allowed
        if self.probing is None:
            self.probing = release
            return True
        return None

    def launch(self, path: str, release: str, timeout: float) -> Launch | ReleaseLoad | None:
        """What run_all does for one load (ReleaseLoad: nothing to run)."""
        fetch = self.plan(release)
        if fetch is None:
            return None
        if fetch is not True:
            from ..ffi.fetch import cached_runtime

            if cached_runtime(release) is None:
                return ReleaseLoad(release, NOT_CHECKED, fetch or not_at_hand(release))
        return load_release, (path, release, fetch, timeout)

    def saw(self, x: ReleaseLoad) -> None:
        failed = x.message.startswith(FETCH_FAILED)
        if x.release == self.probing:
            self.probing = None
            self.proven = not failed
        if failed and self.allowed is True:
            self.allowed = f"not fetched: fetching the runtime of {x.release} failed first"


# -- diff: does NEW run wherever OLD runs? ------------------------------------


@dataclass(frozen=True)
class Cover:
    """One release of OLD's symbol range: how NEW and OLD fared on it."""

    release: str
    new: str  # LOADS | FAILS | NO_SYMBOLS | NOT_CHECKED | NOT_NEEDED (OLD fails there)
    old: str  # LOADS | FAILS | NOT_CHECKED | NOT_NEEDED (NEW loads there)
    new_message: str = ""
    old_message: str = ""

    @property
    def verdict(self) -> str:
        """ "kept" (NEW loads), "outside" (OLD does not load either: not part
        of OLD's deployment range), "dropped" (OLD loads, NEW does not: a
        break) or "unchecked" (a load that would decide could not be made)."""
        if self.new == LOADS:
            return "kept"
        if self.old == FAILS:
            return "outside"
        if self.new in (FAILS, NO_SYMBOLS) and self.old == LOADS:
            return "dropped"
        return "unchecked"

    @property
    def why(self) -> str:
        """The first thing to say about the release: NEW's failure, or why
        it could not be judged."""
        if self.new == NOT_CHECKED:
            return self.new_message
        return self.old_message if self.old == NOT_CHECKED else self.new_message

    def to_json(self) -> CoverJson:
        return {
            "release": self.release,
            "verdict": self.verdict,
            "new": self.new,
            "old": self.old,
            "new_message": self.new_message,
            "old_message": self.old_message,
        }


@dataclass(frozen=True)
class Coverage:
    """NEW loaded on each release of OLD's symbol range, OLD where NEW failed."""

    rows: tuple[Cover, ...]
    loads: int  # loads made (the cost); known outcomes are reused, not counted
    #: OLD and NEW are one file: NEW runs wherever OLD does, nothing loaded.
    same_file: bool = False

    def releases(self, verdict: str) -> tuple[str, ...]:
        return tuple(c.release for c in self.rows if c.verdict == verdict)


#: The side a load is for, and its key in `known`.
OLD, NEW = "old", "new"


def cover(
    old_path: str,
    new_path: str,
    old_range: Sequence[str],
    new_range: Sequence[str],
    known: Mapping[tuple[str, str], ReleaseLoad] | None = None,
    timeout: float = 30.0,
    fetch_missing: bool = True,
    width: int | None = None,
) -> Coverage:
    """Does NEW run wherever OLD runs? NEW is loaded on each release of
    `old_range` (OLD's symbol range) that `new_range` (NEW's) holds; where it
    fails or lacks a symbol, OLD is loaded there too: both failing means the
    release is not part of OLD's deployment range, OLD alone loading is a
    release NEW drops. `known`: outcomes seen already ((OLD|NEW, release)
    -> ReleaseLoad; auto's loads), reused. Runtimes not at hand are fetched
    (fetch_missing); after one fetch fails the rest are not tried. A library
    that misses a dependency fails the same on every release: its remaining
    loads are not made, and those releases are unchecked."""
    from ..ffi.hosts import MISSING_DEPENDENCY

    known = known or {}
    paths = {OLD: os.path.abspath(old_path), NEW: os.path.abspath(new_path)}
    state: dict[str, dict[str, ReleaseLoad]] = {r: {} for r in old_range}
    fetching = _Fetching(fetch_missing)
    hopeless: dict[str, str] = {}  # side -> a missing dependency's message
    made = [0]

    def decided(side: str, r: str, x: ReleaseLoad) -> list[tuple[str, str]]:
        """Record `x`; the load to make next for release r, if any."""
        if x.status == FAILS and MISSING_DEPENDENCY in x.message:
            hopeless.setdefault(side, x.message)
            x = ReleaseLoad(r, NOT_CHECKED, f"cannot be loaded here at all: {x.message}")
        state[r][side] = x
        if side == NEW and x.status in (FAILS, NO_SYMBOLS):
            return need(OLD, r)
        return []

    def need(side: str, r: str) -> list[tuple[str, str]]:
        seen = known.get((side, r))
        if seen is not None and seen.status in (LOADS, FAILS):
            return decided(side, r, seen)
        if side in hopeless:
            return decided(side, r, ReleaseLoad(r, NOT_CHECKED, hopeless[side]))
        return [(side, r)]

    first: list[tuple[str, str]] = []
    for r in old_range:
        seen_old = known.get((OLD, r))
        if seen_old is not None and seen_old.status == FAILS:
            state[r][OLD] = seen_old  # not OLD's: nothing to ask of NEW there
            state[r][NEW] = ReleaseLoad(r, NOT_NEEDED)
        elif r not in new_range:
            first += decided(
                NEW, r, ReleaseLoad(r, NO_SYMBOLS, "lacks a runtime symbol it imports")
            )
        else:
            first += need(NEW, r)

    def launch(job: tuple[str, str]) -> Launch | ReleaseLoad | None:
        side, r = job
        if side in hopeless:  # found out while this one waited
            return ReleaseLoad(r, NOT_CHECKED, hopeless[side])
        return fetching.launch(paths[side], r, timeout)

    def done(job: tuple[str, str], x: ReleaseLoad) -> list[tuple[str, str]]:
        side, r = job
        x = ReleaseLoad(r, x.status, x.message)
        fetching.saw(x)
        made[0] += x.status in (LOADS, FAILS)
        return decided(side, r, x)

    run_all(first, launch, done, width)
    rows = []
    for r in old_range:
        s = state[r]
        new = s.get(NEW, ReleaseLoad(r, NOT_CHECKED))
        old = s.get(OLD, ReleaseLoad(r, NOT_NEEDED))
        rows.append(Cover(r, new.status, old.status, new.message, old.message))
    return Coverage(tuple(rows), made[0])

"""Which apache-tvm-ffi runtime release first provides each part of the C ABI.

The one table of version facts: `tvmffi inspect` reports the oldest runtime a
library can meet (`min_runtime_version`) and `tvmffi conform --min-runtime`
fails a library that needs a newer one.

How the facts were established: `pip download --no-deps apache-tvm-ffi==V` of
0.1.0, 0.1.4, 0.1.5, 0.1.6, 0.1.7, 0.1.8.post0, 0.1.9, 0.1.12, 0.1.13.post2,
0.1.14.post0 and 0.1.15.post2, then `nm -D --defined-only` of each wheel's
libtvm_ffi.so. 0.1.0 exports 42 of the 50 functions of abi/capi.py; the other
eight appear in the releases named below and none was removed since.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .capi import C_API_NAMES

#: The oldest release checked; every C API function not listed in SINCE is in it.
BASELINE = "0.1.0"

#: C API function -> first apache-tvm-ffi release whose libtvm_ffi.so exports it.
SINCE: dict[str, str] = {
    "TVMFFIHandleInitOnce": "0.1.5",
    "TVMFFIHandleDeinitOnce": "0.1.5",
    "TVMFFITensorCreateUnsafeView": "0.1.6",
    "TVMFFIErrorCreateWithCauseAndExtraContext": "0.1.8",
    "TVMFFIGetCustomAllocator": "0.1.13",
    "TVMFFISetCustomAllocator": "0.1.13",
    "TVMFFIBigIntFromByteArray": "0.1.14",
    "TVMFFIBigIntGetContentByteArray": "0.1.14",
}


@dataclass(frozen=True)
class LayoutFact:
    """A struct layout that changed in `since`; a library that uses `trigger`
    was built against the new layout and reads past the old one."""

    what: str
    since: str
    trigger: str


#: Layout changes: the Error object grew its cause chain and extra context in
#: 0.1.8 (a library creating errors with them reads the larger object).
LAYOUTS: tuple[LayoutFact, ...] = (
    LayoutFact(
        "the Error object with cause chain and extra context",
        "0.1.8",
        "TVMFFIErrorCreateWithCauseAndExtraContext",
    ),
)

assert set(SINCE) <= C_API_NAMES


def parse_version(text: str) -> tuple[int, ...]:
    """'0.1.8.post2' -> (0, 1, 8); ValueError when it is not a release number."""
    parts = text.strip().lstrip("v").split(".")
    nums: list[int] = []
    for p in parts:
        if not p.isdigit():
            break
        nums.append(int(p))
    if len(nums) < 2:
        raise ValueError(f"not a version number: {text!r}")
    return tuple(nums)


def _key(v: str) -> tuple[int, ...]:
    t = parse_version(v)
    return t + (0,) * (3 - len(t))


@dataclass(frozen=True)
class Requirement:
    """The oldest runtime a set of imports needs, and why."""

    version: str
    reasons: tuple[str, ...]  # "TVMFFIHandleInitOnce needs 0.1.5", ...

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "reasons": list(self.reasons)}


def min_runtime(imports: Iterable[str]) -> Requirement:
    """The oldest apache-tvm-ffi runtime providing every imported C API function
    (and the layouts they imply). Unknown names are ignored (c-api-imports
    reports them)."""
    names = set(imports)
    need: list[tuple[str, str]] = []
    for n in sorted(names):
        if n in SINCE:
            need.append((SINCE[n], f"{n} needs {SINCE[n]}"))
    for fact in LAYOUTS:
        if fact.trigger in names:
            need.append((fact.since, f"{fact.what} needs {fact.since}"))
    if not need:
        return Requirement(BASELINE, ())
    top = max(_key(v) for v, _ in need)
    version = ".".join(map(str, top))
    reasons = tuple(r for v, r in need if _key(v) == top)
    return Requirement(version, reasons)


def newer(a: str, b: str) -> bool:
    """Is release a newer than release b?"""
    return _key(a) > _key(b)

"""How sandboxed workers are started: the process-wide policy (sandbox on or
off, the memory limit, where library output goes) and sizes as the
command line spells them."""

from __future__ import annotations

import glob
import math
import os
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import InputError

if TYPE_CHECKING:
    from ..text import JsonDict  # annotations only: policy is on the light start-up path

DEFAULT_MEMORY_LIMIT = 4 << 30
#: Bytes the worker may keep in its scratch directory (and per file written).
DEFAULT_SCRATCH_LIMIT = 1 << 30
#: Set to 1 to demand the full sandbox (CI), like --require-sandbox.
REQUIRE_ENV = "TVMFFI_REQUIRE_SANDBOX"
#: GPU device nodes the worker may open (read, write, ioctl) when they exist.
DEVICE_NODES = ("/dev/nvidia*", "/dev/dri/*", "/dev/kfd")
#: More device nodes (paths or patterns, ':'-separated), e.g. for a stand-in.
DEVICE_ENV = "TVMFFI_DEVICE_NODES"
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(s: str, what: str = "memory size", minimum: int = 64 << 20) -> int:
    """ "512M", "2G", "1.5G", "4096" (bytes) -> bytes; InputError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", s, re.IGNORECASE)
    if m is None or len(s) > 32:
        raise InputError(f"{what} {s!r}: expected a number with K, M, G or T (e.g. 512M, 2G)")
    n = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if n < minimum:
        need = "the worker's Python needs it" if minimum == 64 << 20 else "the smallest bound"
        raise InputError(f"{what} {s!r}: at least {format_size(minimum)} ({need})")
    return n


def format_size(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if n >= _UNITS[unit] and n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return f"{n / (1 << 20):.0f}M"


@dataclass(frozen=True)
class Policy:
    """How workers are started: sandbox on/off, memory limit (bytes, the tree's),
    and where library output goes ("relay": our stderr, marked).
    env: names passed to the worker besides the allow-list (--env);
    scratch_limit: bytes on disk in its scratch (--scratch-limit);
    require: refuse to run library code without every confinement feature
    (--require-sandbox); allow_read / allow_write: more directories
    (--allow-read, --allow-write)."""

    sandbox: bool = True
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    output: str = "relay"
    env: tuple[str, ...] = ()
    scratch_limit: int = DEFAULT_SCRATCH_LIMIT
    require: bool = False
    allow_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()


class Confinement(NamedTuple):
    """The confinement options as the user gave them, before they are checked
    into a Policy: the command line's (--env, --scratch-limit, ...) or a
    conform configuration table's (paths already absolute). A NamedTuple:
    immutable and typed as a frozen dataclass, without its cost at start-up
    (call's fast path builds one; bench/bench_startup.py)."""

    env: tuple[str, ...] = ()
    scratch_limit: str | None = None
    require_sandbox: bool = False
    allow_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()

    def under(self, given: Confinement) -> Confinement:
        """These options with `given` (the command line's) over them: lists
        add up (ours first), a value given wins."""
        return Confinement(
            env=(*self.env, *given.env),
            scratch_limit=given.scratch_limit or self.scratch_limit,
            require_sandbox=given.require_sandbox or self.require_sandbox,
            allow_read=(*self.allow_read, *given.allow_read),
            allow_write=(*self.allow_write, *given.allow_write),
        )


_policy = Policy()


def set_policy(**changes: Any) -> Policy:
    """Change the process-wide defaults (the CLI's --no-sandbox, --memory-limit)."""
    global _policy
    _policy = replace(_policy, **changes)
    return _policy


def policy() -> Policy:
    return _policy


def no_worker_field() -> JsonDict:
    """The `sandbox` field of a --json output when no library code ran."""
    return {
        "enabled": _policy.sandbox,
        "ran": False,
        "applied": [],
        "missing": [],
        "notes": ["no library code ran"],
        "memory_limit": _policy.memory_limit,
        "memory_mechanism": None,
        "cpu_limit": None,
    }


def device_nodes() -> list[str]:
    """The GPU device nodes present here (DEVICE_NODES, and DEVICE_ENV's)."""
    pats = [*DEVICE_NODES, *filter(None, os.environ.get(DEVICE_ENV, "").split(":"))]
    out: list[str] = []
    for pat in pats:
        out += [p for p in sorted(glob.glob(pat)) if p not in out]
    return out


def cpu_seconds(timeout: float | None) -> int | None:
    """The CPU-time limit backing a wall-clock timeout: every core busy for the
    whole timeout, plus start-up."""
    if timeout is None:
        return None
    return math.ceil(timeout * (os.cpu_count() or 1)) + 5

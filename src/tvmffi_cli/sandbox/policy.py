"""How sandboxed workers are started: the process-wide policy (sandbox on or
off, the address-space limit, where library output goes) and sizes as the
command line spells them."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from ..errors import InputError

DEFAULT_MEMORY_LIMIT = 4 << 30
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(s: str) -> int:
    """ "512M", "2G", "1.5G", "4096" (bytes) -> bytes; InputError otherwise."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", s, re.IGNORECASE)
    if m is None or len(s) > 32:
        raise InputError(f"memory size {s!r}: expected a number with K, M, G or T (e.g. 512M, 2G)")
    n = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if n < (64 << 20):
        raise InputError(f"memory size {s!r}: at least 64M (the worker's Python needs it)")
    return n


def format_size(n: int) -> str:
    for unit in ("T", "G", "M", "K"):
        if n >= _UNITS[unit] and n % _UNITS[unit] == 0:
            return f"{n // _UNITS[unit]}{unit}"
    return f"{n / (1 << 20):.0f}M"


@dataclass(frozen=True)
class Policy:
    """How workers are started: sandbox on/off, address-space limit (bytes),
    and where library output goes ("relay": our stderr, marked)."""

    sandbox: bool = True
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    output: str = "relay"


_policy = Policy()


def set_policy(**changes: Any) -> Policy:
    """Change the process-wide defaults (the CLI's --no-sandbox, --memory-limit)."""
    global _policy
    _policy = replace(_policy, **changes)
    return _policy


def policy() -> Policy:
    return _policy

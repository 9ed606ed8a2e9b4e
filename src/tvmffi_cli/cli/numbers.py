"""Validation of the numeric options of every command (no click: the inspect
fast path uses it too). A bad value is an InputError: one line, exit 2."""

from __future__ import annotations

import math

from ..errors import InputError

MAX_SECONDS = 7 * 24 * 3600.0  # a week: anything longer is a typo


def seconds(text: object, flag: str = "--timeout") -> float:
    """A positive, finite number of seconds (at most a week)."""
    try:
        v = float(str(text))
    except ValueError:
        raise InputError(f"{flag} {text}: not a number of seconds") from None
    if not math.isfinite(v) or v <= 0:
        raise InputError(f"{flag} {text}: must be a positive number of seconds")
    if v > MAX_SECONDS:
        raise InputError(f"{flag} {text}: at most {MAX_SECONDS:g} seconds")
    return v


def count(text: object, flag: str, limit: int) -> int:
    """A whole number from 1 to `limit`."""
    s = str(text).strip()
    try:
        v = int(s, 10)
    except ValueError:
        raise InputError(f"{flag} {text}: not a whole number") from None
    if not 1 <= v <= limit:
        raise InputError(f"{flag} {text}: must be between 1 and {limit}")
    return v

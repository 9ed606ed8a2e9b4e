"""`tvmffi diff`: API/ABI compatibility of two builds (engine.py; no click here)."""

from . import engine
from .engine import KINDS, NOTES, Change, DiffResult, compare, run

Suppression = engine.Suppression
parse_suppressions = engine.parse_suppressions
suppress = engine.suppress

__all__ = [
    "KINDS",
    "NOTES",
    "Change",
    "DiffResult",
    "Suppression",
    "compare",
    "parse_suppressions",
    "run",
    "suppress",
]

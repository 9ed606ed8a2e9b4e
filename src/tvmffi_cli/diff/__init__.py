"""`tvmffi diff`: API/ABI compatibility of two builds (engine.py; no click here)."""

from .engine import KINDS, Change, DiffResult, compare, run

__all__ = ["KINDS", "Change", "DiffResult", "compare", "run"]

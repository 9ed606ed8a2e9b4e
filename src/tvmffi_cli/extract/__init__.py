"""`tvmffi extract`: embedded modules and GPU binaries to files (engine.py; no click)."""

from .engine import MANIFEST, Entry, ExtractResult, ModuleNode, collect, run, safe_name

__all__ = ["MANIFEST", "Entry", "ExtractResult", "ModuleNode", "collect", "run", "safe_name"]

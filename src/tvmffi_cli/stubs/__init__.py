"""`tvmffi stubs`: typed `.pyi` stubs of a library (engine.py; no click here)."""

from .engine import CheckResult, StubResult, check, generate, render, sanitize, write

__all__ = ["CheckResult", "StubResult", "check", "generate", "render", "sanitize", "write"]

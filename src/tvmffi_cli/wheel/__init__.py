"""Wheels and directories of libraries as input (no click): reading a wheel
safely (archive.py), its METADATA (metadata.py), which files are TVM-FFI
libraries (libraries.py), the bundle (bundle.py) and each command over it
(engine.py)."""

from .bundle import Bundle, is_bundle, open_bundle
from .engine import (
    BundleResult,
    LibraryOutcome,
    conform_bundle,
    extract_bundle,
    inspect_bundle,
    stubs_bundle,
)

__all__ = [
    "Bundle",
    "BundleResult",
    "LibraryOutcome",
    "conform_bundle",
    "extract_bundle",
    "inspect_bundle",
    "is_bundle",
    "open_bundle",
    "stubs_bundle",
]

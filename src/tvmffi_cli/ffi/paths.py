"""Where the built runtime library and our C headers live."""

from __future__ import annotations

import os
import sys
from pathlib import Path

RUNTIME_ENV = "TVMFFI_RUNTIME"
_LIBNAME = "libtvm_ffi.so"


def _package_dirs() -> list[Path]:
    # An editable install (scikit-build-core "redirect" mode) spreads the package
    # over the source tree and site-packages; look in every part. (The top
    # package is imported before any of its modules.)
    top = sys.modules[__name__.split(".")[0]]
    return [Path(p) for p in getattr(top, "__path__", [])]


def runtime_library() -> Path:
    """Absolute path of our runtime (libtvm_ffi.so), or raise InputError."""
    from ..errors import InputError

    env = os.environ.get(RUNTIME_ENV)
    if env:
        p = Path(env).resolve()
        if not p.is_file():
            raise InputError(f"{RUNTIME_ENV}={env}: no such file")
        check_runtime_file(p, f"{RUNTIME_ENV}={env}")
        return p
    for d in _package_dirs():
        p = d / "lib" / _LIBNAME
        if p.is_file():
            return p.resolve()
    raise InputError(
        "the tvmffi runtime library is not built; reinstall with `pip install .` "
        f"or point {RUNTIME_ENV} at a libtvm_ffi.so"
    )


def check_runtime_file(path: Path, what: str) -> None:
    """InputError/FormatError (exit 2) unless `path` reads as a shared library:
    a text file or a program given as the runtime is the user's mistake, not a
    failure of the library under test."""
    from ..binary import open_binary, require_library
    from ..errors import FormatError

    try:
        b = open_binary(path)
    except FormatError as e:
        raise FormatError(f"{what}: not a runtime library: {e}") from None
    try:
        require_library(b)
    except FormatError as e:
        raise FormatError(f"{what}: not a runtime library: {e}") from None
    finally:
        b.close()


def include_dir() -> Path:
    from ..errors import InputError

    for d in _package_dirs():
        p = d / "include"
        if (p / "tvm" / "ffi" / "c_api.h").is_file():
            return p.resolve()
    # Running from a source checkout.
    src = Path(__file__).resolve().parents[3] / "runtime" / "include"
    if (src / "tvm" / "ffi" / "c_api.h").is_file():
        return src
    raise InputError("the tvmffi C headers are not installed; reinstall with `pip install .`")


def cmake_dir() -> Path:
    """Directory of our CMake package config (tvm_ffi-config.cmake), or raise InputError."""
    from ..errors import InputError

    for d in _package_dirs():
        p = d / "share" / "cmake" / "tvm_ffi"
        if (p / "tvm_ffi-config.cmake").is_file():
            return p.resolve()
    raise InputError("the tvmffi CMake package is not installed; reinstall with `pip install .`")

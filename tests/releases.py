"""Wheels of the field, fetched once and extracted once, for every test that
compares with a real release or a real library (one place for the cache).

Wheels are fetched with `pip download --no-deps` into $TVMFFI_WHEEL_CACHE or
~/.cache/tvmffi/wheels; a wheel that is neither cached nor downloadable
(registry unreachable) skips the asking test with the reason.

Each official apache-tvm-ffi release is its own oracle: its wheel carries its
runtime (tvm_ffi/lib/libtvm_ffi.so), its test library
(tvm_ffi/lib/libtvm_ffi_testing.so), its headers and its Python package.
`release_root(v)` extracts the whole wheel, so a subprocess with
PYTHONPATH=release_root(v) imports that release's own `tvm_ffi` (the wheels are
built for this interpreter's tag)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tvmffi_cli.abi.versions import KNOWN_RELEASES

CACHE_ENV = "TVMFFI_WHEEL_CACHE"

#: The distinct official releases of the field (ABI-NOTES "Releases"), oldest
#: first: the releases of the package's export table (one list).
RELEASES = list(KNOWN_RELEASES)


def cache_dir() -> Path:
    d = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tvmffi" / "wheels")
    d.mkdir(parents=True, exist_ok=True)
    return d


def fetch_wheel(dist: str, version: str) -> Path:
    """Path of the cached wheel, downloading it when absent; skip when that fails."""
    d = cache_dir()
    stem = dist.replace("-", "_")
    found = sorted(d.glob(f"{stem}-{version}-*.whl"))
    if found:
        return found[0]
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "-q",
            f"{dist}=={version}",
            "-d",
            str(d),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
    )
    found = sorted(d.glob(f"{stem}-{version}-*.whl"))
    if r.returncode != 0 or not found:
        last = (r.stderr.strip().splitlines() or ["no wheel"])[-1]
        pytest.skip(
            f"{dist}=={version} is not cached in {d} and could not be downloaded "
            f"(registry unreachable?): {last[:200]}"
        )
    return found[0]


def extract(wheel: Path, member: str) -> Path:
    """The library `member` of `wheel` and its sibling .so files, extracted once."""
    out = cache_dir() / "extracted" / wheel.stem
    lib = out / member
    if lib.is_file():
        return lib
    folder = member.rsplit("/", 1)[0] + "/"
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with zipfile.ZipFile(wheel) as z:
        names = [
            n
            for n in z.namelist()
            if n.startswith(folder) and n.endswith(".so") and "/" not in n[len(folder) :]
        ]
        if member not in names:
            pytest.fail(f"{wheel.name} has no {member}")
        for n in names:
            z.extract(n, tmp)
    if not out.exists():
        tmp.rename(out)
    return lib


def release_root(version: str) -> Path:
    """The whole wheel of apache-tvm-ffi `version`, extracted once: the folder
    that holds its `tvm_ffi/` package."""
    wheel = fetch_wheel("apache-tvm-ffi", version)
    out = cache_dir() / "full" / wheel.stem
    if (out / "tvm_ffi" / "lib" / "libtvm_ffi.so").is_file():
        return out
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp)
    if not out.exists():
        tmp.rename(out)
    return out


def release_runtime(version: str) -> Path:
    """libtvm_ffi.so of release `version`."""
    return release_root(version) / "tvm_ffi" / "lib" / "libtvm_ffi.so"


def release_testing_lib(version: str) -> Path:
    """libtvm_ffi_testing.so of release `version` (its own test library)."""
    return release_root(version) / "tvm_ffi" / "lib" / "libtvm_ffi_testing.so"


def release_include(version: str) -> Path:
    """The C/C++ include directory of release `version`."""
    return release_root(version) / "tvm_ffi" / "include"


def run_release_python(
    version: str, code: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter whose `tvm_ffi` is release `version`'s."""
    env = dict(os.environ, PYTHONPATH=str(release_root(version)))
    return subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )

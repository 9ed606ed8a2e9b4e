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
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from tvmffi_cli.abi.versions import KNOWN_RELEASES
from tvmffi_cli.ffi.fetch import cache_lock, download_wheel

CACHE_ENV = "TVMFFI_WHEEL_CACHE"

#: The distinct official releases of the field (ABI-NOTES "Releases"), oldest
#: first: the releases of the package's export table (one list).
RELEASES = list(KNOWN_RELEASES)


def cache_dir() -> Path:
    d = Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "tvmffi" / "wheels")
    d.mkdir(parents=True, exist_ok=True)
    return d


def fetch_wheel(dist: str, version: str, *, binary_only: bool = True) -> Path:
    """Path of the cached wheel, downloading it when absent; skip when that fails.

    Safe across xdist workers and concurrent runs sharing the cache: a wheel
    appears whole or not at all (ffi/fetch.py: download_wheel)."""
    d = cache_dir()
    found, why = download_wheel(dist, version, d, timeout=900, binary_only=binary_only)
    if found is None:
        pytest.skip(
            f"{dist}=={version} is not cached in {d} and could not be downloaded "
            f"(registry unreachable?): {why[:200]}"
        )
    return found


def _extract_once(out: Path, done: Path, unpack) -> None:
    """Run unpack(tmp) into a private folder beside `out` and move it into
    place, unless `done` exists; one process at a time (the others wait and
    find it done). A folder is renamed whole, so `done` never shows early."""
    if done.exists():
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    with cache_lock(out.with_name(f".{out.name}.lock")):
        if done.exists():
            return
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
        try:
            unpack(tmp)
            if out.exists():  # an older, partial layout: replaced whole
                shutil.rmtree(out)
            tmp.rename(out)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def extract(wheel: Path, member: str) -> Path:
    """The library `member` of `wheel` and its sibling .so files, extracted once."""
    folder = member.rsplit("/", 1)[0] + "/"
    # One folder per member directory: two directories of one wheel never
    # share (or race on) a destination.
    out = cache_dir() / "extracted" / wheel.stem / folder.strip("/").replace("/", "__")
    lib = out / member

    def unpack(tmp: Path) -> None:
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

    _extract_once(out, lib, unpack)
    return lib


def extract_members(name: str, parts: list[tuple[Path, list[str]]]) -> Path:
    """A folder holding `members` of each (wheel, members) in `parts` at their
    paths inside the wheels, extracted once (keyed by `name` and the wheels)."""
    key = "+".join([name, *(w.stem for w, _ in parts)])
    out = cache_dir() / "members" / key

    def unpack(tmp: Path) -> None:
        for wheel, members in parts:
            with zipfile.ZipFile(wheel) as z:
                for m in members:
                    z.extract(m, tmp)

    _extract_once(out, out, unpack)
    return out


def release_root(version: str) -> Path:
    """The whole wheel of apache-tvm-ffi `version`, extracted once: the folder
    that holds its `tvm_ffi/` package."""
    wheel = fetch_wheel("apache-tvm-ffi", version)
    out = cache_dir() / "full" / wheel.stem

    def unpack(tmp: Path) -> None:
        with zipfile.ZipFile(wheel) as z:
            z.extractall(tmp)

    _extract_once(out, out / "tvm_ffi" / "lib" / "libtvm_ffi.so", unpack)
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

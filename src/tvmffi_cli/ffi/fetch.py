"""Runtimes by release: `--runtime 0.1.12` is that official release's
libtvm_ffi.so, fetched once into a user cache and verified by its bytes.

    fetch.release_runtime("0.1.12")   # Path of the verified libtvm_ffi.so

A plain X.Y.Z names the newest post release of X.Y.Z (0.1.15 is
0.1.15.post2; abi/versions.py release_named).

The cache is $TVMFFI_RUNTIME_CACHE or ~/.cache/tvmffi/runtimes:
  wheels/apache_tvm_ffi-V-*.whl   what `pip download --no-deps` fetched
  V/libtvm_ffi.so                 the runtime, extracted and verified
A wheel of the release already in $TVMFFI_WHEEL_CACHE or ~/.cache/tvmffi/wheels
(where tvmffi's own tests keep the wheels they fetch) is used as it is, not
downloaded again. A cached runtime is re-hashed and used without the
network; `cached_runtime(V)` and `cached_releases()` never use it. A wheel is
fetched with pip (the user's index and proxy settings apply) and trusted
only through two hashes: the wheel's own RECORD line for the file (the
archive is intact) and the sha256 committed in abi/runtime_files.py for that
release (it is the file the release shipped). pip's --require-hashes would
need a hash per wheel (one per Python tag); the runtime inside is one file
per release, so that is what is pinned. Offline, an uncached release is exit
2 with the command that fixes it.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..abi.runtime_files import PLATFORM, RELEASE_OF_SHA256, RUNTIME_FILES
from ..abi.versions import release_named
from ..errors import InputError

CACHE_ENV = "TVMFFI_RUNTIME_CACHE"
#: Other wheels tvmffi may find at hand (its tests' wheel cache).
WHEEL_CACHE_ENV = "TVMFFI_WHEEL_CACHE"
DIST = "apache-tvm-ffi"
MEMBER = "tvm_ffi/lib/libtvm_ffi.so"
_RELEASE = re.compile(r"^[0-9]+\.[0-9]+\.[0-9]+(\.post[0-9]+)?$")
_PIP_TIMEOUT = 600


def is_release_name(text: str) -> bool:
    """Does `text` read as a release number (0.1.12, 0.1.8.post2)?"""
    return bool(_RELEASE.match(text))


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "tvmffi" / "runtimes"


def wheel_dirs() -> list[Path]:
    """Where a downloaded apache-tvm-ffi wheel may already be: our own
    wheels/ first, then the shared wheel cache. A runtime cache named by
    TVMFFI_RUNTIME_CACHE alone is the whole cache (isolated: nothing else is
    read unless TVMFFI_WHEEL_CACHE names the shared one too)."""
    env = os.environ.get(WHEEL_CACHE_ENV)
    if not env and os.environ.get(CACHE_ENV):
        return [cache_dir() / "wheels"]
    shared = Path(env).expanduser() if env else Path.home() / ".cache" / "tvmffi" / "wheels"
    return [cache_dir() / "wheels", shared]


def sha256_of(path: Path) -> str:
    """sha256 of a file, remembered per (path, mtime, size) in this process:
    auto and range checks ask about the same cached runtimes many times."""
    st = os.stat(path)
    key = (os.fspath(path), st.st_mtime_ns, st.st_size)
    hit = _SHA_MEMO.get(key)
    if hit is None:
        hit = _SHA_MEMO[key] = _sha256(path)
    return hit


_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def _sha256(path: Path) -> str:
    import hashlib  # here: loads OpenSSL, which a plain `tvmffi call` never needs

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _this_platform() -> str:
    import platform

    return f"{sys.platform}-{platform.machine()}"


def pip_command(version: str, dest: Path) -> list[str]:
    return [
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        f"{DIST}=={version}",
        "-d",
        str(dest),
    ]


def _known(version: str) -> str:
    """The known release `version` names (exact, or X.Y.Z for its newest post
    release); InputError when none."""
    release = release_named(version)
    if release is None or release not in RUNTIME_FILES:
        raise InputError(
            f"--runtime {version}: not a known official release of {DIST} "
            f"(known: {', '.join(RUNTIME_FILES)}); pass --runtime PATH of a libtvm_ffi.so"
        )
    return release


def release_runtime(version: str) -> Path:
    """The verified libtvm_ffi.so of official release `version` (0.1.15 means
    0.1.15.post2), from the cache or fetched into it. InputError (exit 2) for
    an unknown release, a platform without recorded hashes, or when it cannot
    be fetched."""
    release = _known(version)
    _check_platform(version)
    found = cached_runtime(release)
    if found is not None:
        return found
    return _install(release, _wheel(release))


def _check_platform(version: str) -> None:
    if _this_platform() != PLATFORM:
        raise InputError(
            f"--runtime {version}: runtimes by release are recorded for {PLATFORM} only "
            f"(this is {_this_platform()}); pass --runtime PATH of a libtvm_ffi.so"
        )


def cached_runtime(release: str) -> Path | None:
    """The verified runtime of known release `release` when it is at hand
    without the network (extracted already, or a wheel of it downloaded
    already); None otherwise. Never raises for a bad cache entry: a file
    that does not verify is not at hand."""
    if release not in RUNTIME_FILES or _this_platform() != PLATFORM:
        return None
    target = cache_dir() / release / "libtvm_ffi.so"
    try:
        if target.is_file() and sha256_of(target) == RUNTIME_FILES[release][1]:
            return target
    except OSError:
        return None
    for d in wheel_dirs():
        wheel = cached_wheel(d, DIST, release)
        if wheel is None:
            continue
        try:
            return _install(release, wheel)
        except (InputError, OSError):
            continue
    return None


def cached_releases() -> list[str]:
    """The known releases whose runtime is at hand without the network, oldest first."""
    return [r for r in RUNTIME_FILES if cached_runtime(r) is not None]


def _install(release: str, wheel: Path) -> Path:
    """Extract release `release`'s runtime from `wheel` into the cache, verified."""
    data = _verified_member(wheel, release, RUNTIME_FILES[release][1])
    target = cache_dir() / release / "libtvm_ffi.so"
    target.parent.mkdir(parents=True, exist_ok=True)
    import threading

    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_bytes(data)
    tmp.chmod(0o755)
    os.replace(tmp, target)  # atomic: a concurrent run sees the old or the new file
    return target


def _wheel(version: str) -> Path:
    wheels = cache_dir() / "wheels"
    found, why = download_wheel(DIST, version, wheels, timeout=_PIP_TIMEOUT)
    if found is None:
        cmd = pip_command(version, wheels)
        raise InputError(
            f"--runtime {version}: cannot download {DIST}=={version} ({why[:160]}); "
            f"where the registry is reachable run `{' '.join(cmd)}`, "
            "or pass --runtime PATH of a libtvm_ffi.so"
        )
    return found


# ---------------------------------------------------------------------------
# A wheel cache shared by concurrent processes (runs of tvmffi, test workers):
# a wheel appears in it whole or not at all.


@contextmanager
def cache_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created when absent): one process at
    a time fetches or extracts into the cache entry it guards."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock, also when the holder dies


def readable_zip(path: Path, *, full: bool = False) -> bool:
    """Does `path` open as a zip archive (its central directory, at the end, is
    what a cut-off download lacks)? With `full`, also every member's CRC."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return not full or z.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def cached_wheel(wheels: Path, dist: str, version: str) -> Path | None:
    """The wheel of `dist`==`version` in `wheels`, when one is there whole."""
    stem = dist.replace("-", "_")
    found = sorted(wheels.glob(f"{stem}-{version}-*.whl")) if wheels.is_dir() else []
    return next((p for p in found if readable_zip(p)), None)


def download_wheel(
    dist: str, version: str, wheels: Path, *, timeout: float, binary_only: bool = True
) -> tuple[Path | None, str]:
    """(the wheel of `dist`==`version` in `wheels`, "") from the cache or
    fetched with pip, else (None, why). pip writes into a private directory
    beside the cache; the wheel is checked whole (every CRC; pip has checked
    the index's sha256 where the index gives one) and renamed into place,
    under a lock, so no process ever sees a partial file and one downloads
    while the others wait for it."""
    found = cached_wheel(wheels, dist, version)
    if found is not None:
        return found, ""
    import shutil  # here and below: only a fetch pays for these imports
    import subprocess
    import tempfile

    stem = dist.replace("-", "_")
    with cache_lock(wheels / f".{stem}-{version}.lock"):
        found = cached_wheel(wheels, dist, version)  # fetched while this one waited
        if found is not None:
            return found, ""
        for stale in wheels.glob(f"{stem}-{version}-*.whl"):
            stale.unlink()  # cut off by an older writer: never whole, fetch again
        private = Path(tempfile.mkdtemp(prefix=f".{stem}-{version}-", dir=wheels))
        try:
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps"]
            cmd += ["--only-binary=:all:"] if binary_only else []
            cmd += [f"{dist}=={version}", "-d", str(private)]
            cmd += ["--disable-pip-version-check", "--retries", "1", "-q"]
            try:
                r = subprocess.run(
                    cmd, check=False, capture_output=True, text=True, timeout=timeout
                )
                why = (r.stderr.strip().splitlines() or [f"pip exited {r.returncode}"])[-1]
            except (OSError, subprocess.TimeoutExpired) as e:
                why = str(e)
            got = sorted(private.glob(f"{stem}-{version}-*.whl"))
            if not got:
                return None, why
            if not readable_zip(got[0], full=True):
                return None, f"{got[0].name}: the download is not an intact zip archive"
            os.replace(got[0], wheels / got[0].name)
            return wheels / got[0].name, ""
        finally:
            shutil.rmtree(private, ignore_errors=True)


def _verified_member(wheel: Path, version: str, want: str) -> bytes:
    """The runtime's bytes from `wheel`, checked against the wheel's RECORD
    and against the recorded hash of the release."""
    import base64
    import zipfile

    try:
        with zipfile.ZipFile(wheel) as z:
            record_name = next((n for n in z.namelist() if n.endswith(".dist-info/RECORD")), None)
            if record_name is None:
                raise InputError(f"{wheel}: a wheel without RECORD; delete it and retry")
            record = z.read(record_name).decode("utf-8", "replace")
            data = z.read(MEMBER)
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        raise InputError(f"{wheel}: not a usable {DIST} wheel ({e}); delete it and retry") from None
    import hashlib

    digest = hashlib.sha256(data)
    b64 = base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode()
    line = next((ln for ln in record.splitlines() if ln.startswith(MEMBER + ",")), "")
    if f"sha256={b64}" not in line:
        raise InputError(
            f"{wheel}: {MEMBER} does not match the wheel's RECORD; delete it and retry"
        )
    if digest.hexdigest() != want:
        raise InputError(
            f"{wheel}: its {MEMBER} is not the file {DIST} {version} shipped "
            f"(sha256 {digest.hexdigest()[:16]}..., recorded {want[:16]}...); delete it and retry"
        )
    return data


def identify(path: Path, builtin: bool) -> tuple[str | None, str | None]:
    """(TVMFFIGetVersion text, official release) of a runtime file, read
    without loading it: the builtin runtime's from the header it was built
    with, an official release's from its recorded hash; None when unknown."""
    if builtin:
        return _builtin_version(), None
    try:
        release = RELEASE_OF_SHA256.get(sha256_of(path))
    except OSError:
        return None, None
    if release is None:
        return None, None
    return RUNTIME_FILES[release][0], release


def _builtin_version() -> str | None:
    from . import paths

    try:
        header = (paths.include_dir() / "tvm" / "ffi" / "c_api.h").read_text()
    except (InputError, OSError):
        return None
    found = dict(re.findall(r"#define TVM_FFI_VERSION_(MAJOR|MINOR|PATCH)\s+([0-9]+)", header))
    parts = [found.get(k) for k in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(p for p in parts if p) if all(parts) else None

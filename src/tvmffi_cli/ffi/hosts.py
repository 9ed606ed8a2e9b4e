"""Which libtvm_ffi.so hosts a library: `--runtime auto|builtin|official|VERSION|PATH`.

    choice = choose_runtime("auto", "lib.so")
    choice.path          # the libtvm_ffi.so the child process loads
    choice.kind          # "builtin" | "official" | "release" | "path"
    choice.instrumented  # True when it exports our tvmffi_rt_* API
    choice.lacks         # C functions of newer releases it does not export
    choice.version       # its TVMFFIGetVersion, read without loading it

A VERSION (0.1.12) is that official release's runtime, fetched and verified
by ffi/fetch.py. Any file that defines the C functions every release has
(abi/versions.py: all but SINCE) hosts; one that lacks one of those is not a
runtime (exit 2).

A plain X.Y.Z is the newest post release of X.Y.Z (0.1.15 -> 0.1.15.post2).

`auto` (the default) picks the builtin runtime when it defines every runtime
symbol the library and its sibling libraries import (C API functions and C++
tvm::ffi symbols; the builtin runtime's exports are the table of
abi/release_exports.py, the one `inspect` and `diff` read), else
the official runtime when the `tvm_ffi` package is installed and its release
is in the library's range (found with importlib.util.find_spec: never
imported in this process, its runtime aborts next to ours), else the newest
official release of the library's range whose runtime is at hand without the
network (ffi/fetch.py cached_runtime), else it refuses with InputError (exit
2) naming the missing symbols and the `--runtime VERSION` that fixes it.
Reading symbols never runs library code.

A library can also fail on a runtime that has every symbol (it aborts while
registering, e.g. a type attribute the runtime itself already registers):
only loading shows that. `fallback(library, failed, why)` is auto's next
choice after such a load (the newest cached release of the range not tried
yet) and `hint(library, tried)` the `--runtime` to pass when none is at hand.
"""

from __future__ import annotations

import functools
import importlib.util
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable, Union

from ..abi.capi import C_API_NAMES
from ..abi.versions import (
    SINCE,
    builtin_missing,
    is_release_symbol,
    release_label,
    release_of_label,
    runtime_range,
    span,
)
from ..errors import InputError, TvmffiError
from ..text import JsonDict
from . import fetch

#: The named choices of --runtime; anything else is a path.
RUNTIME_NAMES = ("auto", "builtin", "official")
DEFAULT_RUNTIME = "auto"
#: Symbol our runtime exports and the official one does not (runtime/include/tvmffi/rt.h).
INSTRUMENTED_SYMBOL = "tvmffi_rt_library_load"
OFFICIAL_PACKAGE = "tvm_ffi"
OFFICIAL_DIST = "apache-tvm-ffi"
_RUNTIME_FILE = "libtvm_ffi.so"

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime that hosts a library, and why it was chosen."""

    kind: str  # "builtin" | "official" | "path"
    path: str  # absolute path of the libtvm_ffi.so
    requested: str  # what the user asked: auto | builtin | official | a path
    instrumented: bool  # exports tvmffi_rt_* (checks that need them can run)
    reason: str  # one line for people
    missing: tuple[str, ...] = field(default=())  # builtin lacks these (auto fell back)
    #: C API functions this runtime does not export (an older release); what
    #: needs one of them is unavailable and says so (notes()).
    lacks: tuple[str, ...] = field(default=())
    version: str | None = None  # what its TVMFFIGetVersion returns, when known
    release: str | None = None  # the official release it is, when known
    #: Runtimes auto tried first and how loading failed on each (label, message).
    tried: tuple[tuple[str, str], ...] = field(default=())

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "kind": self.kind,
            "path": self.path,
            "requested": self.requested,
            "instrumented": self.instrumented,
            "reason": self.reason,
            "missing_in_builtin": list(self.missing),
            "version": self.version,
            "release": self.release,
            "missing": list(self.lacks),
        }
        if self.tried:
            out["tried"] = [{"runtime": r, "error": m} for r, m in self.tried]
        return out

    def label(self) -> str:
        """ "builtin", "official", the release or the path, for human output."""
        return label_of(self.to_json())

    def notes(self) -> list[str]:
        """One line per C function this runtime lacks that costs a feature
        of tvmffi (the JSON's `missing` lists them all)."""
        return lacks_notes(self.lacks)

    def skip_reason(self, what: str) -> str | None:
        """Why `what` (a check needing our instrumented runtime) cannot run
        under this runtime, or None when it can."""
        if self.instrumented:
            return None
        return (
            f"{what} needs tvmffi's instrumented runtime; the library is hosted by "
            f"the {self.label()} runtime"
        )


def label_of(choice: JsonDict) -> str:
    """The human name of a runtime, from RuntimeChoice.to_json()."""
    if choice.get("kind") in ("release", "path"):  # named by its release when it is one
        rel = choice.get("release")
        return release_label(str(rel)) if rel else str(choice["path"])
    return str(choice.get("kind"))


#: What tvmffi cannot do on a runtime without these C functions.
_COSTS = {
    "TVMFFIBigIntFromByteArray": "integers beyond 64 bits cannot be passed",
    "TVMFFIBigIntGetContentByteArray": "big-integer results cannot be read",
}


def lacks_note(name: str) -> str:
    """ "TVMFFIBigIntFromByteArray (apache-tvm-ffi 0.1.14+): integers ..." """
    cost = _COSTS.get(name, "not used by tvmffi")
    return f"{name} (apache-tvm-ffi {SINCE.get(name, '?')}+) is missing: {cost}"


def lacks_notes(names: Iterable[str]) -> list[str]:
    """Notes for the missing C functions that cost a feature of tvmffi."""
    return [lacks_note(n) for n in names if n in _COSTS]


def builtin_runtime_path() -> Path:
    """tvmffi's own runtime (honours TVMFFI_RUNTIME); InputError when not built."""
    from . import paths

    return paths.runtime_library()


def official_runtime_path() -> Path | None:
    """libtvm_ffi.so of the installed `tvm_ffi` package, or None. The package is
    located, never imported."""
    try:
        spec = importlib.util.find_spec(OFFICIAL_PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for d in spec.submodule_search_locations or ():
        p = Path(d) / "lib" / _RUNTIME_FILE
        if p.is_file():
            return p.resolve()
    return None


def _defined(path: PathLike) -> frozenset[str]:
    st = os.stat(path)
    return _defined_cached(os.fspath(path), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=8)
def _defined_cached(path: str, _mtime: int, _size: int) -> frozenset[str]:
    # a runtime is read for its instrumentation and for what it lacks: once
    from ..binary import open_binary

    with open_binary(path) as b:
        return frozenset(s.name for s in b.symbols)


def runtime_imports(library: PathLike) -> list[str]:
    """Sorted runtime symbols (C API and C++ tvm::ffi) a library and the
    sibling libraries it loads import, and none of them defines (binary.deps)."""
    from ..binary import open_binary
    from ..binary.deps import runtime_needs

    with open_binary(library) as b:
        return list(runtime_needs(b).closure)


def missing_symbols(library: PathLike, runtime: PathLike) -> list[str]:
    """Runtime symbols the library imports that `runtime` does not define."""
    need = runtime_imports(library)
    if not need:
        return []
    have = _defined(runtime)
    return [n for n in need if n not in have]


def is_instrumented(runtime: PathLike) -> bool:
    try:
        return INSTRUMENTED_SYMBOL in _defined(runtime)
    except (TvmffiError, OSError, ValueError):  # unreadable: not ours; loading says more
        return False


def _short(names: list[str], n: int = 4) -> str:
    shown = ", ".join(names[:n])
    return shown + (f" and {len(names) - n} more" if len(names) > n else "")


def choose_runtime(requested: str | None, library: PathLike | None = None) -> RuntimeChoice:
    """Resolve a --runtime value for `library` (None: no library to match).

    InputError (exit 2) for an unknown path, a missing official package, or
    `auto` when neither runtime can host the library."""
    return _described(_choose(requested, library))


def _described(choice: RuntimeChoice) -> RuntimeChoice:
    """`choice` with what its file says of itself: the C functions it lacks
    (exit 2 when it lacks one every release has: not a runtime at all), its
    version and release."""
    from . import paths

    if choice.kind == "builtin":  # ours exports all 50 (tests/test_abi.py): nothing to read
        return replace(choice, version=fetch.identify(Path(choice.path), True)[0])
    paths.check_runtime_file(Path(choice.path), f"--runtime {choice.requested}")
    try:
        have = _defined(choice.path)
    except (TvmffiError, OSError, ValueError) as e:
        raise InputError(f"--runtime {choice.requested}: cannot read {choice.path}: {e}") from None
    absent = sorted(C_API_NAMES - have)
    required = [n for n in absent if n not in SINCE]
    if required:
        raise InputError(
            f"--runtime {choice.requested}: {choice.path} is not a TVM-FFI runtime "
            f"(it does not define {_short(required)})"
        )
    version, release = fetch.identify(Path(choice.path), False)
    return replace(choice, lacks=tuple(absent), version=version, release=release)


def _choose(requested: str | None, library: PathLike | None) -> RuntimeChoice:
    req = requested if requested else DEFAULT_RUNTIME
    if req == "builtin":
        p = builtin_runtime_path()
        return RuntimeChoice("builtin", str(p), req, True, "requested with --runtime builtin")
    if req == "official":
        off = official_runtime_path()
        if off is None:
            raise InputError(
                f"--runtime official: the {OFFICIAL_PACKAGE} package is not "
                f"installed (pip install {OFFICIAL_DIST})"
            )
        return RuntimeChoice("official", str(off), req, False, "requested with --runtime official")
    if req != "auto":
        p = Path(os.path.expanduser(req))
        kind = "path"
        if not p.is_file() and fetch.is_release_name(req):
            p, kind = fetch.release_runtime(req), "release"
        if not p.is_file():
            raise InputError(
                f"--runtime {req}: no such file (expected auto, builtin, official, "
                "a release such as 0.1.12, or the path of a libtvm_ffi.so)"
            )
        p = p.resolve()
        off = official_runtime_path()
        try:
            builtin: Path | None = builtin_runtime_path()
        except InputError:
            builtin = None
        if kind == "path":
            kind = "builtin" if p == builtin else "official" if p == off else "path"
        return RuntimeChoice(
            kind, str(p), req, is_instrumented(p), f"requested with --runtime {req}"
        )
    p = builtin_runtime_path()
    if library is None:
        return RuntimeChoice("builtin", str(p), req, True, "auto: the builtin runtime")
    try:
        # The one table of what the builtin runtime exports (abi/release_exports.py).
        missing = list(builtin_missing(runtime_imports(library)))
    except (TvmffiError, OSError, ValueError):  # unreadable: the loader reports the file
        missing = []
    if not missing:
        return RuntimeChoice(
            "builtin",
            str(p),
            req,
            True,
            "auto: the builtin runtime provides every runtime symbol the library imports",
        )
    lacks = (
        f"the builtin runtime lacks {len(missing)} symbol"
        f"{'s' if len(missing) != 1 else ''} the library imports ({_short(missing)})"
    )
    # A release of the range has every symbol the table knows; a symbol no
    # release exports (the range ignores it) leaves no release to offer.
    in_range = candidates(library) if all(is_release_symbol(n) for n in missing) else []
    off = official_runtime_path()
    if off is not None:
        off_release = fetch.identify(off, False)[1]
        if off_release is None or off_release in in_range or not in_range:
            return RuntimeChoice(
                "official",
                str(off),
                req,
                False,
                f"auto: {lacks}; using the official runtime",
                tuple(missing),
            )
    for release in in_range:
        found = fetch.cached_runtime(release)
        if found is not None:
            return RuntimeChoice(
                "release",
                str(found),
                req,
                False,
                f"auto: {lacks}; using {release_label(release)}, the newest release of "
                f"the library's range ({_range_text(library)}) at hand",
                tuple(missing),
            )
    fix = (
        f"pass --runtime {in_range[0]} (the newest release of the library's range "
        f"{_range_text(library)}; tvmffi fetches it), "
        if in_range
        else ""
    )
    raise InputError(
        f"{lacks}; {fix}install the official runtime "
        f"(pip install {OFFICIAL_DIST}) or pass --runtime PATH"
    )


def candidates(library: PathLike) -> list[str]:
    """The known releases whose exports satisfy every runtime import of
    `library` (by symbols), newest first; [] when it cannot be read."""
    try:
        return list(reversed(runtime_range(runtime_imports(library)).ok_releases))
    except (TvmffiError, OSError, ValueError):
        return []


def _range_text(library: PathLike) -> str:
    return span(list(reversed(candidates(library))))


def is_auto(choice: RuntimeChoice) -> bool:
    """Did auto pick this runtime (so another may be tried after it fails)?"""
    return choice.requested in ("", "auto")


#: What the loader says when a DT_NEEDED library is not found (glibc's
#: dlerror): no other runtime changes that.
MISSING_DEPENDENCY = "cannot open shared object file"


def fallback(library: PathLike, failed: RuntimeChoice, why: str) -> RuntimeChoice | None:
    """Auto's next runtime after `failed` could not load `library` (`why`:
    what happened): the newest release of the library's range whose runtime is
    at hand and that was not tried yet, or None (hint() then says what to pass).
    None too when the user named the runtime (theirs is not second-guessed)
    and when a dependency of the library is missing (no runtime helps)."""
    if not is_auto(failed) or MISSING_DEPENDENCY in why:
        return None
    tried = (*failed.tried, (failed.label(), why))
    done = {failed.release, *(release_of_label(t[0]) for t in failed.tried)}
    for release in candidates(library):
        if release in done:
            continue
        found = fetch.cached_runtime(release)
        if found is None:
            continue
        return replace(
            _described(
                RuntimeChoice(
                    "release",
                    str(found),
                    failed.requested,
                    False,
                    f"auto: {_tried_text(tried)}; using {release_label(release)}, the "
                    f"newest other release of the library's range ({_range_text(library)}) "
                    "at hand",
                    failed.missing,
                )
            ),
            tried=tried,
        )
    return None


def _tried_text(tried: tuple[tuple[str, str], ...]) -> str:
    """ "the builtin runtime could not load the library (SIGABRT: ...), nor
    apache-tvm-ffi 0.1.12" """
    first, why = tried[0]
    why = why.removeprefix("it ")
    why = why if len(why) <= 160 else why[:159] + "…"
    rest = ", ".join(r for r, _ in tried[1:])
    return f"the {first} runtime could not load the library ({why})" + (
        f", nor {rest}" if rest else ""
    )


def hint(library: PathLike, failed: RuntimeChoice) -> str:
    """What to pass when auto found no runtime that loads `library`: the
    newest release of its range not tried yet ("" when there is none)."""
    done = {failed.release, *(release_of_label(t[0]) for t in failed.tried)}
    return _hint_text(library, failed.label(), done)


def hint_for_runtime(library: PathLike, runtime: str | None) -> str:
    """hint() for a load that failed on the runtime file `runtime` (None: the
    builtin one), as `call` and `conform` know it; "" when nothing helps."""
    if runtime is None:
        return _hint_text(library, "builtin", set())
    try:
        builtin = builtin_runtime_path()
    except InputError:
        builtin = None
    if builtin is not None and Path(runtime).resolve() == builtin.resolve():
        return _hint_text(library, "builtin", set())
    release = fetch.identify(Path(runtime), False)[1]
    label = release_label(release) if release else str(runtime)
    return _hint_text(library, label, {release})


def _hint_text(library: PathLike, label: str, done: set[str | None]) -> str:
    left = [r for r in candidates(library) if r not in done]
    if not left:
        return ""
    return (
        f"; it did not load on the {label} runtime: try --runtime {left[0]} or another "
        f"release of its range {_range_text(library)} (`tvmffi inspect "
        f"--verify-range` loads it on each; tvmffi fetches the one you name)"
    )


# ---------------------------------------------------------------------------
# a library's own words, when it dies while loading

# Lines of the worker's fault handler and of Python itself, not the library's.
_NOISE = (
    "Fatal Python error",
    "Current thread",
    "Thread 0x",
    "  File ",
    "Extension modules",
    "Stack (most recent",
    "<no Python frame>",
    "Python runtime state",
    "Aborted",
    "Segmentation fault",
    "(total:",
    "  <",
)
_MESSAGE_CHARS = 400


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() or c == "\t" else f"\\x{ord(c):02x}" for c in text)


def library_message(stderr: str) -> str:
    """What the library itself said on stderr before dying while loading
    (e.g. "terminate called after throwing an instance of 'std::runtime_error'
    what():  boom"), on one line with control characters escaped; "" when
    it said nothing."""
    kept = [
        ln.strip()
        for ln in stderr.splitlines()
        if ln.strip() and not ln.startswith(_NOISE) and not ln.strip().startswith("File ")
    ]
    text = _printable(" ".join(kept))
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 1] + "…"

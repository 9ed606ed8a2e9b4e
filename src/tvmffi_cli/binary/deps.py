"""What the loader may read to load a library: the file itself and the
directories its RUNPATH/RPATH names ($ORIGIN expanded), plus those of
LD_LIBRARY_PATH. The sandbox grants reads to these (and to the system
library directories) and to nothing else of the user's.

Also the libraries a library brings along (`sibling_libraries`: its DT_NEEDED
found next to it or on its RUNPATH) and so what it needs from the runtime
(`runtime_imports`: runtime symbols no sibling defines)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Binary


def load_read_paths(path: str | os.PathLike[str]) -> list[str]:
    from . import open_binary

    p = os.path.abspath(os.fspath(path))
    out = [p]
    origin = os.path.dirname(p)
    try:
        b = open_binary(p)
    except Exception:  # unreadable here: the worker will report it
        return out
    try:
        entries = list(b.extra.get("runpath", ()))
    finally:
        b.close()
    for entry in entries:
        for d in str(entry).split(":"):
            d = d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if d and os.path.isabs(d) and os.path.isdir(d):
                out.append(os.path.realpath(d))
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(":"):
        if d and os.path.isabs(d) and os.path.isdir(d):
            out.append(os.path.realpath(d))
    return out


#: How many libraries the DT_NEEDED walk reads at most (a wheel ships a few).
MAX_SIBLINGS = 64


def _search_dirs(b: Binary, origin: str) -> list[str]:
    # The loader's own order for a library: its RUNPATH/RPATH ($ORIGIN
    # expanded); then its own directory, where a wheel puts its siblings.
    out: list[str] = []
    for entry in b.extra.get("runpath", ()):
        for d in str(entry).split(":"):
            d = d.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)
            if d and os.path.isabs(d) and os.path.isdir(d):
                out.append(d)
    out.append(origin)
    return out


def sibling_libraries(binary: Binary) -> list[str]:
    """Paths of the libraries `binary` needs (DT_NEEDED, transitively) that sit
    in its own directory or one its RUNPATH names: the libraries a wheel ships
    with it. The runtime itself (libtvm_ffi.so) and system libraries (found
    nowhere there) are not siblings."""
    from ..abi.symbols import RUNTIME_LIBS
    from . import open_binary

    if not isinstance(binary.path, str) or not os.path.isfile(binary.path):
        return []
    seen: set[str] = {os.path.realpath(binary.path)}
    found: list[str] = []
    todo: list[tuple[Binary, str, bool]] = [(binary, os.path.dirname(binary.path), False)]
    while todo and len(found) < MAX_SIBLINGS:
        b, origin, close = todo.pop(0)
        try:
            needed = list(b.needed)
            dirs = _search_dirs(b, origin)
        finally:
            if close:
                b.close()
        for name in needed:
            if "/" in name or name.lower().startswith(RUNTIME_LIBS):
                continue
            hit = next(
                (os.path.join(d, name) for d in dirs if os.path.isfile(os.path.join(d, name))), None
            )
            if hit is None or os.path.realpath(hit) in seen:
                continue
            seen.add(os.path.realpath(hit))
            try:
                sib = open_binary(hit)
            except Exception:  # not a library we can read: the loader judges it
                continue
            found.append(hit)
            todo.append((sib, os.path.dirname(hit), True))
    for b, _o, close in todo:
        if close:
            b.close()
    return found


@dataclass(frozen=True)
class RuntimeNeeds:
    """What the libtvm_ffi.so hosting a library must provide: runtime symbols
    (C API functions, mangled tvm::ffi C++ names) that no library of its
    DT_NEEDED closure defines. `own`: those `binary` itself imports; `closure`:
    with those its sibling libraries import (loading it loads them too)."""

    own: tuple[str, ...]
    closure: tuple[str, ...]
    siblings: tuple[str, ...]  # paths of the sibling libraries read


def runtime_needs(binary: Binary) -> RuntimeNeeds:
    """The RuntimeNeeds of an opened library (its siblings are read, never run)."""
    from ..abi.versions import is_runtime_symbol
    from . import open_binary

    own = {n for n in binary.imports if is_runtime_symbol(n)}
    sibs = sibling_libraries(binary)
    if not sibs:
        return RuntimeNeeds(tuple(sorted(own)), tuple(sorted(own)), ())
    defined: set[str] = set()
    theirs: set[str] = set()
    for path in sibs:
        try:
            with open_binary(path) as sib:
                defined.update(_runtime_defined(sib))
                theirs.update(n for n in sib.imports if is_runtime_symbol(n))
        except Exception:  # unreadable sibling: its symbols stay imports
            continue
    own -= defined
    theirs -= defined
    if theirs:
        theirs -= _runtime_defined(binary)
    return RuntimeNeeds(tuple(sorted(own)), tuple(sorted(own | theirs)), tuple(sibs))


def _runtime_defined(b: Binary) -> set[str]:
    """The names b exports that could be runtime symbols (is_runtime_symbol
    needs one of these prefixes): only they can satisfy a runtime import, and
    a prefix search skips building every other symbol of a large library."""
    from ..abi.symbols import C_API_PREFIX

    return {s.name for s in b.find_symbols((C_API_PREFIX, "_Z"))}


def runtime_imports(binary: Binary) -> list[str]:
    """Sorted runtime symbols `binary` imports and none of its sibling
    libraries defines."""
    return list(runtime_needs(binary).own)

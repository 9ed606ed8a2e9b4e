"""Which files of a wheel (or a directory) are TVM-FFI libraries, from their
bytes only.

A TVM-FFI library exports `__tvm_ffi_*` symbols or `__TVMFFI<api>` context
symbols, or needs the runtime: it imports a C API function (`TVMFFI*`) or a
C++ symbol of namespace `tvm::ffi`, or links `libtvm_ffi`. A file that
*defines* the C API is a runtime (the wheel ships its own libtvm_ffi.so): it
is listed, not checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..abi.symbols import CTX_PREFIX, FUNC_PREFIX, RUNTIME_LIBS
from ..errors import InputError

TVM_FFI = "tvm-ffi"  # a library to check
RUNTIME = "runtime"  # defines the C API: a libtvm_ffi of the wheel's own
OTHER = "other"  # a library with nothing of TVM-FFI
UNREADABLE = "unreadable"  # named like a library but not one we read

#: Defined by every runtime release (abi/capi.py); its export marks a runtime.
_RUNTIME_MARK = "TVMFFIFunctionCall"


@dataclass(frozen=True)
class LibraryFile:
    member: str  # path inside the wheel / directory, '/'-separated
    path: str  # where it is on disk now (the temporary copy for a wheel)
    role: str  # TVM_FFI, RUNTIME, OTHER or UNREADABLE
    why: str  # the fact that decided the role
    #: what its runtime must provide: TVMFFI* C functions and tvm::ffi C++
    #: symbols it imports that no sibling library defines, and the C API
    #: names its __TVMFFI<api> context symbols receive
    runtime_imports: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"member": self.member, "role": self.role, "why": self.why}


def classify(member: str, path: str) -> LibraryFile:
    from ..binary import open_binary
    from ..binary.deps import runtime_imports

    try:
        b = open_binary(path)
    except InputError as e:  # FormatError too: not a library we read
        return LibraryFile(member, path, UNREADABLE, str(e).rsplit(": ", 1)[-1])
    try:
        if b.get(_RUNTIME_MARK) is not None:
            return LibraryFile(member, path, RUNTIME, f"defines the C API ({_RUNTIME_MARK})")
        ours = b.find_symbols((FUNC_PREFIX, CTX_PREFIX))
        imports = sorted(
            set(runtime_imports(b))
            | {s.name[len(CTX_PREFIX) :] for s in ours if s.name.startswith(CTX_PREFIX)}
        )
        links = [n for n in b.needed if n.rsplit("/", 1)[-1].lower().startswith(RUNTIME_LIBS)]
        if ours:
            why = f"exports {ours[0].name}" + (f" (+{len(ours) - 1})" if len(ours) > 1 else "")
        elif imports:
            why = f"imports {imports[0]}" + (f" (+{len(imports) - 1})" if len(imports) > 1 else "")
        elif links:
            why = f"links {links[0]}"
        else:
            return LibraryFile(member, path, OTHER, "nothing of TVM-FFI")
        return LibraryFile(member, path, TVM_FFI, why, tuple(imports))
    finally:
        b.close()


#: At most this many files are looked at in a directory given as input.
MAX_DIR_FILES = 100_000


def scan_directory(root: str) -> list[tuple[str, str]]:
    """(member, path) of every file named like a shared library below `root`,
    symlinks to the same file counted once; symlinked directories are not
    followed."""
    from .archive import LIBRARY_NAME

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    n = 0
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            n += 1
            if n > MAX_DIR_FILES:
                raise InputError(
                    f"{root}: more than {MAX_DIR_FILES} files; give a smaller directory"
                )
            if not LIBRARY_NAME.search(f):
                continue
            p = os.path.join(d, f)
            real = os.path.realpath(p)
            if real in seen or not os.path.isfile(real):
                continue
            seen.add(real)
            out.append((os.path.relpath(p, root).replace(os.sep, "/"), p))
    return out

"""The ctypes face of libtvmffi_sandbox.so (runtime/sandbox/*.c).

The C helper does the system calls (namespaces, Landlock, seccomp, prctl);
this module names its feature bits, finds the library, and turns the bitmasks
it reports into `Applied` (what was applied, what was asked for and not).
Only the worker process calls launch() and confine() (and a zygote worker
fork_orphan()); the parent only reads the names.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import ctypes

    from ..text import JsonDict

LIBRARY_ENV = "TVMFFI_SANDBOX_LIB"
_LIBNAME = "libtvmffi_sandbox.so"

#: Feature bits reported by the C helper (TVMFFI_SB_* there), by name.
FEATURES: dict[str, int] = {
    "die-with-parent": 1 << 0,
    "pid-namespace": 1 << 1,
    "net-namespace": 1 << 2,
    "subreaper": 1 << 3,
    "no-new-privs": 1 << 4,
    "capabilities-dropped": 1 << 5,
    "landlock-fs": 1 << 6,
    "landlock-net": 1 << 7,
    "landlock-scope": 1 << 8,
    "seccomp": 1 << 9,
    "user-namespace": 1 << 10,
    # RLIMIT_NPROC: applied for users other than root (the kernel exempts
    # root), so it is reported when applied and never counted as missing.
    "process-limit": 1 << 11,
    # A mount namespace of the worker's own; with a PID namespace, a fresh
    # /proc (CUDA's cuInit fails under the host's).
    "mount-namespace": 1 << 12,
    # Every mount read-only but the write paths: metadata (modes, owners,
    # times, xattrs) outside them cannot change (EROFS).
    "read-only-fs": 1 << 13,
    # The scratch directory is a tmpfs of the scratch bound: the kernel
    # counts every byte, at any depth, unlinked files included.
    "scratch-tmpfs": 1 << 14,
}
#: How the memory limit applied (bits beside FEATURES; see memory_mechanism).
CGROUP_BIT, MEMWATCH_BIT = 1 << 15, 1 << 16

#: Process-lifetime features: applied with and without --no-sandbox.
LIFETIME = ("die-with-parent", "pid-namespace", "subreaper", "mount-namespace", "scratch-tmpfs")
#: Confinement features: turned off by --no-sandbox.
CONFINEMENT = (
    "net-namespace",
    "no-new-privs",
    "read-only-fs",
    "capabilities-dropped",
    "landlock-fs",
    "landlock-net",
    "landlock-scope",
    "seccomp",
)

#: The memory mechanisms (the `memory_mechanism` of the sandbox field):
#: a cgroup v2 tvmffi made (memory.max, memory.swap.max 0, pids.max) holds
#: the worker's whole tree; else RLIMIT_DATA on each process and the
#: supervisor's watch of the tree's resident memory; RLIMIT_DATA alone
#: without the helper library.
MEMORY_MECHANISMS = ("cgroup-v2", "rlimit-data+watch", "rlimit-data")


def memory_mechanism(mask: int, limit: int | None) -> str | None:
    """What bounds the worker's memory, from launch()'s bits (None: no limit)."""
    if not limit:
        return None
    if mask & CGROUP_BIT:
        return "cgroup-v2"
    return "rlimit-data+watch" if mask & MEMWATCH_BIT else "rlimit-data"


def scratch_tmpfs_size(limit: int) -> int:
    """The size of the scratch tmpfs: the bound plus room to see it passed
    (tvmffi fails the step past the bound; the kernel stops writes here)."""
    return limit + max(limit // 8, 4 << 20)


@dataclass(frozen=True)
class Applied:
    """What the worker got. `missing`: asked for and not applied; `notes`:
    the kernel's reasons, one per refusal (empty when all was applied)."""

    enabled: bool
    applied: tuple[str, ...]
    missing: tuple[str, ...]
    notes: tuple[str, ...]
    memory_limit: int | None = None
    cpu_limit: int | None = None
    #: One of MEMORY_MECHANISMS (None: no memory limit).
    memory_mechanism: str | None = None

    def to_json(self) -> JsonDict:
        return {
            "enabled": self.enabled,
            "applied": list(self.applied),
            "missing": list(self.missing),
            "notes": list(self.notes),
            "memory_limit": self.memory_limit,
            "memory_mechanism": self.memory_mechanism,
            "cpu_limit": self.cpu_limit,
        }

    @classmethod
    def from_json(cls, d: object) -> Applied:
        if not isinstance(d, dict):
            return cls(False, (), (), ("the worker reported no sandbox",))

        def names(key: str) -> tuple[str, ...]:
            v = d.get(key)
            return tuple(str(x) for x in v) if isinstance(v, list) else ()

        ml, cl, mm = d.get("memory_limit"), d.get("cpu_limit"), d.get("memory_mechanism")
        return cls(
            bool(d.get("enabled")),
            names("applied"),
            names("missing"),
            names("notes"),
            ml if isinstance(ml, int) else None,
            cl if isinstance(cl, int) else None,
            mm if mm in MEMORY_MECHANISMS else None,
        )


def names_of(mask: int) -> tuple[str, ...]:
    return tuple(n for n, bit in FEATURES.items() if mask & bit)


def mask_of(names: tuple[str, ...] | list[str]) -> int:
    m = 0
    for n in names:
        m |= FEATURES[n]
    return m


def package_dirs() -> list[str]:
    """Every directory of the tvmffi_cli package (an editable install spreads
    it over the source tree and site-packages)."""
    pkg = sys.modules[__name__.split(".")[0]]
    return list(getattr(pkg, "__path__", []))


def library_path() -> Path | None:
    """libtvmffi_sandbox.so next to our libtvm_ffi.so (or TVMFFI_SANDBOX_LIB)."""
    env = os.environ.get(LIBRARY_ENV)
    if env:
        p = Path(env)
        return p.resolve() if p.is_file() else None
    for d in package_dirs():
        p = Path(d) / "lib" / _LIBNAME
        if p.is_file():
            return p.resolve()
    return None


def _lib() -> Any:
    import ctypes

    p = library_path()
    if p is None:
        return None
    # PyDLL keeps the GIL across the call: launch() forks inside it.
    lib = ctypes.PyDLL(str(p))
    lib.tvmffi_sandbox_landlock_abi.restype = ctypes.c_int
    lib.tvmffi_sandbox_landlock_abi.argtypes = []
    lib.tvmffi_sandbox_launch.restype = ctypes.c_int
    lib.tvmffi_sandbox_launch.argtypes = [
        ctypes.c_uint,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_ulonglong,
        ctypes.c_char_p,
        ctypes.c_ulonglong,
        ctypes.POINTER(ctypes.c_uint),
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    if hasattr(lib, "tvmffi_sandbox_fork_orphan"):
        lib.tvmffi_sandbox_fork_orphan.restype = ctypes.c_int
        lib.tvmffi_sandbox_fork_orphan.argtypes = []
    if hasattr(lib, "tvmffi_sandbox_zygote_serve"):
        lib.tvmffi_sandbox_zygote_serve.restype = ctypes.c_int
        lib.tvmffi_sandbox_zygote_serve.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
    lib.tvmffi_sandbox_confine.restype = ctypes.c_int
    lib.tvmffi_sandbox_confine.argtypes = [
        ctypes.c_uint,
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_char_p),
        ctypes.POINTER(ctypes.c_uint),
        ctypes.c_char_p,
        ctypes.c_size_t,
    ]
    return lib


def landlock_abi() -> int:
    lib = _lib()
    return int(lib.tvmffi_sandbox_landlock_abi()) if lib is not None else 0


def _notes(buf: ctypes.Array[ctypes.c_char]) -> tuple[str, ...]:
    text = buf.value.decode("utf-8", "replace")
    return tuple(s.strip() for s in text.split(";") if s.strip())


def launch(
    want: tuple[str, ...],
    lifeline_fd: int,
    status_fd: int,
    cgroup_fd: int = -1,
    memory_limit: int | None = None,
    scratch: str = "",
    scratch_size: int = 0,
) -> tuple[int, tuple[str, ...]]:
    """Become the worker under a supervisor and a namespace init (see the C
    file). Returns (applied mask, notes) in the worker; the supervisor and the
    init never return. cgroup_fd: cgroup.procs of the cgroup the tree joins
    (closed by the helper, in every process); memory_limit: for the
    supervisor's watch when the tree is in no cgroup; scratch: the directory
    a tmpfs of scratch_size bytes covers (with "scratch-tmpfs" wanted).
    Without the helper: (0, (reason,))."""
    import ctypes

    lib = _lib()
    if lib is None:
        return 0, (f"{_LIBNAME} not found: process lifetime rests on the process group",)
    applied = ctypes.c_uint(0)
    note = ctypes.create_string_buffer(1024)
    rc = lib.tvmffi_sandbox_launch(
        mask_of(want),
        lifeline_fd,
        status_fd,
        cgroup_fd,
        memory_limit or 0,
        os.fsencode(scratch),
        scratch_size,
        ctypes.byref(applied),
        note,
        len(note),
    )
    if rc != 0:
        return 0, (f"fork: {os.strerror(ctypes.get_errno() or 11)}",)
    return int(applied.value), _notes(note)


def _paths(items: list[str]) -> ctypes.Array[ctypes.c_char_p]:
    import ctypes

    arr = (ctypes.c_char_p * (len(items) + 1))()
    for i, s in enumerate(items):
        arr[i] = os.fsencode(s)
    arr[len(items)] = None
    return arr


def confine(
    want: tuple[str, ...],
    read_paths: list[str],
    write_paths: list[str],
    in_pidns: bool = False,
    in_mountns: bool = False,
) -> tuple[int, tuple[str, ...]]:
    """Confine this process (irreversibly). Returns (applied mask, notes).
    in_pidns: the worker is in its own PID namespace, where every pid it can
    name is its own, so scheduling calls on its threads stay allowed;
    in_mountns: in its own mount namespace, which may be made read-only."""
    import ctypes

    lib = _lib()
    if lib is None:
        return 0, (f"{_LIBNAME} not found: no kernel confinement",)
    applied = ctypes.c_uint(0)
    note = ctypes.create_string_buffer(4096)
    lib.tvmffi_sandbox_confine(
        mask_of(want)
        | (FEATURES["pid-namespace"] if in_pidns else 0)
        | (FEATURES["mount-namespace"] if in_mountns else 0),
        _paths(read_paths),
        _paths(write_paths),
        ctypes.byref(applied),
        note,
        len(note),
    )
    return int(applied.value), _notes(note)


_fork_lib: list[Any] = []  # the helper, looked up once per worker


def fork_orphan() -> int | None:
    """Fork a copy of this (single-threaded) worker whose parent is the
    supervisor's init, with Python's fork hooks around it: 0 in the copy,
    its pid here; None when the helper cannot (the caller forks twice)."""
    import ctypes

    if not _fork_lib:
        _fork_lib.append(_lib())
    lib = _fork_lib[0]
    if lib is None or not hasattr(lib, "tvmffi_sandbox_fork_orphan"):
        return None
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = int(lib.tvmffi_sandbox_fork_orphan())
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    api.PyOS_AfterFork_Parent()
    return pid if pid > 0 else None


def has_order_loop() -> bool:
    """Whether the sandbox helper has the zygote's order loop in C."""
    if not _fork_lib:
        _fork_lib.append(_lib())
    lib = _fork_lib[0]
    return lib is not None and hasattr(lib, "tvmffi_sandbox_zygote_serve")


def serve_orders(order_fd: int) -> int | None:
    """The zygote's order loop in C (tvmffi_sandbox_zygote_serve; see
    has_order_loop), which forks the probe children: in one, the pipe it
    reads its order from once Python's after-fork hooks ran; None in the
    zygote when the orders ended (or one was cut)."""
    import ctypes

    # Looked up before the fork: a lookup in each child costs it pages.
    after_fork = ctypes.pythonapi.PyOS_AfterFork_Child
    fd = ctypes.c_int(-1)
    if int(_fork_lib[0].tvmffi_sandbox_zygote_serve(order_fd, ctypes.byref(fd))) != 0:
        return None
    after_fork()
    return fd.value

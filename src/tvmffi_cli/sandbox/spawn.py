"""Start a worker process: a fork of this process where that is safe, else `python -I`.

A second interpreter start-up (start, imports, task imports) costs more than
the rest of a `tvmffi call`; a fork of the parent, taken after its imports,
costs a few milliseconds. The forked child turns itself into what `python -I
-c BOOT` would have been (its own session, stdin on /dev/null, output on the
capture pipe, no descriptor but the channel's, the allow-listed environment,
the scratch directory, an isolated sys.path) and runs the same worker main:
key, config, limits, supervisor and namespace init, confinement, greeting.

Forking is refused (fork_refusal) and the worker exec'd as before when:
TVMFFI_WORKER_EXEC=1; another interpreter was asked for; the parent runs a
second thread (a fork would copy its locks mid-use); the parent's environment
holds a credential-like name (the fork's memory is a copy of the parent's,
which held it); what the dynamic loader or the interpreter read at start-up
(LD_*, GLIBC_TUNABLES, MALLOC_*, locale, PYTHON*) would differ from the
worker's; or the libraries to load need more static TLS than glibc keeps for late
loads by default (only the exec'd worker gets the larger reserve, a start-up
tunable).
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any, NoReturn

from . import environ

#: The name of every thread the sandbox starts in the parent.
THREAD_PREFIX = "tvmffi-"
#: Set to 1: always start workers as a new interpreter (the exec path).
EXEC_ENV = "TVMFFI_WORKER_EXEC"

# PYTHON* variables that change nothing the worker's isolation rests on.
_HARMLESS_PYTHON = frozenset(
    {"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONIOENCODING"}
)
_STATIC_TLS_TUNABLE = "glibc.rtld.optional_static_tls"
_DT_FLAGS, _DF_STATIC_TLS, _PT_DYNAMIC, _PT_TLS = 30, 0x10, 2, 7
#: Static TLS a late-loaded library may take without the exec path's reserve:
#: glibc.rtld.optional_static_tls's default, kept for exactly this.
STATIC_TLS_BUDGET = 512
_UNKNOWN_TLS = 1 << 30
_PARENT_STREAMS: list[object] = []


class Forked:
    """The part of subprocess.Popen the Worker uses, for a forked child."""

    #: The worker's stdin is /dev/null, as with Popen(stdin=DEVNULL).
    stdin = None

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return self.returncode
            if pid == self.pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            while self.returncode is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                except ChildProcessError:
                    self.returncode = self.returncode or 0
                    break
                self.returncode = os.waitstatus_to_exitcode(status)
            return self.returncode
        deadline = time.monotonic() + timeout
        if self.poll() is None and self._wait_pidfd(timeout):
            self.poll()
        delay = 0.0005
        while self.poll() is None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout)
            time.sleep(min(delay, left))
            delay = min(delay * 2, 0.05)
        assert self.returncode is not None
        return self.returncode

    def _wait_pidfd(self, timeout: float) -> bool:
        """Sleep until the child ends (True) or `timeout` passes, woken by the
        kernel rather than by polling; False where pidfds are missing."""
        import select

        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            return False
        try:
            return bool(select.select([fd], [], [], timeout)[0])
        finally:
            os.close(fd)

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def strip_static_tls(tunables: str) -> str:
    """GLIBC_TUNABLES without the static TLS reserve process.py adds."""
    return ":".join(t for t in tunables.split(":") if t and not t.startswith(_STATIC_TLS_TUNABLE))


def _exec_time(name: str) -> bool:
    """Read by the loader, libc or the interpreter when a process starts."""
    if name.startswith("PYTHON"):
        return name not in _HARMLESS_PYTHON
    return name.startswith(("LD_", "MALLOC_", "LC_")) or name in ("LANG", "GLIBC_TUNABLES")


def static_tls_bytes(path: str) -> int:
    """Static TLS the ELF file takes when loaded late: the size of its TLS
    segment when it sets DF_STATIC_TLS (initial-exec TLS), else 0. Files we
    cannot read as 64-bit little-endian ELF count as needing too much;
    other files (inputs) need none."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if head[:4] != b"\x7fELF":
                return 0
            if head[4] != 2 or head[5] != 1:
                return _UNKNOWN_TLS
            phoff = struct.unpack_from("<Q", head, 32)[0]
            phentsize, phnum = struct.unpack_from("<HH", head, 54)
            f.seek(phoff)
            phdrs = f.read(phentsize * phnum)
            tls, static = 0, False
            for i in range(phnum):
                p_type, _, p_off, _, _, p_filesz, p_memsz, p_align = struct.unpack_from(
                    "<IIQQQQQQ", phdrs, i * phentsize
                )
                if p_type == _PT_TLS:
                    align = max(p_align, 1)
                    tls = (p_memsz + align - 1) // align * align
                elif p_type == _PT_DYNAMIC:
                    f.seek(p_off)
                    dyn = f.read(min(p_filesz, 1 << 20))
                    for j in range(0, len(dyn) - 15, 16):
                        tag, val = struct.unpack_from("<qQ", dyn, j)
                        if tag == 0:
                            break
                        if tag == _DT_FLAGS and val & _DF_STATIC_TLS:
                            static = True
            return tls if static else 0
    except (OSError, struct.error, IndexError):
        return _UNKNOWN_TLS


def own_runtime() -> str:
    """Our libtvm_ffi.so, which a worker loads when no runtime is named
    (next to libtvmffi_sandbox.so); "" when not built."""
    from .kernel import library_path

    lib = library_path()
    return str(lib.parent / "libtvm_ffi.so") if lib is not None else ""


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 2  # cannot tell: assume the worst


def _single_threaded() -> bool:
    """Only this thread runs, after giving our own threads of a worker that
    just ended (its output relay, its scratch watch) a moment to finish."""
    deadline = time.monotonic() + 0.1
    while True:
        others = [t for t in threading.enumerate() if t is not threading.current_thread()]
        if not others and _threads() == 1:
            return True
        ours = all(t.name.startswith(THREAD_PREFIX) for t in others)
        if not ours or time.monotonic() > deadline:
            return False
        time.sleep(0.002)


def fork_refusal(child_env: dict[str, str], python: str, libraries: Iterable[str]) -> str | None:
    """Why this worker must be a new interpreter; None when forking is safe."""
    if os.environ.get(EXEC_ENV) == "1":
        return f"{EXEC_ENV}=1"
    if not hasattr(os, "fork") or python != sys.executable:
        return "another interpreter"
    if not _single_threaded():
        return "the parent runs other threads"
    ours = os.environ
    secret = [n for n in ours if environ.may_hold_secret(n) and n not in child_env]
    if secret:
        return f"the parent's environment holds {secret[0]}"
    for name in sorted({*ours, *child_env}):
        if not _exec_time(name):
            continue
        want = child_env.get(name)
        if name == "GLIBC_TUNABLES" and want is not None:
            want = strip_static_tls(want) or None
        if ours.get(name) != want:
            return f"{name} differs from the parent's"
    need = sum(static_tls_bytes(lib) for lib in libraries if os.path.isfile(lib))
    if need > STATIC_TLS_BUDGET:
        return f"the libraries need {need} bytes of static TLS"
    return None


def _scrub_environment(env: dict[str, str]) -> None:
    """Only the allow-listed environment, everywhere the library can look:
    os.environ (and libc's environ), posix.environ, and the environment
    block the kernel shows as /proc/self/environ."""
    import ctypes
    import posix

    os.environ.clear()
    posix.environ.clear()
    for k, v in env.items():
        os.environ[k] = v
        posix.environ[os.fsencode(k)] = os.fsencode(v)
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        # env_start, env_end: fields 50 and 51 (1-based), counted from the
        # state (field 3), the first after the command name.
        start, end = int(fields[47]), int(fields[48])
        if 0 < start < end:
            ctypes.memset(start, 0, end - start)
    except (OSError, ValueError, IndexError):
        pass


def _close_other_fds(keep: Iterable[int]) -> None:
    low = 3
    for fd in sorted(k for k in set(keep) if k >= 3):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _isolated_path(src: str) -> list[str]:
    """sys.path as `python -I` has it: the interpreter's own directories and
    the package, never the current directory, user site or PYTHONPATH."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    keep = [src]
    for p in sys.path:
        if p and os.path.isabs(p) and p not in keep:
            if any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots):
                keep.append(p)
    return keep


def fork_worker(
    argv: list[str], out_fd: int, keep: Iterable[int], scratch: str, env: dict[str, str]
) -> Forked:
    """Fork; the child becomes a worker (worker.main(argv)) and never returns."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    keep = tuple(keep)
    # The worker's libc started with ours: its GLIBC_TUNABLES is ours.
    env = {k: v for k, v in env.items() if k != "GLIBC_TUNABLES"}
    if "GLIBC_TUNABLES" in os.environ:
        env["GLIBC_TUNABLES"] = os.environ["GLIBC_TUNABLES"]
    pid = os.fork()
    if pid:
        return Forked(pid)
    code = 1
    try:
        code = _child(argv, out_fd, keep, scratch, env)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _exit(code)


def _exit(code: int) -> NoReturn:
    """End the worker as a process ends: its own atexit handlers, then libc's
    exit(), which runs the library's destructors and atexit handlers (conform's
    exit-clean, a destructor that crashes or hangs) but unwinds none of the
    parent's Python frames it was forked from (their cleanups are the parent's)."""
    import atexit
    import ctypes
    import faulthandler

    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    # As after an interpreter's finalization: no Python-level fault handler
    # (faulthandler, a ctypes callback) catches a fault in a destructor.
    faulthandler.disable()
    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT):
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    try:
        libc = ctypes.CDLL(None)
        libc.exit.argtypes = [ctypes.c_int]
        libc.exit(code)
    finally:
        os._exit(code)


def _child(
    argv: list[str], out_fd: int, keep: tuple[int, ...], scratch: str, env: dict[str, str]
) -> int:
    import atexit
    import faulthandler
    import gc

    atexit._clear()  # the parent's exit handlers are the parent's

    # The parent's garbage is not collected here: its finalizers could close
    # descriptors whose numbers the worker has reused.
    gc.freeze()
    gc.enable()  # as in a new interpreter, whatever the parent chose
    faulthandler.disable()
    os.setsid()
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    for sig in signal.valid_signals():
        try:
            if callable(signal.getsignal(sig)) and sig != signal.SIGINT:
                signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, TypeError):
            pass
    signal.signal(signal.SIGINT, signal.default_int_handler)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    _close_other_fds(keep)
    # The parent's sys.std* may be objects of its own (a test's capture, a
    # rich console's file) over descriptors closed above.
    # Kept alive: freeing one would close the descriptor it wrapped (now ours).
    _PARENT_STREAMS.extend((sys.stdin, sys.stdout, sys.stderr))
    sys.stdin = open(0, closefd=False)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
    os.chdir(scratch)
    _scrub_environment(env)
    tf: Any = sys.modules.get("tempfile")
    if tf is not None:
        tf.tempdir = None  # the parent's choice is cached; the worker's is TMPDIR
    src = argv[0]
    sys.path[:] = _isolated_path(src)
    sys.argv[:] = ["-c", *argv]
    from .worker import main

    return main(argv[1:])

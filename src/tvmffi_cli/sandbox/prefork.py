"""A worker forked before the command has worked out its request.

Most of a `tvmffi call` is the parent importing what builds the request and
starts the worker; a worker forked at the very start imports its own modules
(the sandbox's, ctypes, the FFI layer) on another core meanwhile. Until the
parent's go, the child runs only tvmffi's imports: it is not confined yet,
holds nothing but what the parent held at its start, and loads no library.
The go (spawn.fork_worker) carries the worker's descriptors (SCM_RIGHTS) and
what a fork at that moment would have been given; from there the child is
exactly that fork (spawn.become_worker): same isolation, same confinement.
A parent that ends, or decides on an exec'd worker, closes the socket
instead, and the child exits without a word.

Imports here stay few: start() runs before the command's own imports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

#: Set to 1: always start workers as a new interpreter (no fork, no prefork).
EXEC_ENV = "TVMFFI_WORKER_EXEC"
_MAX_GO = 1 << 20
_HIGH_FD = 512  # received descriptors are parked above every one they replace


class Prefork:
    """The pending child: its pid and our end of its socket."""

    def __init__(self, pid: int, sock: int) -> None:
        self.pid = pid
        self.sock = sock

    def go(
        self, argv: list[str], out_fd: int, keep: Iterable[int], scratch: str, env: dict[str, str]
    ) -> bool:
        """Hand the child its descriptors and orders; False (and the child
        reaped) when it is gone, e.g. killed by a Ctrl-C while importing."""
        import json
        import socket

        keep = list(keep)
        doc = {"argv": argv, "out_fd": out_fd, "keep": keep, "scratch": scratch, "env": env}
        data = json.dumps(doc).encode()
        s = socket.socket(fileno=self.sock)
        try:
            sent = socket.send_fds(s, [data], [out_fd, *keep])
            ok = sent == len(data)
        except OSError:
            ok = False
        finally:
            s.close()
        if not ok:
            _reap(self.pid)
        return ok

    def discard(self) -> None:
        os.close(self.sock)
        _reap(self.pid)


_pending: Prefork | None = None


def start(warm: Iterable[str] = ()) -> None:
    """Fork the pending worker now: once per process, single-threaded, not
    with TVMFFI_WORKER_EXEC=1. `warm`: modules its task will import."""
    global _pending
    if _pending is not None or os.environ.get(EXEC_ENV) == "1" or not hasattr(os, "fork"):
        return
    try:
        if len(os.listdir("/proc/self/task")) != 1:
            return  # a fork would copy another thread's locks mid-use
        import socket

        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except (OSError, ImportError, AttributeError):
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    pid = os.fork()
    if pid:
        theirs.close()
        _pending = Prefork(pid, mine.detach())
        return
    code = 0
    try:
        mine.close()
        code = _child(theirs.detach(), list(warm))
    except BaseException:
        code = 1
    os._exit(code)


def take() -> Prefork | None:
    """The pending worker, once (None when there is none)."""
    global _pending
    pre, _pending = _pending, None
    return pre


def discard() -> None:
    """End the pending worker, if any (the parent starts another kind)."""
    pre = take()
    if pre is not None:
        pre.discard()


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


def _child(sock: int, warm: list[str]) -> int:
    import importlib
    import json
    import socket

    from . import spawn

    for name in ("tvmffi_cli.sandbox.worker", *warm):
        try:
            importlib.import_module(name)
        except Exception:
            pass
    s = socket.socket(fileno=sock)
    data, fds, _, _ = socket.recv_fds(s, _MAX_GO, 16)
    s.close()
    if not data:
        return 0  # the parent went away or chose another start
    doc = json.loads(data)
    want = [doc["out_fd"], *doc["keep"]]
    if len(fds) != len(want):
        return 1
    _place(fds, want)
    spawn.become_worker(doc["argv"], doc["out_fd"], tuple(doc["keep"]), doc["scratch"], doc["env"])


def _place(got: list[int], want: list[int]) -> None:
    """Give each received descriptor the number it has in the parent (the
    argv and the Config name them so); whatever held those numbers here is
    the parent's and is closed anyway when the worker starts."""
    import fcntl

    base = max(_HIGH_FD, *got, *want) + 1
    parked = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base) for fd in got]
    for fd in got:
        os.close(fd)
    for fd, to in zip(parked, want):
        os.dup2(fd, to, inheritable=False)
        os.close(fd)

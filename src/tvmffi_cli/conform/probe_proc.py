"""The probe child's process (child side of conform's probe): which process
may speak for the probe, and the threads of the thread-safety step.

A library may fork (TVM's RPC pipe client does, and execs nothing when no
command is given): the forked process would then return into our code, a
second prober on the same channel. `end_forks()` ends such a process inside
fork; `ours()` ends one that got back to us some other way, before it calls
anything again or writes a byte.
"""

from __future__ import annotations

import _thread
import os
from typing import Callable

#: The process that probes (the zygote's probe child once it forked one).
OWNER = [os.getpid()]


def ours() -> None:
    """After library code returns: a process the library forked that came
    back into our code (its exec failed, or it never meant one) ends here,
    before it calls anything again or speaks on the channel for us."""
    if os.getpid() != OWNER[0]:
        os._exit(127)


def _fork_handler() -> Callable[[], object] | None:
    """end_forks' work, looked up once (in the zygote, before it forks)."""
    import ctypes

    libc = ctypes.CDLL(None)
    handler = ctypes.cast(libc.abort, ctypes.c_void_p).value
    try:
        # glibc exports pthread_atfork's implementation under this name (the
        # symbol itself lives in libc_nonshared.a); the last argument is the
        # DSO the handlers belong to, for dlclose: none.
        register = libc.__register_atfork
        register.argtypes = [ctypes.c_void_p] * 4
        return lambda: register(None, None, handler, None)
    except AttributeError:
        try:
            atfork = libc.pthread_atfork
            atfork.argtypes = [ctypes.c_void_p] * 3
            return lambda: atfork(None, None, handler)
        except AttributeError:
            return None  # another C library: ours() still ends what comes back to us


_REGISTER_FORK_HANDLER = _fork_handler()


def end_forks() -> None:
    """From now on a process the library forks here dies at once by SIGABRT
    (glibc runs fork's child handlers before fork returns in the child):
    it never returns into the library or into our code. Without this, a
    child forked while another of our threads held the GIL would wait for
    it forever, and its parent (the probe) with it. Spawned programs
    (posix_spawn, system) run no fork handlers and are not affected."""
    if _REGISTER_FORK_HANDLER is not None:
        _REGISTER_FORK_HANDLER()


def payload_i64(raw: bytes) -> int:
    """The payload of an int Any."""
    return int.from_bytes(raw[8:16], "little", signed=True)


class Crew:
    """n threads kept for the probe child's life, started with `_thread`
    (threading's bookkeeping cost more than the calls, in every probe
    child). Each thread waits on a gate of its own; run() opens them all
    for a job, and the last thread to finish opens `done`."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._job: Callable[[int], None] | None = None
        self._gates = [_thread.allocate_lock() for _ in range(size)]
        for g in self._gates:
            g.acquire()
        self._done = _thread.allocate_lock()
        self._done.acquire()
        self._count = _thread.allocate_lock()
        self._left = 0
        for i in range(size):
            _thread.start_new_thread(self._loop, (i,))

    def _loop(self, i: int) -> None:
        while True:
            self._gates[i].acquire()
            job = self._job
            try:
                if job is not None:
                    job(i)
            finally:
                with self._count:
                    self._left -= 1
                    if self._left == 0:
                        self._done.release()

    def run(self, job: Callable[[int], None]) -> None:
        self._job = job
        self._left = self.size
        for g in self._gates:
            g.release()
        self._done.acquire()
        self._job = None

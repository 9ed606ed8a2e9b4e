"""The probe child's process (child side of conform's probe): which process
may speak for the probe, and the threads of the thread-safety step.

A library may fork (TVM's RPC pipe client does, and execs nothing when no
command is given): the forked process then returns into our code, a second
prober on the same channel. `ours()` ends such a process as soon as library
code returns to us, before it calls anything again or writes a byte.
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

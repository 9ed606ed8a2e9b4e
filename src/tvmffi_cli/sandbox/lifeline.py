"""The lifeline to a worker's supervisor (runtime/sandbox, tvmffi_sandbox_launch).

A byte written on it, or its end hung up, makes the supervisor kill every
descendant of the worker and exit. Two threads may use it at once: the
thread that runs the worker closes it, and an interrupt aborts the worker
from the main thread (process.Worker.abort); a lock keeps a write from
landing on a descriptor that was closed and reused meanwhile.
"""

from __future__ import annotations

import os
import threading


class Lifeline:
    """The write end of a worker's lifeline (None: no supervisor holds one)."""

    def __init__(self, fd: int | None = None) -> None:
        self._fd = fd
        self._lock = threading.Lock()

    def ask_kill(self) -> bool:
        """Ask the supervisor to kill the worker's tree: False when the line
        is closed or the byte could not be written."""
        with self._lock:
            if self._fd is None:
                return False
            try:
                return os.write(self._fd, b"k") == 1
            except OSError:
                return False

    def close(self) -> None:
        """Hang up (the supervisor kills the tree, as for a byte)."""
        with self._lock:
            if self._fd is not None:
                try:
                    os.close(self._fd)
                except OSError:
                    pass
                self._fd = None

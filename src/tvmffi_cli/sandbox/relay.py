"""Relays a worker's stdout+stderr to ours, each line marked `[lib] ` and
sanitized, up to RELAY_CAP bytes; keeps the last bytes for crash reports."""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from typing import Any

from .. import text
from .threads import leave_interrupts_to_main

#: Library output relayed to our stderr per worker; the rest is counted, not shown.
RELAY_CAP = 1 << 20
TAIL = 4096


class Relay(threading.Thread):
    """Copies the worker's stdout+stderr to ours, each line marked `[lib] `
    and sanitized, up to RELAY_CAP bytes; keeps the last bytes for reports."""

    def __init__(self, fd: int, mode: Any) -> None:
        super().__init__(daemon=True, name="tvmffi-lib-output")
        self.fd = fd
        self.mode = mode
        self.tail = bytearray()
        self.relayed = 0
        self.dropped = 0
        #: Bytes read so far (a probe child's output is what came after its start).
        self.total = 0
        # Held from a read to the tail's update: settle() sees both or neither.
        self._lock = threading.Lock()

    def settle(self, timeout: float = 1.0) -> None:
        """Wait until every byte written so far is in the tail (the writer
        that matters is dead, others may live on: no end of stream to wait for)."""
        import fcntl
        import termios

        deadline = time.monotonic() + timeout
        buf = bytearray(4)
        while time.monotonic() < deadline and self.is_alive():
            with self._lock:
                try:
                    fcntl.ioctl(self.fd, termios.FIONREAD, buf)
                except OSError:
                    return
                if int.from_bytes(buf, sys.byteorder) == 0:
                    return
            time.sleep(0.001)

    def since(self, mark: int) -> bytes:
        """The kept tail of what was written after `mark` (a value of total)."""
        with self._lock:
            n = min(self.total - mark, len(self.tail))
            return bytes(self.tail[len(self.tail) - n :]) if n > 0 else b""

    def _show(self, line: bytes) -> None:
        if self.mode == "relay":
            if self.relayed >= RELAY_CAP:
                self.dropped += len(line)
                return
            self.relayed += len(line)
            msg = text.terminal(text.from_bytes(line.rstrip(b"\n")), one_line=True)
            try:
                sys.stderr.write(f"[lib] {msg}\n")
                sys.stderr.flush()
            except (OSError, ValueError):
                pass
        elif hasattr(self.mode, "write"):
            try:
                self.mode.write(line)
            except (OSError, ValueError, TypeError):
                pass

    def run(self) -> None:
        leave_interrupts_to_main()
        pending = b""
        while True:
            try:
                select.select([self.fd], [], [])
                with self._lock:
                    chunk = os.read(self.fd, 1 << 16)
                    self.tail += chunk
                    del self.tail[:-TAIL]
                    self.total += len(chunk)
            except (OSError, ValueError):
                break
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._show(line + b"\n")
            if len(pending) > 4096:
                self._show(pending)
                pending = b""
        if pending:
            self._show(pending)
        if self.dropped and self.mode == "relay":
            try:
                sys.stderr.write(
                    f"[lib] ({self.dropped} more bytes of library output "
                    f"not shown: cap {RELAY_CAP})\n"
                )
            except (OSError, ValueError):
                pass
        try:
            os.close(self.fd)
        except OSError:
            pass

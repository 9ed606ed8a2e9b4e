"""Relays a worker's stdout+stderr to ours, each line marked `[lib] ` and
sanitized, up to RELAY_CAP bytes; keeps the last bytes for crash reports."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from .. import text

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
        pending = b""
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            self.tail += chunk
            del self.tail[:-TAIL]
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

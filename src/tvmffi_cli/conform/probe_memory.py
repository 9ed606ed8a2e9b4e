"""Memory helpers of the conform probe (child side): a guard-page arena for
argument arrays and its fault report (ffi/guardpages.py, shared with `tvmffi
call`), and a check that memory is readable without touching it."""

from __future__ import annotations

import mmap
import os

# The probe's names for the shared guard-page helpers (re-exported).
from ..ffi.guardpages import _LIBC as _LIBC
from ..ffi.guardpages import ANY as ANY
from ..ffi.guardpages import FAULT_MARK as FAULT_MARK
from ..ffi.guardpages import CannotSynthesize as CannotSynthesize
from ..ffi.guardpages import GuardArena as GuardArena
from ..ffi.guardpages import no_access as no_access
from ..ffi.guardpages import note_device_range as note_device_range
from ..ffi.guardpages import report_faults as report_faults


class Readable:
    """readable(addr, n): can this process read [addr, addr+n)? Asks the
    kernel (a write() from that memory into a pipe fails with EFAULT) instead
    of touching it, so a garbage pointer in a result cannot crash the probe.
    One byte per page is enough: protection is per page."""

    LIMIT = 1 << 26

    def __init__(self) -> None:
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.page = mmap.PAGESIZE
        # Bytes in the pipe: it is drained only when nearly full (a pipe holds
        # at least 4096), not after every check.
        self.pending = 0

    def __call__(self, addr: int | None, n: int) -> bool:
        if not addr or addr < 4096 or n < 0 or n > self.LIMIT or addr + n >= 1 << 64:
            return False
        end = addr + max(n, 1)
        p = addr
        while p < end:
            if self.pending >= 4000:
                self._drain()
            if _LIBC.write(self.w, p, 1) != 1:
                # EFAULT, or a pipe filled behind our count (threads): retry drained.
                self._drain()
                if _LIBC.write(self.w, p, 1) != 1:
                    return False
            self.pending += 1
            p = (p // self.page + 1) * self.page
        return True

    def _drain(self) -> None:
        self.pending = 0
        try:
            while os.read(self.r, 65536):
                pass
        except BlockingIOError:
            pass

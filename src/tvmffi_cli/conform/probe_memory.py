"""Memory helpers of the conform probe (child side): a guard-page arena for
argument arrays and a check that memory is readable without touching it."""

from __future__ import annotations

import ctypes
import mmap
import os
from ctypes import c_int, c_size_t, c_void_p

from ..abi.structs import TVMFFIAny

#: Size of one TVMFFIAny.
ANY = ctypes.sizeof(TVMFFIAny)
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = c_void_p
_LIBC.mmap.argtypes = [c_void_p, c_size_t, c_int, c_int, c_int, ctypes.c_long]
_LIBC.mprotect.argtypes = [c_void_p, c_size_t, c_int]
_LIBC.write.argtypes = [c_int, c_void_p, c_size_t]
_LIBC.write.restype = ctypes.c_ssize_t


class CannotSynthesize(Exception):
    pass


class GuardArena:
    """Pages [rw ... rw][PROT_NONE]: args are placed to end at the guard."""

    def __init__(self, rw_pages: int = 4) -> None:
        self.page = mmap.PAGESIZE
        self.rw = rw_pages * self.page
        size = self.rw + self.page
        prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        prot_none = getattr(mmap, "PROT_NONE", 0)
        addr: int | None = _LIBC.mmap(None, size, prot_rw, flags, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        self.base = addr
        self.guard = addr + self.rw
        if _LIBC.mprotect(self.guard, self.page, prot_none) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")

    def place(self, raw: bytes, guarded: bool = True) -> int:
        """Copy the bytes of an args array into the arena; returns its address.
        guarded: the array ends at the guard page; else it starts the arena
        and is followed by zeroed (readable) memory."""
        n = len(raw)
        if n > self.rw:
            raise CannotSynthesize(f"{n // ANY} arguments do not fit the guard arena")
        ctypes.memset(self.base, 0, self.rw)
        addr = self.guard - n if guarded else self.base
        if n:
            ctypes.memmove(addr, raw, n)
        return addr


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


class _Sigaction(ctypes.Structure):
    """glibc's struct sigaction (x86_64 and aarch64)."""

    _fields_ = [
        ("handler", c_void_p),
        ("mask", ctypes.c_ulong * 16),
        ("flags", c_int),
        ("restorer", c_void_p),
    ]


_SA_SIGINFO, _SA_RESETHAND = 0x4, 0x80000000
_SIGINFO_ADDR = 16  # offset of si_addr in siginfo_t (64-bit Linux)
_HANDLER = ctypes.CFUNCTYPE(None, c_int, c_void_p, c_void_p)
_LIBC.sigaction.argtypes = [c_int, c_void_p, c_void_p]
#: Marker of the fault line the handler writes to stderr (runner.fault_of reads it).
FAULT_MARK = "tvmffi-probe-fault:"
_installed: list[object] = []
#: [start, end) of device memory handed to the library (CUDA buffers of the
#: probe, or the stand-in pointer of a CUDA tensor without a GPU): a fault
#: there is the host dereferencing device memory ("device-memory").
_DEVICE_RANGES: list[tuple[int, int]] = []


def note_device_range(start: int, size: int) -> None:
    _DEVICE_RANGES.append((start, start + size))


def report_faults(guard: int, size: int) -> None:
    """On SIGSEGV/SIGBUS, write one line to stderr naming the fault address and
    whether it lies in the argument guard page [guard, guard+size), then die
    of the signal as before (SA_RESETHAND: the faulting access repeats under
    the default action). The parent tells a read of args[num_args] from any
    other fault by it."""
    import signal

    def handler(_sig: int, info: int | None, _ctx: int | None) -> None:
        addr = ctypes.c_void_p.from_address(info + _SIGINFO_ADDR).value or 0 if info else 0
        where = "args-guard" if guard <= addr < guard + size else "elsewhere"
        if where == "elsewhere" and any(lo <= addr < hi for lo, hi in _DEVICE_RANGES):
            where = "device-memory"
        os.write(2, f"\n{FAULT_MARK} {addr:#x} {where}\n".encode())

    cb = _HANDLER(handler)
    _installed.append(cb)
    sa = _Sigaction()
    sa.handler = ctypes.cast(cb, c_void_p).value
    sa.flags = _SA_SIGINFO | _SA_RESETHAND
    for sig in (signal.SIGSEGV, signal.SIGBUS):
        _LIBC.sigaction(int(sig), ctypes.byref(sa), None)

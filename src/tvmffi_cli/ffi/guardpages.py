"""Argument arrays that end at an unreadable guard page, and a fault handler
that says where a crash read: how `tvmffi conform` (arg-bounds) and `tvmffi
call` tell a function that reads past its arguments from any other crash.

    arena = GuardArena()
    report_faults(arena.guard, arena.page, fd)   # on SIGSEGV/SIGBUS: one line to fd
    argv = arena.array(n)                        # n TVMFFIAny ending at the guard

The fault line is `FAULT_MARK <address> args-guard|device-memory|elsewhere`; the parent
reads it from what the worker wrote (fault_of).
"""

from __future__ import annotations

import ctypes
import mmap
import os
from ctypes import c_int, c_size_t, c_void_p
from typing import Any

from ..abi.structs import TVMFFIAny

#: Size of one TVMFFIAny.
ANY = ctypes.sizeof(TVMFFIAny)
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = c_void_p
_LIBC.mmap.argtypes = [c_void_p, c_size_t, c_int, c_int, c_int, ctypes.c_long]
_LIBC.mprotect.argtypes = [c_void_p, c_size_t, c_int]
_LIBC.write.argtypes = [c_int, c_void_p, c_size_t]
_LIBC.write.restype = ctypes.c_ssize_t
_LIBC.madvise.argtypes = [c_void_p, c_size_t, c_int]
#: madvise(2) advice (Linux 6.13): accesses to the range fault as on a
#: PROT_NONE page, without splitting the mapping. A PROT_NONE page is a
#: mapping of its own, and the kernel copies and tears down every mapping
#: at each fork of conform's zygote (hundreds: its tensor pools' guards).
_MADV_GUARD_INSTALL = 102
#: Whether the kernel took that advice so far (older ones refuse it: EINVAL).
_guard_advice = [True]


class CannotSynthesize(Exception):
    pass


def no_access(addr: int, size: int) -> bool:
    """Make [addr, addr+size) of an anonymous private mapping fault on every
    access (read, write, and the kernel's own: EFAULT); False when it
    cannot. A guard region where the kernel has them, else PROT_NONE."""
    if _guard_advice[0]:
        if _LIBC.madvise(addr, size, _MADV_GUARD_INSTALL) == 0:
            return True
        _guard_advice[0] = False
    return bool(_LIBC.mprotect(addr, size, 0) == 0)


class GuardArena:
    """Pages [rw ... rw][PROT_NONE]: args are placed to end at the guard."""

    def __init__(self, rw_pages: int = 4) -> None:
        self.page = mmap.PAGESIZE
        self.rw = rw_pages * self.page
        size = self.rw + self.page
        prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        addr: int | None = _LIBC.mmap(None, size, prot_rw, flags, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        self.base = addr
        self.guard = addr + self.rw
        if not no_access(self.guard, self.page):
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

    def array(self, n: int) -> Any:
        """n zeroed TVMFFIAny ending at the guard page, for the caller to fill
        (a pointer to the guard page itself when n is 0, never NULL: reading
        args[0] then faults there too)."""
        addr = self.place(bytes(n * ANY))
        return (
            (TVMFFIAny * n).from_address(addr)
            if n
            else ctypes.pointer(TVMFFIAny.from_address(addr))
        )


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
#: Marker of the fault line the handler writes (fault_of reads it).
FAULT_MARK = "tvmffi-probe-fault:"
_installed: list[object] = []
#: [start, end) of device memory handed to the library (CUDA buffers of a
#: probe, or the stand-in pointer of a CUDA tensor without a GPU): a fault
#: there is the host dereferencing device memory ("device-memory").
_DEVICE_RANGES: list[tuple[int, int]] = []
#: The places a fault line names.
FAULT_PLACES = ("args-guard", "device-memory", "elsewhere")


def note_device_range(start: int, size: int) -> None:
    _DEVICE_RANGES.append((start, start + size))


def report_faults(guard: int, size: int, fd: int = 2, chain: bool = False) -> None:
    """On SIGSEGV/SIGBUS, write one line to `fd` naming the fault address and
    whether it lies in the argument guard page [guard, guard+size), then die
    of the signal as before: under the default action (SA_RESETHAND: the
    faulting access repeats), or with `chain` under the handler that was
    installed before (a runtime's own crash report, its backtrace)."""
    import signal

    sigs = (signal.SIGSEGV, signal.SIGBUS)
    before = {int(s): _Sigaction() for s in sigs}

    def handler(sig: int, info: int | None, _ctx: int | None) -> None:
        addr = ctypes.c_void_p.from_address(info + _SIGINFO_ADDR).value or 0 if info else 0
        where = "args-guard" if guard <= addr < guard + size else "elsewhere"
        if where == "elsewhere" and any(lo <= addr < hi for lo, hi in _DEVICE_RANGES):
            where = "device-memory"
        os.write(fd, f"\n{FAULT_MARK} {addr:#x} {where}\n".encode())
        if chain:  # the access repeats under the earlier handler
            _LIBC.sigaction(sig, ctypes.byref(before[sig]), None)

    cb = _HANDLER(handler)
    _installed.append(cb)
    sa = _Sigaction()
    sa.handler = ctypes.cast(cb, c_void_p).value
    sa.flags = _SA_SIGINFO | (0 if chain else _SA_RESETHAND)
    for sig in sigs:
        _LIBC.sigaction(int(sig), ctypes.byref(sa), ctypes.byref(before[int(sig)]))


def fault_of(tail: str) -> str | None:
    """Where a worker's last fault was ("args-guard", "device-memory" or
    "elsewhere"), from the line report_faults wrote, if any."""
    at = tail.rfind(FAULT_MARK)
    if at < 0:
        return None
    words = tail[at + len(FAULT_MARK) :].split()
    return words[1] if len(words) > 1 and words[1] in FAULT_PLACES else None

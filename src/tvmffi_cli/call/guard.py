"""`tvmffi call --guard`: tensor data that ends at an unreadable guard page.

The data of each tensor argument is copied into fresh pages mapped so that
its last byte is the last byte before a PROT_NONE page (and a PROT_NONE page
precedes the mapping): a kernel reading or writing one element past the end
faults inside the call, which then fails (exit 1) instead of passing on
someone else's memory. `tvmffi conform` does the same for every tensor it
passes (conform/probe_tensors.py), at both ends.
"""

from __future__ import annotations

import ctypes
import mmap
from typing import Any

_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
#: Mappings of guarded copies: kept for the worker's life (a library may keep
#: a view of its arguments; unmapping would turn that into a crash of ours).
_KEEP: list[Any] = []


def guarded_copy(arr: Any) -> Any:
    """A C-contiguous copy of the NumPy array `arr` whose data ends at a guard page."""
    import numpy as np

    src = np.ascontiguousarray(arr)
    n = src.nbytes
    page = mmap.PAGESIZE
    data_pages = max(1, -(-n // page))
    m = mmap.mmap(-1, (data_pages + 2) * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(m))
    for guard in (base, base + (data_pages + 1) * page):
        if _LIBC.mprotect(guard, page, 0) != 0:
            raise OSError(ctypes.get_errno(), "mprotect of a guard page failed")
    _KEEP.append(m)
    start = (data_pages + 1) * page - n  # offset in the mapping: ends at the guard
    out = np.frombuffer(m, dtype=np.uint8, count=n, offset=start)
    out = out.view(src.dtype).reshape(src.shape)
    out[...] = src
    return out


#: The argument arena of this worker and whether its fault report chains to
#: the handler before it: set up once, at the first call.
_ARGS: list[Any] = []


def arguments_at_guard_page(chain: bool) -> Any:
    """argv_at for values.call_function: the call's arguments end at a
    PROT_NONE page and a SIGSEGV/SIGBUS writes where it hit to the worker's
    fault log, so the parent can tell a function that reads past its
    arguments (as conform's arg-bounds does) from any other crash. chain
    (-v): the runtime's own crash handler (the official one prints a
    backtrace) runs after ours; else the worker dies at once."""
    if not _ARGS:
        from ..ffi.guardpages import GuardArena, report_faults
        from ..sandbox import worker

        arena = GuardArena()
        if worker.FAULT_FD >= 0:
            report_faults(arena.guard, arena.page, worker.FAULT_FD, chain)
        _ARGS.append(arena.array)
    return _ARGS[0]

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

"""Runs the serialization fixture on one runtime and prints its results;
run as a script in its own process (the runtime is loaded RTLD_GLOBAL
first, so the fixture binds to it whichever libtvm_ffi.so it names):

    python tests/serial_driver.py LIBTVM_FFI FIXTURE_SO [ours-only]

With `ours-only` it runs the cases the official runtime cannot survive
(it recurses until the stack overflows on cyclic data).
"""

from __future__ import annotations

import ctypes
import sys


def main() -> None:
    ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL)
    fixture = ctypes.CDLL(sys.argv[2])
    run = (
        fixture.serial_fixture_run_ours_only
        if sys.argv[3:] == ["ours-only"]
        else fixture.serial_fixture_run
    )
    run.restype = ctypes.c_void_p
    raw = run()
    text = ctypes.string_at(raw).decode("utf-8", "replace")
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(raw)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

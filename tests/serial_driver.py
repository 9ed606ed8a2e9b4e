"""Runs the serialization fixture on one runtime and prints its results;
run as a script in its own process (the runtime is loaded RTLD_GLOBAL
first, so the fixture binds to it whichever libtvm_ffi.so it names):

    python tests/serial_driver.py LIBTVM_FFI FIXTURE_SO
"""

from __future__ import annotations

import ctypes
import sys


def main() -> None:
    ctypes.CDLL(sys.argv[1], ctypes.RTLD_GLOBAL)
    fixture = ctypes.CDLL(sys.argv[2])
    fixture.serial_fixture_run.restype = ctypes.c_void_p
    raw = fixture.serial_fixture_run()
    text = ctypes.string_at(raw).decode("utf-8", "replace")
    libc = ctypes.CDLL(None)
    libc.free.argtypes = [ctypes.c_void_p]
    libc.free(raw)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()

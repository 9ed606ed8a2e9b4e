"""Print abi/runtime_files.py's RUNTIME_FILES from the released wheels.

    python tools/runtime_files.py

Fetches (or reuses from the wheel cache) every official release of
tests/releases.py, hashes its tvm_ffi/lib/libtvm_ffi.so and asks that file's
TVMFFIGetVersion in a fresh interpreter (never in this one: a process hosts
one runtime).
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import releases

_ASK = """
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], mode=os.RTLD_GLOBAL)
v = (ctypes.c_uint32 * 3)()
lib.TVMFFIGetVersion(v)
print(".".join(map(str, v)))
"""


def main() -> None:
    for v in releases.RELEASES:
        so = releases.release_runtime(v)
        digest = hashlib.sha256(so.read_bytes()).hexdigest()
        out = subprocess.run(
            [sys.executable, "-c", _ASK, str(so)], check=True, capture_output=True, text=True
        )
        print(f'    "{v}": ("{out.stdout.strip()}", "{digest}"),')


if __name__ == "__main__":
    main()

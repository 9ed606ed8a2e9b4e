"""The runtime prepares the C++ standard library for the libraries it hosts as
the official runtime does (runtime/src/cxx/stdlib_compat.cc).

Since GCC 13, <iostream> no longer constructs std::ios_base::Init in every
translation unit that includes it: the library defining std::cout does. On a
system with an older libstdc++ nobody does unless the runtime does, which the
official one does at load; without it the first write to std::cout of a
library built with GCC 13+ crashes (the official test libraries of 0.1.0 ..
0.1.12 via testing.run_check_signal, tests/test_release_runtimes.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fixturebuild
from releases import release_runtime, release_testing_lib
from test_call_helpers import tvmffi, validate

# A library as GCC 13+ compiles it, with any compiler: <ostream> declares the
# stream classes but, unlike a pre-13 <iostream>, constructs nothing.
_SOURCE = r"""
#include <ostream>
#include <tvm/ffi/c_api.h>

namespace std {
extern ostream cout;  // what <iostream> declares, without its Init object
}

extern "C" __attribute__((visibility("default"))) int __tvm_ffi_say_hello(
    void*, const TVMFFIAny*, int32_t, TVMFFIAny* result) {
  std::cout << "hello through std::cout" << std::endl;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return 0;
}
"""


def test_std_cout_works_without_an_init_object_in_the_library(tmp_path: Path) -> None:
    src = tmp_path / "cout_without_init.cc"
    src.write_text(_SOURCE)
    lib = fixturebuild.build(src, name="cout_without_init")
    r = tvmffi("call", "--json", lib, "say_hello")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    validate(doc, "call")
    assert doc["result"] is None
    assert "[lib] hello through std::cout" in r.stderr


_LOAD_NOW = """
import ctypes, os, sys
ctypes.CDLL(sys.argv[1], mode=os.RTLD_NOW | os.RTLD_GLOBAL)
try:
    ctypes.CDLL(sys.argv[2], mode=os.RTLD_NOW)
    print("loaded")
except OSError as e:
    print(str(e).rsplit(":", 1)[-1].strip())
"""


def test_a_gcc14_library_loads_with_rtld_now_as_on_the_official_runtime() -> None:
    # 0.1.0's test library imports __cxa_call_terminate (GCC 14+) without a
    # version; the official runtime exports it, so eager binding succeeds.
    lib = str(release_testing_lib("0.1.0"))
    out = []
    for rt in (str(release_runtime("0.1.0")), str(fixturebuild.our_runtime())):
        r = subprocess.run(
            [sys.executable, "-c", _LOAD_NOW, rt, lib],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stderr
        out.append(r.stdout.strip())
    assert out == ["loaded", "loaded"]

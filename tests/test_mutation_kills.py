"""Tests that kill the Python mutations a mutation run left alive (issue 10).

Each test names the fault it catches; each was checked by planting the fault
and watching the test fail.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from test_call_helpers import crashy, kernels, runtime_problem, tvmffi, typed
from tvmffi_cli.abi import dtypes
from tvmffi_cli.ffi.objects import Device

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _our_runtime():
    from tvmffi_cli.ffi import paths

    p = str(paths.runtime_library())
    problem = runtime_problem(p)
    if problem is not None:
        pytest.skip(f"our runtime cannot host a library: {problem}")
    return p


# -- bench: the loop never releases object results ------------------------------

BENCH_LIVE = r"""
import json, sys
from tvmffi_cli.call import bench_task
from tvmffi_cli.call import task as call_task
from tvmffi_cli.call.messages import CallRequest
from tvmffi_cli.ffi.runtime import get_runtime

path = sys.argv[1]
rt = get_runtime()
one = [{"kind": "int", "value": 5}]

def bench(repeat):
    n = rt.live_objects()
    r = bench_task.run({"path": path, "func": "describe", "args": one, "repeat": repeat,
                        "rounds": 2})
    assert r["status"] == "ok", r
    return rt.live_objects() - n

def open_only():
    n = rt.live_objects()
    call_task.open_function(CallRequest(path, "describe", (), ""))
    return rt.live_objects() - n

bench(10)  # warm: the first load of the library
print(json.dumps({"open": open_only(), "bench": bench(10), "bench_many": bench(500)}))
"""


def test_bench_releases_object_results():
    """`describe` returns a heap string made by the runtime on every call. A
    bench of it may leave behind only what opening the function leaves (the
    loaded library's objects): the checked first call and every timed call
    release their result."""
    _our_runtime()
    r = subprocess.run(
        [sys.executable, "-c", BENCH_LIVE, str(kernels())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["bench"] == d["open"], d
    assert d["bench_many"] == d["open"], d


# -- Device.__eq__ ignores the id ----------------------------------------------


def test_device_equality_compares_the_id():
    assert Device("cuda:0") != Device("cuda:1")
    assert Device("cuda:1") == Device("cuda:1") == Device(2, 1) == "cuda:1"
    assert Device("cuda:1") != "cuda:0"
    assert Device("cpu:0") != Device("cuda:0")
    assert len({Device("cuda:0"), Device("cuda:1"), Device(2, 1)}) == 2


# -- dtype: the x2 lane suffix is dropped --------------------------------------


@pytest.mark.parametrize(
    "triple,text",
    [
        ((2, 16, 2), "float16x2"),
        ((0, 8, 4), "int8x4"),
        ((6, 8, 2), "boolx2"),
        ((10, 8, 2), "float8_e4m3fnx2"),
        ((200, 32, 2), "custom[200]32x2"),
        ((2, 32, 0x10000 - 4), "float32xvscalex4"),
    ],
)
def test_dtype_lanes_are_printed(triple, text):
    assert dtypes.format_dtype(*triple) == text
    assert dtypes.parse_dtype(text) == triple


def test_call_passes_the_lanes_of_a_dtype_argument():
    """Through the whole call path (literal -> spec -> child value): dtype_bits
    returns bits * lanes, so a dropped x2 gives 16 instead of 32."""
    rt = _our_runtime()
    r = tvmffi("call", typed(), "dtype_bits", "--dtype", "float16x2", "--runtime", rt)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "32"


# -- device index over int32 ---------------------------------------------------


@pytest.mark.parametrize(
    "index,ok", [("2147483647", True), ("2147483648", False), ("4294967297", False)]
)
def test_device_index_must_fit_int32(index, ok):
    from tvmffi_cli.abi.devices import parse_device
    from tvmffi_cli.errors import InputError

    if ok:
        assert parse_device(f"cuda:{index}") == (2, int(index))
    else:
        with pytest.raises(InputError, match="device"):
            parse_device(f"cuda:{index}")


def test_cli_rejects_a_device_index_over_int32():
    rt = _our_runtime()
    r = tvmffi("call", kernels(), "add_int", "--device", "cuda:2147483648", "--runtime", rt)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "device" in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.count("\n") == 1


# -- bench text prints the minimum labelled as median -------------------------


def test_bench_text_labels_each_figure():
    from tvmffi_cli.call.messages import BenchOk, Stats
    from tvmffi_cli.render.call import bench_text

    reply = BenchOk("export", 300, "c", 100, 3, (100, 200, 900), Stats(1.0, 2.0, 9.0))
    text = bench_text(reply, "f")
    assert text.startswith("f: 2"), text
    head, _, rest = text.partition("per call (median; min ")
    assert "2" in head and "1" not in head.split(":", 1)[1], text
    assert rest.startswith("1"), text
    assert "9" in rest, text


# -- --timeout leaves the child spinning --------------------------------------


def test_timeout_kills_the_child():
    """After `tvmffi call --timeout`, the worker that ran the hanging function
    is gone (not only abandoned)."""
    rt = _our_runtime()
    marker = f"tvmffi-timeout-{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, TVMFFI_TEST_MARKER=marker)
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "tvmffi_cli",
            "call",
            str(crashy()),
            "hang",
            "--timeout",
            "1",
            "--runtime",
            rt,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "did not return within 1 s" in r.stderr
    time.sleep(0.2)
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if marker.encode() in f.read():
                    left.append(int(pid))
        except OSError:
            continue
    for pid in left:  # do not leave it behind for the next tests either
        os.kill(pid, signal.SIGKILL)
    assert not left, f"worker processes still running after the timeout: {left}"


# -- hidden ELF symbols counted as exports ---------------------------------------

HIDDEN_SRC = r"""
#include <stdint.h>
int __tvm_ffi_pub(void* s, const void* a, int32_t n, void* r) { return 0; }
__attribute__((visibility("hidden")))
int __tvm_ffi_priv(void* s, const void* a, int32_t n, void* r) { return 0; }
__attribute__((visibility("internal")))
int __tvm_ffi_internal(void* s, const void* a, int32_t n, void* r) { return 0; }
__attribute__((visibility("protected")))
int __tvm_ffi_prot(void* s, const void* a, int32_t n, void* r) { return 0; }
"""


def test_hidden_elf_symbols_are_not_exports(tmp_path):
    """A relocatable object keeps its hidden and internal symbols in .symtab;
    only default and protected ones are exports (inspect's function list)."""
    from tvmffi_cli.binary import open_binary
    from tvmffi_cli.inspect.engine import static_report

    src = tmp_path / "vis.c"
    src.write_text(HIDDEN_SRC)
    obj = tmp_path / "vis.o"
    subprocess.run(["gcc", "-c", "-fPIC", "-o", str(obj), str(src)], check=True)
    b = open_binary(str(obj))
    try:
        names = {s.name for s in b.symbols}
        rep = static_report(b)
    finally:
        b.close()
    assert {"__tvm_ffi_pub", "__tvm_ffi_prot"} <= names
    assert not names & {"__tvm_ffi_priv", "__tvm_ffi_internal"}, names
    assert sorted(f["name"] for f in rep["functions"]) == ["prot", "pub"]


# -- the probe accepts dead objects and wild pointers -----------------------------

PROBE_RESULTS = r"""
import ctypes, json, struct
from tvmffi_cli.abi import constants as K
from tvmffi_cli.abi.structs import TVMFFIObject
from tvmffi_cli.conform.probe_values import ProbeValues, _RawApi, pod
from tvmffi_cli.ffi.runtime import get_runtime

p = ProbeValues()
p.rt = get_runtime()
p.c = _RawApi(p.rt.lib)
out = {}
for name, addr in [("null", 0), ("low", 16), ("unmapped", 0x7FFFFFFF0000)]:
    out[name] = p.result_problems(pod(K.kTVMFFIStr, struct.pack("<Q", addr)), True)
# A real string object, then the same object seen after its last release
# (the header says strong count 0).
raw = p.string_any(b"a string longer than seven bytes")
h = struct.unpack_from("<Q", raw, 8)[0]
out["live"] = p.result_problems(raw, True)
fake = TVMFFIObject()
fake.type_index = K.kTVMFFIStr
fake.combined_ref_count = 0
out["dead"] = p.result_problems(pod(K.kTVMFFIStr, struct.pack("<Q", ctypes.addressof(fake))),
                                True)
p.release(raw)
print(json.dumps(out))
"""


def test_probe_rejects_wild_pointers_and_dead_objects():
    _our_runtime()
    r = subprocess.run(
        [sys.executable, "-c", PROBE_RESULTS], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    for name in ("null", "low", "unmapped"):
        assert any("not readable memory" in p for p in d[name]), (name, d[name])
    assert d["live"] == [], d["live"]
    assert any("dead" in p for p in d["dead"]), d["dead"]

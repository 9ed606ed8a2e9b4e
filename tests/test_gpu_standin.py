"""tvmffi's side of CUDA, on machines without a GPU: the stand-in driver.

fixtures/cuda/standin_cuda.c is a libcuda.so.1 whose "device" memory is host
memory the host cannot touch at the address handed out, with streams that
run on threads, events, stream memory operations and injectable errors;
fixtures/cuda/standin_kernels.c are "kernels" written against it. The tests
point tvmffi at it with TVMFFI_CUDA_DRIVER (passed to the sandboxed worker,
whose Landlock rules then allow reading it). None of this is a GPU run:
tests/test_gpu_device.py (pytest -m gpu) and tools/gpu_check.sh are.

Cost: about 40 s on 2 cores (some 35 tvmffi processes, three conform runs).
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import fixturebuild
from test_call_helpers import tvmffi, validate


@pytest.fixture(scope="module")
def standin():
    return fixturebuild.build(
        "cuda/standin_cuda.c",
        headers="none",
        link_runtime=False,
        flags=("-pthread", "-Wl,-soname,libcuda.so.1"),
    )


@pytest.fixture(scope="module")
def kernels():
    return fixturebuild.build(
        "cuda/standin_kernels.c", flags=("-Werror=implicit-function-declaration",)
    )


@pytest.fixture(scope="module")
def cuda_only():
    return fixturebuild.build(
        "cuda/standin_kernels.c", name="standin_cuda_only", defines=["CUDA_ONLY"]
    )


@pytest.fixture(scope="module")
def env(standin):
    return {"TVMFFI_CUDA_DRIVER": str(standin)}


NO_DRIVER = {"TVMFFI_CUDA_DRIVER": "/nonexistent/libcuda.so.1"}


def in_child(code, env):
    """Run `code` in a fresh interpreter (the stand-in's threads and CUDA
    state stay out of the test process) and return what it printed as JSON."""
    e = dict(os.environ)
    e.update(env)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=e, timeout=120
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- the driver module (ffi/cuda.py) ---------------------------------------------------


def test_driver_memory_copies_streams_events(env):
    got = in_child(
        """
import json, ctypes
from tvmffi_cli.ffi import cuda
out = {"before": cuda.initialized_here()}
ctx = cuda.context(0)
out["after"] = cuda.initialized_here()
import dataclasses
out["desc"] = dataclasses.asdict(ctx.describe())
b = ctx.alloc(64)
ctx.write(b.ptr, bytes(range(64)))
out["roundtrip"] = list(ctx.read(b.ptr, 8))
ctx.memset8(b.ptr, 7, 4)
ctx.memset32(b.ptr + 4, 0x01020304, 1)
out["memset"] = list(ctx.read(b.ptr, 8))
c = ctx.alloc(64)
ctx.dtod(c.ptr, b.ptr, 64)
out["dtod"] = list(ctx.read(c.ptr, 8))
out["device_ptr"] = [ctx.is_device_pointer(b.ptr), ctx.is_device_pointer(id(out))]
s, side = ctx.stream(), ctx.stream()
flag = ctx.alloc(4)
ctx.memset32(flag.ptr, 0, 1)
ctx.wait_value32(s, flag.ptr, 1)
e0, e1 = ctx.event(), ctx.event()
e0.record(s)
ctx.memset8(c.ptr, 0, 64)
e1.record(s)
out["held_idle"] = s.idle()
ctx.write_value32(side, flag.ptr, 1)
s.synchronize()
out["released_idle"] = s.idle()
out["elapsed_ok"] = e0.elapsed_ms(e1) >= 0
d = cuda.driver()
out["names"] = [d.error_name(700), d.error_string(700), d.error_name(12345)]
b.free(); b.free()  # a second free is a no-op
print(json.dumps(out))
""",
        env,
    )
    assert got["before"] is False and got["after"] is True
    assert got["desc"]["device"] == "cuda:0" and got["desc"]["compute_capability"] == "9.0"
    assert "stand-in" in got["desc"]["name"]
    assert got["roundtrip"] == list(range(8))
    assert got["memset"] == [7, 7, 7, 7, 4, 3, 2, 1]
    assert got["dtod"] == [7, 7, 7, 7, 4, 3, 2, 1]
    assert got["device_ptr"] == [True, False]
    assert got["held_idle"] is False and got["released_idle"] is True
    assert got["elapsed_ok"] is True
    assert got["names"] == [
        "CUDA_ERROR_ILLEGAL_ADDRESS",
        "an illegal memory access was encountered",
        "CUDA_ERROR_12345",  # the stand-in has no name for it: abi's fallback
    ]


DRIVER_ERRORS = """
import json, os
from tvmffi_cli.ffi import cuda
from tvmffi_cli.errors import CheckFailed, InputError
try:
    cuda.context(int(os.environ.get("DEV", "0")))
    ctx = cuda.context(0)
    ctx.alloc(16)
    print(json.dumps({"ok": True}))
except (InputError, CheckFailed) as e:
    print(json.dumps({"type": type(e).__name__, "exit": e.exit_code, "msg": str(e),
                      "name": getattr(e, "name", None)}))
"""


@pytest.mark.parametrize(
    "extra, want_type, want_exit, needle",
    [
        (NO_DRIVER, "CudaUnavailable", 2, "no CUDA driver: TVMFFI_CUDA_DRIVER=/nonexistent"),
        (
            {"TVMFFI_STANDIN_CUDA_DEVICES": "0"},
            "CudaUnavailable",
            2,
            "no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE",
        ),
        (
            {"TVMFFI_STANDIN_CUDA_FAIL": "cuInit=304"},
            "CudaUnavailable",
            2,
            "CUDA cannot start here: cuInit returned CUDA_ERROR_OPERATING_SYSTEM",
        ),
        ({"DEV": "3"}, "CudaUnavailable", 2, "no CUDA device cuda:3 (this machine has 1 device)"),
        (
            {"TVMFFI_STANDIN_CUDA_FAIL": "cuMemAlloc_v2=2"},
            "CudaError",
            1,
            "CUDA_ERROR_OUT_OF_MEMORY: out of memory (16 bytes)",
        ),
    ],
)
def test_driver_errors(env, extra, want_type, want_exit, needle):
    got = in_child(DRIVER_ERRORS, {**env, **extra})
    assert got["type"] == want_type and got["exit"] == want_exit
    assert needle in got["msg"]


def test_a_forked_child_of_an_initialized_process_refuses_cuda(env):
    got = in_child(
        """
import json, os
from tvmffi_cli.ffi import cuda
cuda.context(0)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    try:
        cuda.context(0)
        os.write(w, b"used")
    except cuda.CudaUnavailable as e:
        os.write(w, str(e).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps({"child": os.read(r, 1000).decode()}))
""",
        env,
    )
    assert (
        got["child"]
        == "CUDA was initialized before this process was forked; it cannot be used here"
    )


def test_the_zygote_is_refused_when_the_library_initialized_cuda(env, standin):
    # A library that calls cuInit while loading (here: directly) makes its
    # worker unfit to fork probe children; conform then serves without a zygote.
    got = in_child(
        f"""
import ctypes, json, os
from tvmffi_cli.conform import probe_gpu
before = probe_gpu.fork_refusal()
lib = ctypes.CDLL({str(standin)!r}, mode=os.RTLD_GLOBAL)
lib.cuInit(0)
print(json.dumps({{"before": before, "after": probe_gpu.fork_refusal()}}))
""",
        env,
    )
    assert got["before"] is None
    assert got["after"] == "the library initialized CUDA while loading (CUDA does not survive fork)"


def test_api_takes_dlpack_cuda_tensors_without_a_copy(env, kernels):
    # A DLPack producer (what torch/cupy/jax hand over) whose tensor lives in
    # (stand-in) device memory: tvmffi_cli.load passes it as is, and the
    # producer's deleter runs when the runtime lets the tensor go.
    got = in_child(
        f"""
import ctypes, json
import tvmffi_cli
from tvmffi_cli.abi import structs as S
from tvmffi_cli.ffi import cuda
ctx = cuda.context(0)
buf = ctx.alloc(16)
ctx.write(buf.ptr, bytes((ctypes.c_float * 4)(1, 2, 3, 4)))
deleted = []
DELETER = S.DLManagedTensorVersionedDeleter(lambda p: deleted.append(1))
mt = S.DLManagedTensorVersioned()
mt.version.major, mt.version.minor = S.DLPACK_MAJOR_VERSION, S.DLPACK_MINOR_VERSION
shape = (ctypes.c_int64 * 1)(4)
t = mt.dl_tensor
t.data, t.ndim, t.shape = buf.ptr, 1, shape
t.device.device_type, t.device.device_id = 2, 0
t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
mt.deleter = DELETER
new = ctypes.pythonapi.PyCapsule_New
new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
class Producer:
    def __dlpack_device__(self):
        return (2, 0)
    def __dlpack__(self, stream=None, max_version=None):
        return new(ctypes.addressof(mt), b"dltensor_versioned", None)
lib = tvmffi_cli.load({str(kernels)!r})
lib.add_one(Producer())
ctx.synchronize()
vals = list((ctypes.c_float * 4).from_buffer_copy(ctx.read(buf.ptr, 16)))
import gc; gc.collect()
print(json.dumps({{"values": vals, "deleted": len(deleted)}}))
""",
        env,
    )
    assert got["values"] == [2.0, 3.0, 4.0, 5.0]  # written in place: the producer's memory
    assert got["deleted"] == 1


# -- call -------------------------------------------------------------------------------


def test_call_copies_in_runs_on_the_device_and_copies_back(env, kernels):
    r = tvmffi("call", kernels, "add_one", "float32[2,3]:arange@cuda", env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout == (
        "None\narg0 after the call: <Tensor float32[2, 3] on cuda:0>\n"
        "  [[1., 2., 3.],\n   [4., 5., 6.]]\n"
    )


def test_call_json_names_the_device_and_stream(env, kernels):
    r = tvmffi(
        "call", kernels, "add_one", "--tensor", "float32[4]:arange@cuda:0", "--json", env=env
    )
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "call")
    arg = doc["args"][0]["value"]
    assert arg == {
        "type": "DLTensor*",  # a typed flag: no schema says ffi.Tensor
        "dtype": "float32",
        "shape": [4],
        "strides": None,
        "device": "cuda:0",
        "data": [1.0, 2.0, 3.0, 4.0],
    }
    assert doc["cuda"]["device"] == "cuda:0" and doc["cuda"]["stream"] == "tvmffi"
    assert doc["cuda"]["driver"] == env["TVMFFI_CUDA_DRIVER"]


def test_call_npy_on_the_device_with_out_leaves_the_input_alone(env, kernels, tmp_path):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "x.npy", x)
    r = tvmffi(
        "call",
        kernels,
        "add_into",
        "x.npy@cuda",
        "float32[2,3]@cuda",
        "--out",
        "o",
        cwd=tmp_path,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.load(tmp_path / "o" / "arg1.npy"), x + 1)
    assert np.array_equal(np.load(tmp_path / "o" / "arg0.npy"), x)
    assert np.array_equal(np.load(tmp_path / "x.npy"), x)


def test_call_a_result_the_library_allocated_on_the_device(env, kernels, tmp_path):
    r = tvmffi("call", kernels, "scale2", "float32[4]:arange@cuda", "--out", tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("<Tensor float32[4] on cuda:0>\n  [0., 2., 4., 6.]\n")
    assert np.array_equal(np.load(tmp_path / "result.npy"), [0, 2, 4, 6])


def test_an_asynchronous_cuda_error_fails_that_call(env, kernels):
    r = tvmffi("call", kernels, "fault", "float32[4]@cuda", env=env)
    assert r.returncode == 1
    assert r.stderr.startswith(
        "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered (reported by "
        "cuStreamSynchronize after fault returned: its CUDA work failed)"
    )
    r = tvmffi("call", kernels, "fault", "float32[4]@cuda", "--json", env=env)
    doc = validate(json.loads(r.stdout), "call")
    assert doc["error"]["kind"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert doc["error"]["cuda"] == {"code": 700, "sticky": True}


def test_a_kernel_launched_on_host_memory_fails_its_call(env, kernels):
    # No CUDA tensor, but --stream opens CUDA: the unchecked kernel takes the
    # host tensor's address as device memory.
    r = tvmffi("call", kernels, "unchecked", "float32[4]", "--stream", "tvmffi", env=env)
    assert r.returncode == 1
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in r.stderr and "after unchecked returned" in r.stderr


@pytest.mark.parametrize("mode, legacy", [("tvmffi", False), ("default", True)])
def test_the_published_stream(env, kernels, mode, legacy):
    r = tvmffi(
        "call", kernels, "current_stream", "float32[1]@cuda", "--stream", mode, "--json", env=env
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["result"] == 0) is legacy
    assert doc["cuda"]["stream"] == mode


@pytest.mark.parametrize(
    "argv, extra, line",
    [
        (
            ["call"],
            NO_DRIVER,
            "tvmffi: error: no CUDA driver: TVMFFI_CUDA_DRIVER=/nonexistent/libcuda.so.1 cannot be loaded",
        ),
        (
            ["bench"],
            NO_DRIVER,
            "tvmffi: error: no CUDA driver: TVMFFI_CUDA_DRIVER=/nonexistent/libcuda.so.1 cannot be loaded",
        ),
        (
            ["call"],
            {"TVMFFI_STANDIN_CUDA_DEVICES": "0"},
            "tvmffi: error: no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)",
        ),
        (
            ["bench"],
            {"TVMFFI_STANDIN_CUDA_DEVICES": "0"},
            "tvmffi: error: no CUDA device: cuInit returned CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)",
        ),
    ],
)
def test_without_a_gpu_one_line_and_exit_2(env, kernels, argv, extra, line):
    r = tvmffi(*argv, kernels, "add_one", "float32[4]@cuda", env={**env, **extra})
    assert r.returncode == 2
    assert r.stdout == ""
    assert len(r.stderr.splitlines()) == 1 and r.stderr.startswith(line), r.stderr


def test_a_device_the_machine_lacks_and_a_device_tensors_cannot_live_on(env, kernels):
    r = tvmffi("call", kernels, "add_one", "float32[4]@cuda:1", env=env)
    assert (r.returncode, r.stderr) == (
        2,
        "tvmffi: error: no CUDA device cuda:1 (this machine has 1 device)\n",
    )
    r = tvmffi("call", kernels, "add_one", "float32[4]@rocm", env=env)
    assert r.returncode == 2
    assert "a tensor is placed on cpu or cuda[:N], not rocm" in r.stderr


# -- bench ----------------------------------------------------------------------------


def test_bench_times_the_device_with_events(env, kernels):
    r = tvmffi(
        "bench", kernels, "add_one", "float32[4096]@cuda", "--rounds", "3", "--json", env=env
    )
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "bench")
    assert doc["timer"] == "cuda-events"
    assert doc["bytes_per_call"] == 4 * 4096
    assert len(doc["round_ns"]) == 3 and doc["rounds"] == 3
    assert doc["ns_per_call"]["median"] > 0 and doc["host_ns_per_call"]["median"] > 0
    assert doc["bandwidth_gbps"] == pytest.approx(4 * 4096 / doc["ns_per_call"]["median"])
    r = tvmffi("bench", kernels, "add_one", "float32[4096]@cuda", "--rounds", "2", env=env)
    assert r.returncode == 0, r.stderr
    assert "device time per call" in r.stdout and "host launch" in r.stdout


def test_bench_reports_an_asynchronous_error_and_times_nothing(env, kernels):
    r = tvmffi("bench", kernels, "fault", "float32[4]@cuda", env=env)
    assert r.returncode == 1
    assert r.stderr.startswith("CUDA_ERROR_ILLEGAL_ADDRESS")


# -- conform ----------------------------------------------------------------------------

GPU_CHECKS = ("device-call", "device-mismatch", "device-bounds", "stream-use")


def conform(lib, env, *args):
    r = tvmffi("conform", lib, "--json", "-j", "2", *args, env=env, timeout=300)
    return r, validate(json.loads(r.stdout), "conform")


def test_conform_catches_every_planted_gpu_bug_and_passes_the_good_kernels(env, kernels):
    r, doc = conform(kernels, env)
    bad = {(x["check"], x["function"]) for x in doc["results"] if x["status"] in ("fail", "error")}
    assert bad == {
        ("device-mismatch", "host_add_one"),  # a host kernel dereferenced device memory
        ("device-mismatch", "unchecked"),  # a CUDA kernel launched on host memory
        ("device-call", "fault"),  # CUDA_ERROR_ILLEGAL_ADDRESS after it returned
        ("device-bounds", "oob_write"),  # wrote into the guard past the end
        ("device-call", "oob_write"),  # the tensor:cuda variant has no slack: illegal address
        ("stream-use", "wrong_stream"),  # ran on the legacy stream
    }
    assert r.returncode == 1 and doc["verdict"] == "failed"
    by = {(x["check"], x["function"]): x for x in doc["results"]}
    for fn in ("add_one", "add_into", "scale2"):
        assert by[("device-call", fn)]["status"] == "pass"
        assert by[("device-bounds", fn)]["status"] == "pass"
    assert by[("stream-use", "add_one")]["status"] == "pass"
    assert (
        "the host dereferenced device memory" in by[("device-mismatch", "host_add_one")]["message"]
    )
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in by[("device-mismatch", "unchecked")]["message"]
    assert (
        "argument 0: 16 guard byte(s) written, from 0 bytes past its end"
        in (by[("device-bounds", "oob_write")]["message"])
    )


def test_a_cuda_pack_without_a_gpu_is_not_exercised(cuda_only):
    r, doc = conform(cuda_only, NO_DRIVER)
    assert r.returncode == 2
    assert doc["verdict"] == "not exercised" and doc["passed"] is False
    assert "x must be a CUDA tensor" in doc["not_exercised"]
    assert "no CUDA driver" in doc["not_exercised"]
    assert doc["summary_line"].startswith("tvmffi conform NOT EXERCISED standin_cuda_only")
    for x in doc["results"]:
        if x["check"] in GPU_CHECKS[1:] and x["check"] != "device-mismatch":
            assert x["status"] == "skip"


def test_kernels_that_never_ran_are_not_passed_beside_a_host_function_that_did(kernels):
    # Without a device, host_checked runs and passes but add_one (a CUDA
    # kernel) raises for every call: the run cannot be PASSED on the host
    # function's word, and the table must not say "ok" for the kernel.
    r, doc = conform(kernels, NO_DRIVER, "--function", "add_one", "--function", "host_checked")
    assert (r.returncode, doc["verdict"], doc["passed"]) == (2, "not exercised", False)
    assert doc["not_exercised"].startswith("1 of 2 function(s) could not be exercised (add_one)")
    assert "no CUDA driver" in doc["not_exercised"]
    assert not [x for x in doc["results"] if x["status"] in ("fail", "error")]
    table = tvmffi("conform", kernels, "-j", "2", "--function", "add_one",
                   "--function", "host_checked", env={**NO_DRIVER, "COLUMNS": "160"})  # fmt: skip
    assert table.returncode == 2
    row = next(line for line in table.stdout.splitlines() if "add_one" in line)
    assert "not run" in row and " ok " not in row
    # A failure elsewhere is still a failure (exit 1), not "cannot judge".
    r, doc = conform(kernels, NO_DRIVER, "--function", "add_one", "--function", "host_add_one")
    assert (r.returncode, doc["verdict"], doc["not_run"]) == (1, "failed", ["add_one"])
    assert doc["summary_line"].endswith("; 1 function(s) not run (no CUDA device)")


def test_the_same_pack_with_a_device_is_exercised(env, cuda_only):
    r, doc = conform(cuda_only, env, "--function", "add_one", "--function", "scale2")
    bad = [x for x in doc["results"] if x["status"] in ("fail", "error")]
    assert (r.returncode, doc["verdict"], bad) == (0, "passed", [])
    assert "not_exercised" not in doc


# -- units ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, device, rest",
    [
        ("float32[4]:rand@cuda:1", "cuda:1", {"fill": "rand"}),
        ("float32[4]@cuda", "cuda:0", {"fill": "zeros"}),
        ("float32[4]@gpu:2", "cuda:2", {}),
        ("float32[4]@cpu", None, {}),
    ],
)
def test_device_suffix(text, device, rest):
    from tvmffi_cli.call import literals

    spec = literals.parse_tensor(text)
    assert spec.device == device
    assert all(getattr(spec, k) == v for k, v in rest.items())
    assert literals.infer_positional(text).spec.device == device


def test_device_suffix_on_files(tmp_path):
    from tvmffi_cli.call import literals

    np.save(tmp_path / "x.npy", np.zeros(2, np.float32))
    spec = literals.parse_tensor("x.npy@bfloat16@cuda", str(tmp_path))
    assert (spec.device, spec.raw_dtype, spec.source) == ("cuda:0", "bfloat16", "npy")
    np.save(tmp_path / "y@cuda.npy", np.zeros(2, np.float32))
    (tmp_path / "y@cuda").write_bytes((tmp_path / "y@cuda.npy").read_bytes())
    assert literals.parse_tensor("y@cuda", str(tmp_path)).device is None  # an existing file


def test_report_verdicts():
    from tvmffi_cli.conform.results import FAIL, Report, Result

    quiet = Report("/x/lib.so", [], ["f"], not_exercised="no function could be exercised")
    assert (quiet.verdict, quiet.passed, quiet.exit_code()) == ("not exercised", False, 2)
    assert "NOT EXERCISED lib.so" in quiet.summary_line()
    failing = Report("/x/lib.so", [Result("no-crash", "f", FAIL, "x")], ["f"], not_exercised="y")
    assert (failing.verdict, failing.exit_code()) == ("failed", 1)
    assert Report("/x/lib.so", [], ["f"]).exit_code() == 0


def test_exercised_facts():
    from tvmffi_cli.conform import checks_gpu
    from tvmffi_cli.conform.checks_crash import FunctionFacts

    raised = FunctionFacts("k")
    raised.params = ["Tensor"]
    raised.obs = {
        "valid": {"rc": -1, "error": {"kind": "ValueError", "message": "x must be a CUDA tensor"}}
    }
    on_gpu = FunctionFacts("g")
    on_gpu.params = ["Tensor"]
    on_gpu.obs = {"valid": {"rc": -1}, "gpu:valid": {"rc": 0, "cuda_error": None}}
    failed_async = FunctionFacts("h")
    failed_async.params = ["Tensor"]
    failed_async.obs = {
        "gpu:valid": {"rc": 0, "cuda_error": {"name": "CUDA_ERROR_ILLEGAL_ADDRESS"}}
    }
    untyped = FunctionFacts("u")
    untyped.obs = {"zero-args": {"rc": 0}}
    assert not checks_gpu.exercised(raised) and not checks_gpu.exercised(failed_async)
    assert checks_gpu.exercised(on_gpu) and checks_gpu.exercised(untyped)
    why = checks_gpu.not_exercised({"k": raised, "h": failed_async})
    assert why.startswith("no function could be exercised: every valid call failed")
    assert "k: ValueError: x must be a CUDA tensor" in why
    assert checks_gpu.not_exercised({"k": raised, "g": on_gpu}) is None
    assert checks_gpu.not_exercised({}) is None


def test_sanitizer_memcheck_runs_the_call_under_the_sanitizer_and_reads_its_log(
    env, kernels, tmp_path
):
    # fixtures/cuda/fake_compute_sanitizer.sh stands in for NVIDIA's tool: it
    # runs the worker it is given and writes a log with one memcheck error,
    # as compute-sanitizer --log-file does.
    import shutil

    bindir = tmp_path / "bin"
    bindir.mkdir()
    shutil.copy(
        fixturebuild.FIXTURES / "cuda" / "fake_compute_sanitizer.sh", bindir / "compute-sanitizer"
    )
    path = f"{bindir}:{os.environ['PATH']}"
    r, doc = conform(
        kernels, {**env, "PATH": path}, "--select", "memcheck", "--select", "device-call",
        "--sanitizer", "memcheck", "--function", "add_one", "--function", "fault",
    )  # fmt: skip
    by = {(x["check"], x["function"]): x for x in doc["results"]}
    mc = by[("memcheck", "add_one")]
    assert mc["status"] == "fail"
    assert mc["message"] == (
        "compute-sanitizer memcheck: 1 error(s): Invalid __global__ write of size 4 bytes"
    )
    assert "ERROR SUMMARY: 1 error" in mc["details"]["report"]
    assert by[("memcheck", "fault")]["message"] == "the CUDA call did not succeed (see device-call)"
    r, doc = conform(kernels, env, "--select", "memcheck", "--function", "add_one")
    assert doc["results"][-1]["message"] == "not asked for (--sanitizer memcheck)"


def test_api_call_function_places_arrays_on_the_device(env, kernels, monkeypatch):
    import tvmffi_cli

    monkeypatch.setenv("TVMFFI_CUDA_DRIVER", env["TVMFFI_CUDA_DRIVER"])
    x = np.arange(4, dtype=np.float32)
    r = tvmffi_cli.call_function(kernels, "scale2", x, device="cuda:0")
    assert r.ok, r.error
    assert np.array_equal(r.value, 2 * x)
    assert r.to_json()["cuda"]["device"] == "cuda:0"
    assert r.to_json()["args"][0]["value"]["device"] == "cuda:0"
    from tvmffi_cli.errors import InputError

    with pytest.raises(InputError, match="placed on cpu or cuda"):
        tvmffi_cli.call_function(kernels, "scale2", x, device="rocm")


@pytest.mark.parametrize(
    "arg", ["x.npz:a", "x.npz:a@cuda", "y.npy@float32", "y.npy@float32@cuda:0"]
)
def test_schema_typed_positional_files_reach_the_worker_as_private_copies(
    env, kernels, tmp_path, arg
):
    # A positional re-read by the function's type schema in the worker names
    # its file by the raw text: the parent must have pointed that text at the
    # private copy (else the sandbox denies the user's file: exit 3).
    np.savez(tmp_path / "x.npz", a=np.arange(4, dtype=np.float32))
    np.save(tmp_path / "y.npy", np.arange(4, dtype=np.float32))
    func = "add_one" if "@cuda" in arg else "host_checked"
    r = tvmffi("call", kernels, func, arg, "--json", cwd=tmp_path, env=env)
    if "@float32" in arg:  # read, and refused for what it holds (not raw elements)
        assert r.returncode == 2 and "the file holds float32, not raw elements" in r.stderr
        assert "/tvmffi-inputs-" in r.stderr  # the private copy
        return
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["args"][0]["value"]["data"] == [1.0, 2.0, 3.0, 4.0]

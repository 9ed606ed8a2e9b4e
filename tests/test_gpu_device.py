"""On a real GPU (pytest -m gpu; every test skips with the reason elsewhere):
the CUDA pack of fixtures/cuda/pack.cu, built with nvcc against the official
headers, through `call`, `bench` and `conform`. tools/gpu_check.sh runs this
file and adds the comparison with the official Python package + PyTorch,
the bench against a hand-written CUDA-event loop and the sandbox table.

Cost where a GPU is: about a minute (nvcc ~20 s, some 15 tvmffi processes).
Without one: one subprocess asking for CUDA, then skips.
"""

import json
import os

import numpy as np
import pytest

import gpu_pack
from test_call_helpers import tvmffi, validate

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    why = gpu_pack.no_device()
    if why is not None:
        pytest.skip(f"no CUDA device for tvmffi here: {why}")
    if os.environ.get("TVMFFI_GPU_PACK"):  # built already (tools/gpu_check.sh)
        return os.environ["TVMFFI_GPU_PACK"]
    try:
        return gpu_pack.build(tmp_path_factory.mktemp("pack"))
    except RuntimeError as e:
        pytest.skip(str(e).splitlines()[0])


def test_call_runs_the_kernel_and_copies_back(pack, tmp_path):
    x = np.random.default_rng(0).random(1000, dtype=np.float32)
    np.save(tmp_path / "x.npy", x)
    r = tvmffi(
        "call", pack, "add_one", "x.npy@cuda", "float32[1000]@cuda", "--out", "o", "--json",
        cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "call")
    assert doc["args"][1]["value"]["device"] == "cuda:0" and doc["cuda"]["stream"] == "tvmffi"
    assert np.allclose(np.load(tmp_path / "o" / "arg1.npy"), x + 1)


def test_a_library_that_allocates_on_the_gpu_itself(pack, tmp_path):
    r = tvmffi("call", pack, "scale_alloc", "float32[64]:arange@cuda", "3", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "on cuda:0" in r.stdout.splitlines()[0]
    assert np.allclose(np.load(tmp_path / "result.npy"), 3 * np.arange(64))


def test_an_illegal_address_fails_that_call_with_its_name(pack):
    r = tvmffi("call", pack, "bug_null_write", "float32[1024]@cuda", "--json")
    assert r.returncode == 1
    doc = validate(json.loads(r.stdout), "call")
    assert doc["error"]["kind"] == "CUDA_ERROR_ILLEGAL_ADDRESS"
    assert doc["error"]["cuda"]["sticky"] is True


def test_host_tensors_to_a_cuda_kernel_raise(pack):
    r = tvmffi("call", pack, "add_one", "float32[4]", "float32[4]")
    assert r.returncode == 1 and "x must be a CUDA tensor" in r.stderr


def test_bench_times_with_events(pack):
    r = tvmffi(
        "bench", pack, "add_one", "float32[1048576]:rand@cuda", "float32[1048576]@cuda",
        "--rounds", "5", "--json",
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "bench")
    assert doc["timer"] == "cuda-events" and doc["bytes_per_call"] == 8 << 20
    assert doc["ns_per_call"]["median"] > 0 and doc["bandwidth_gbps"] > 0


def test_conform_catches_the_planted_bugs_and_passes_the_good_kernels(pack):
    r = tvmffi("conform", pack, "--json", timeout=600)
    doc = validate(json.loads(r.stdout), "conform")
    bad = {(x["check"], x["function"]) for x in doc["results"] if x["status"] in ("fail", "error")}
    assert {
        ("device-mismatch", "bug_host_add_one"),
        ("device-bounds", "bug_oob_add_one"),
        ("stream-use", "bug_wrong_stream"),
        ("device-call", "bug_null_write"),
    } <= bad
    good = {"add_one", "mul2", "saxpy", "scale_alloc", "row_sum"}
    assert not {f for _, f in bad} & good, sorted(bad)
    by = {(x["check"], x["function"]): x["status"] for x in doc["results"]}
    for f in good:
        assert by[("device-call", f)] == "pass", f
    assert r.returncode == 1 and doc["verdict"] == "failed"

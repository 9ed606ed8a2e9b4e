"""ml_dtypes tensors in `call` and `bench` (issue 13, item 4): .npy files of
ml_dtypes arrays and literals such as bfloat16[2,3]:arange reach the function
with the right DLPack dtype; --out files load back as the same type; the
C kernels' bf16/fp8 arithmetic equals ml_dtypes' own."""

import json

import ml_dtypes
import numpy as np
import pytest

import fixturebuild
from test_call_helpers import tvmffi, validate
from tvmffi_cli.ffi import mldtypes

# DLPack type codes of the ml_dtypes types, as the DLPack header numbers them.
DL_CODES = {
    "bfloat16": (4, 16),
    "float8_e3m4": (7, 8),
    "float8_e4m3": (8, 8),
    "float8_e4m3b11fnuz": (9, 8),
    "float8_e4m3fn": (10, 8),
    "float8_e4m3fnuz": (11, 8),
    "float8_e5m2": (12, 8),
    "float8_e5m2fnuz": (13, 8),
    "float8_e8m0fnu": (14, 8),
}


def kernels():
    return fixturebuild.build("ecosystem/mlkernels.c", headers="ours", flags=["-lm"])


def call(*args, rc=0, cwd=None):
    r = tvmffi("call", kernels(), *args, "--json", cwd=cwd)
    assert r.returncode == rc, r.stderr + r.stdout
    return validate(json.loads(r.stdout), "call"), r.stderr


def test_the_table_matches_dlpack():
    assert {k: v for k, v in mldtypes.ML_TYPES.items()} == DL_CODES


@pytest.mark.parametrize("name", sorted(DL_CODES))
def test_literal_reaches_the_function_with_its_dlpack_dtype(name):
    doc, _ = call("dtype_of", f"{name}[2,3]:arange")
    code, bits = DL_CODES[name]
    assert doc["result"] == f"{code},{bits},1"
    assert doc["args"][0]["value"]["dtype"] == name


@pytest.mark.parametrize("name", sorted(DL_CODES))
def test_npy_file_reaches_the_function_with_its_dlpack_dtype(tmp_path, name):
    x = np.arange(4).astype(getattr(ml_dtypes, name))
    np.save(tmp_path / "x.npy", x)  # a raw "<V2"/"<V1"/"<f1" descr
    doc, _err = call("dtype_of", f"x.npy@{name}", cwd=tmp_path)
    code, bits = DL_CODES[name]
    assert doc["result"] == f"{code},{bits},1"
    assert "notes" not in doc  # named: nothing assumed


@pytest.mark.parametrize(
    "name,assumed",
    [
        ("bfloat16", "bfloat16"),
        ("float8_e4m3fn", "float8_e4m3fn"),
        ("float8_e4m3", "float8_e4m3fn"),
        ("float8_e5m2", "float8_e5m2"),
    ],
)
def test_raw_npy_elements_are_assumed_and_said(tmp_path, name, assumed):
    np.save(tmp_path / "x.npy", np.arange(3).astype(getattr(ml_dtypes, name)))
    doc, _ = call("dtype_of", "x.npy", cwd=tmp_path)
    code, bits = DL_CODES[assumed]
    assert doc["result"] == f"{code},{bits},1"
    assert len(doc["notes"]) == 1 and f"read as {assumed}" in doc["notes"][0]
    r = tvmffi("call", kernels(), "dtype_of", "x.npy", cwd=tmp_path)
    assert (
        r.returncode == 0 and f"note: argument 0: raw {DL_CODES[assumed][1] // 8}-byte" in r.stderr
    )


def test_wrong_named_dtype_is_exit_2(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros(2, dtype=ml_dtypes.bfloat16))
    r = tvmffi("call", kernels(), "dtype_of", "x.npy@float8_e5m2", cwd=tmp_path)
    assert r.returncode == 2 and "elements are 2 bytes, float8_e5m2 needs 1" in r.stderr
    np.save(tmp_path / "f.npy", np.zeros(2, dtype=np.float32))
    r = tvmffi("call", kernels(), "dtype_of", "f.npy@bfloat16", cwd=tmp_path)
    assert r.returncode == 2 and "not raw elements" in r.stderr


BF16_VALUES = [0.0, 1.0, -1.0, 0.5, 3.140625, 255.0, 256.0, 257.0, -300.0, 1e-3, 65504.0, 1e30]


def test_bf16_add_one_equals_ml_dtypes(tmp_path):
    x = np.array(BF16_VALUES, dtype=np.float32).astype(ml_dtypes.bfloat16)
    np.save(tmp_path / "x.npy", x)
    doc, _ = call("bf16_add_one", "x.npy", "--out", tmp_path / "out", cwd=tmp_path)
    want = (x.astype(np.float32) + 1).astype(ml_dtypes.bfloat16)
    got = np.load(tmp_path / "out" / "arg0.npy")
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()
    assert doc["args"][0]["value"]["data"] == want.astype(np.float32).tolist()


def test_bf16_literal_round_trip(tmp_path):
    call("bf16_add_one", "bfloat16[2,3]:rand", "--out", tmp_path)
    x = np.random.default_rng(0).random((2, 3)).astype(ml_dtypes.bfloat16)  # the literal's fill
    want = (x.astype(np.float32) + 1).astype(ml_dtypes.bfloat16)
    got = np.load(tmp_path / "arg0.npy")
    assert got.dtype == np.dtype(ml_dtypes.bfloat16) and got.shape == (2, 3)
    assert got.view(np.uint16).tolist() == want.view(np.uint16).tolist()


def test_e5m2_add_one_equals_ml_dtypes(tmp_path):
    x = np.array([0, 0.5, 1, 1.5, 3.5, 6, 7, -2, -0.25, 100, 1000], dtype=np.float32).astype(
        ml_dtypes.float8_e5m2
    )
    np.save(tmp_path / "x.npy", x)  # descr "<f1", which np.load cannot read
    call("e5m2_add_one", "x.npy", "--out", tmp_path / "out", cwd=tmp_path)
    want = (x.astype(np.float32) + 1).astype(ml_dtypes.float8_e5m2)
    got = np.load(tmp_path / "out" / "arg0.npy")
    assert got.dtype == np.dtype(ml_dtypes.float8_e5m2)
    assert got.view(np.uint8).tolist() == want.view(np.uint8).tolist()


def test_e4m3fn_decode_and_negate_equal_ml_dtypes(tmp_path):
    x = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn)  # every code
    np.save(tmp_path / "x.npy", x)
    call("e4m3fn_to_f32", "x.npy", "float32[256]:zeros", "--out", tmp_path / "dec", cwd=tmp_path)
    got = np.load(tmp_path / "dec" / "arg1.npy")
    want = x.astype(np.float32)
    assert np.array_equal(got, want, equal_nan=True)
    call("e4m3fn_negate", "x.npy", "--out", tmp_path / "out", cwd=tmp_path)
    neg = np.load(tmp_path / "out" / "arg0.npy")
    assert neg.dtype == np.dtype(ml_dtypes.float8_e4m3fn)
    assert np.array_equal(neg.astype(np.float32), (-x).astype(np.float32), equal_nan=True)


def test_bench_takes_ml_dtypes_tensors():
    r = tvmffi(
        "bench",
        kernels(),
        "dtype_of",
        "bfloat16[1024]:rand",
        "--rounds",
        "2",
        "--repeat",
        "100",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    assert validate(json.loads(r.stdout), "bench")["calls"] == 200

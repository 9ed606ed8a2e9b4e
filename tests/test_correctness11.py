"""Regression tests of issue 11, item 4 and 5: a DLTensor* result, Dict/List
names, the types a loaded library registered, global functions' type schemas.
(A library failing while loading: tests/test_hosts.py.)"""

import json

import numpy as np
import pytest

import fixturebuild
from test_call_helpers import tvmffi, validate


def _official():
    if fixturebuild.official_runtime() is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")


def dl_lib():
    return fixturebuild.build("ecosystem/dltensor_result.c", headers="ours")


def _testing_lib():
    d = fixturebuild.official_package_dir()
    if d is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    return d / "lib" / "libtvm_ffi_testing.so"


def call_json(*args):
    r = tvmffi("call", *args, "--json")
    assert r.returncode == 0, r.stderr + r.stdout
    return validate(json.loads(r.stdout), "call")


@pytest.mark.parametrize("owned", [False, True])
def test_dltensor_result_pointing_into_the_argument(owned):
    # The DLTensor* result is the argument's own DLTensor, which used to be
    # freed before the result was read (garbage dtype/shape, or a crash).
    extra = ["--owned-tensors"] if owned else []
    r = tvmffi("call", dl_lib(), "dl_echo", "float32[2,3]:arange", *extra, "--json")
    if owned:  # an owned Tensor is not a DLTensor*: the library says so
        assert r.returncode == 1 and "dl_echo takes one DLTensor*" in r.stdout
        return
    doc = validate(json.loads(r.stdout), "call")
    assert doc["type"] == "DLTensor*"
    res = doc["result"]
    assert (res["dtype"], res["shape"], res["device"]) == ("float32", [2, 3], "cpu:0")
    assert res["data"] == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_dltensor_result_of_the_library_and_out(tmp_path):
    doc = call_json(dl_lib(), "dl_static")
    assert doc["result"]["data"] == [1.0, 2.0, 3.0, 4.0]
    assert call_json(dl_lib(), "dl_null")["type"] == "None"
    r = tvmffi("call", dl_lib(), "dl_echo", "int32[4]:arange", "--out", tmp_path)
    assert r.returncode == 0, r.stderr
    out = np.load(tmp_path / "result.npy")
    assert out.dtype == np.int32 and out.tolist() == [0, 1, 2, 3]


def test_runtime_types_registered_while_loading_are_not_the_librarys():
    lib = fixturebuild.build("ecosystem/registers_types.c", headers="ours")
    r = tvmffi("inspect", lib, "--json")
    assert r.returncode == 0, r.stderr
    doc = validate(json.loads(r.stdout), "inspect")
    assert [t["type_key"] for t in doc["types"]] == ["eco.Widget"]


@pytest.mark.parametrize(
    "func,arg,typ,value",
    [
        ("testing.schema_id_dict_str_int", '{"a": 1}', "Dict", {"a": 1}),
        ("testing.schema_id_list_int", "[1, 2]", "List", [1, 2]),
        ("testing.schema_id_map_str_int", '{"a": 1}', "Map", {"a": 1}),
        ("testing.schema_id_arr_int", "[1, 2]", "Array", [1, 2]),
    ],
)
def test_dict_and_list_are_named_so(func, arg, typ, value):
    _official()
    doc = call_json(_testing_lib(), func, arg, "--runtime", "official")
    assert (doc["type"], doc["result"]) == (typ, value)


@pytest.mark.parametrize(
    "func,arg,typ,value",
    [
        ("testing.schema_id_float", "3", "float", 3.0),  # guessed int, schema says float
        ("testing.schema_id_string", "42", "str", "42"),  # guessed int, schema says str
        ("testing.schema_id_opt_str", "none", "None", None),
        ("testing.schema_id_bool", "1", "bool", True),
    ],
)
def test_global_type_schema_converts_positional_arguments(func, arg, typ, value):
    _official()
    doc = call_json(_testing_lib(), func, arg, "--runtime", "official")
    assert doc["resolved"] == "global"
    assert (doc["type"], doc["result"]) == (typ, value)


def test_global_type_schema_checks_the_argument_count():
    _official()
    r = tvmffi("call", _testing_lib(), "testing.add_one", "1", "2", "--runtime", "official")
    assert r.returncode == 2
    assert "tvmffi: error: testing.add_one(int) takes 1 argument, got 2\n" in r.stderr

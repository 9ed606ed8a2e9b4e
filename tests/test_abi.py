"""The ctypes mirror (tvmffi_cli/abi/structs.py) matches the C headers: sizes, field
offsets and type indices, checked against a C program compiled with our
header and with the official one."""

import ctypes
import json
import subprocess

import pytest

from tvmffi_cli.abi import structs as abi


def _layout(build_lib, headers):
    exe = build_lib(
        "c/abi_layout.c", headers=headers, shared=False, link_runtime=False, name="abi_layout"
    )
    return json.loads(subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout)


def _check(layout):
    checked = 0
    for key, value in layout.items():
        if key.startswith("k"):
            assert getattr(abi, key) == value, key
        elif "." in key:
            struct, field = key.split(".")
            assert getattr(getattr(abi, struct), field).offset == value, key
        else:
            assert ctypes.sizeof(getattr(abi, key)) == value, key
        checked += 1
    return checked


def test_layout_matches_official_header(build_lib, official_include):
    assert _check(_layout(build_lib, "official")) > 80


def test_layout_matches_our_header(build_lib):
    assert _check(_layout(build_lib, "ours")) > 80


def test_fixed_sizes():
    # The ABI's fixed points, independent of any header.
    assert ctypes.sizeof(abi.TVMFFIAny) == 16
    assert ctypes.sizeof(abi.TVMFFIObject) == 24
    assert abi.OBJECT_HEADER_SIZE == 24
    assert ctypes.sizeof(abi.DLTensor) == 48
    assert abi.TVMFFIAny.v_int64.offset == 8


def test_any_union_views_share_storage():
    a = abi.TVMFFIAny()
    a.v_dtype = abi.DLDataType(abi.kDLFloat, 16, 4)
    assert a.v_uint64 == abi.kDLFloat | (16 << 8) | (4 << 16)
    a.small_str_len = 5
    assert a.zero_padding == 5


@pytest.mark.parametrize(
    "name",
    [
        "TVMFFIFunctionCall",
        "TVMFFIErrorMoveFromRaised",
        "TVMFFIEnvTensorAlloc",
        "TVMFFIGetTypeInfo",
    ],
)
def test_c_api_table_names(name):
    from tvmffi_cli.ffi.runtime import C_API

    assert name in C_API
    assert len(C_API) == 50


def test_c_function_declarations_agree():
    """CFunctions (the typed attributes checkers see) and C_API (what the
    loader binds) declare the same 50 functions with the same arity."""
    import typing

    from tvmffi_cli.abi.capi import C_API_NAMES
    from tvmffi_cli.ffi import cfuncs

    hints = typing.get_type_hints(cfuncs.CFunctions)
    assert set(hints) == set(cfuncs.C_API) == C_API_NAMES
    for name, (restype, argtypes) in cfuncs.C_API.items():
        params, ret = typing.get_args(hints[name])
        assert len(params) == len(argtypes), name
        assert (ret is type(None)) == (restype is None), name

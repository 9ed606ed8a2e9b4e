"""Differential calls of the official test library (libtvm_ffi_testing.so):
each case is one `tvmffi call LIB FUNC ARGS --json` and the same call through
the official Python API (`tvm_ffi`, in its own subprocess: it aborts next to
our runtime). Both sides are reduced to (type name, plain JSON value) and
compared. No test here; tests/test_ecosystem_diff.py runs them.

A case: (FUNC, [(CLI token, Python expression), ...]). The expressions are
evaluated in the official subprocess with `np` and `tvm_ffi` in scope.
"""

from __future__ import annotations

T_F32_23 = ("float32[2,3]:arange", "np.arange(6, dtype='float32').reshape(2, 3)")
T_I64_4 = ("int64[4]:arange", "np.arange(4, dtype='int64')")
T_F64_2 = ("float64[2]:ones", "np.ones(2, dtype='float64')")
T_F32_2Z = ("float32[2]:zeros", "np.zeros(2, dtype='float32')")
T_U8_3 = ("uint8[3]:arange", "np.arange(3, dtype='uint8')")


def I(v: int) -> tuple[str, str]:  # noqa: E743 - short names keep the case table readable
    return (str(v), repr(v))


def S(v: str) -> tuple[str, str]:
    return (v, repr(v))


def J(text: str, py: str | None = None) -> tuple[str, str]:
    """A JSON literal; the Python side is the same text unless given."""
    return (
        text,
        py
        if py is not None
        else text.replace("null", "None").replace("true", "True").replace("false", "False"),
    )


CASES: list[tuple[str, list[tuple[str, str]]]] = [
    # numbers, booleans, None
    ("testing.schema_id_int", [I(5)]),
    ("testing.schema_id_int", [I(-7)]),
    ("testing.schema_id_int", [I(9223372036854775807)]),
    ("testing.schema_id_int", [I(-9223372036854775808)]),
    ("testing.schema_id_float", [("3", "3.0")]),
    ("testing.schema_id_float", [("2.5", "2.5")]),
    ("testing.schema_id_float", [("-0.125", "-0.125")]),
    ("testing.schema_id_float", [("1e300", "1e300")]),
    ("testing.schema_id_bool", [("true", "True")]),
    ("testing.schema_id_bool", [("false", "False")]),
    ("testing.add_one", [I(41)]),
    ("testing.add_one", [I(-1)]),
    ("testing.schema_id_opt_int", [I(3)]),
    ("testing.schema_id_opt_int", [("none", "None")]),
    ("testing.schema_no_args", []),
    ("testing.schema_no_args_no_return", []),
    ("testing.schema_no_return", [I(5)]),
    ("testing.schema_id_any", [I(5)]),
    ("testing.schema_id_any", [("2.5", "2.5")]),
    ("testing.schema_id_any", [("true", "True")]),
    ("testing.schema_id_any", [("none", "None")]),
    # strings, bytes, dtypes, devices, variants
    ("testing.schema_id_string", [S("hello")]),
    ("testing.schema_id_string", [("", "''")]),
    ("testing.schema_id_string", [S("a much longer string that is not small at all")]),
    ("testing.schema_id_string", [S("h\u00e9llo \u2192 \u4e16\u754c")]),
    ("testing.schema_id_opt_str", [S("abc")]),
    ("testing.schema_id_opt_str", [("none", "None")]),
    ("testing.schema_id_bytes", [("616263", "b'abc'")]),
    ("testing.schema_id_bytes", [("00ff10", "b'\\x00\\xff\\x10'")]),
    ("testing.schema_id_any", [('"text"', "'text'")]),
    ("testing.schema_id_dtype", [("float32", "tvm_ffi.dtype('float32')")]),
    ("testing.schema_id_dtype", [("int8x4", "tvm_ffi.dtype('int8x4')")]),
    ("testing.schema_id_dtype", [("bfloat16", "tvm_ffi.dtype('bfloat16')")]),
    ("testing.schema_id_dtype", [("bool", "tvm_ffi.dtype('bool')")]),
    ("testing.schema_id_device", [("cpu:0", "tvm_ffi.device('cpu', 0)")]),
    ("testing.schema_id_device", [("cuda:1", "tvm_ffi.device('cuda', 1)")]),
    ("testing.schema_id_variant_int_str", [I(7)]),
    ("testing.schema_id_variant_int_str", [S("abc")]),
    ("testing.schema_variant_mix", [I(5)]),
    ("testing.schema_variant_mix", [S("xyz")]),
    ("testing.schema_variant_mix", [J("[1, 2]")]),
    # containers: Array, Map, List, Dict
    ("testing.schema_id_arr_int", [J("[1, 2, 3]")]),
    ("testing.schema_id_arr_int", [J("[]")]),
    ("testing.schema_id_arr_str", [J('["a", "b"]')]),
    ("testing.schema_id_arr", [J('[1, "a", 2.5]')]),
    ("testing.schema_id_map", [J('{"a": 1}')]),
    ("testing.schema_id_map_str_int", [J('{"a": 1, "b": 2}')]),
    ("testing.schema_id_map_str_str", [J('{"k": "v"}')]),
    ("testing.schema_id_list_int", [J("[1, 2]")]),
    ("testing.schema_id_list_str", [J('["x"]')]),
    ("testing.schema_id_dict_str_int", [J('{"a": 1}')]),
    ("testing.schema_id_dict_str_str", [J('{"a": "b"}')]),
    ("testing.schema_arr_map_opt", [J("[1, null, 3]"), J('{"a": [1, 2]}'), ("none", "None")]),
    ("testing.schema_arr_map_opt", [J("[]"), J("{}"), S("s")]),
    ("testing.schema_id_any", [J("[1, 2]")]),
    ("testing.schema_id_any", [J('{"a": 1}')]),
    ("ffi.Array", [I(1), I(2), I(3)]),
    ("ffi.Shape", [I(2), I(3)]),
    # enums and objects
    ("testing.enum_variant_get", [S("Alpha")]),
    ("testing.enum_variant_get", [S("Beta")]),
    ("testing.enum_variant_get", [S("Gamma")]),
    ("testing.make_unregistered_object", []),
    ("testing.make_visit_region_graph", [("true", "True")]),
    # tensors
    ("testing.schema_id_tensor", [T_F32_23]),
    ("testing.schema_id_tensor", [T_I64_4]),
    ("testing.schema_id_tensor", [T_U8_3]),
    ("testing.make_array_with_tensor", [T_F64_2]),
    ("testing.make_dict_with_tensor", [T_F64_2]),
    ("testing.make_list_with_tensor", [T_F64_2, I(2)]),
    ("testing.make_map_with_tensor", [T_F64_2]),
    ("testing.make_nested_array_with_tensor", [T_F64_2]),
    ("testing.make_nested_map_with_tensor", [T_F64_2, T_I64_4]),
    ("testing.make_array_with_mixed", [T_F64_2, I(3)]),
    ("testing.make_empty_array_with_tensor_input", [T_F64_2]),
    ("testing.optional_tensor_view_has_value", [T_F32_2Z]),
    ("testing.optional_tensor_view_has_value", [("none", "None")]),
    ("testing.schema_tensor_view_input", [T_F32_2Z]),
    ("testing.schema_id_dltensor", [T_F32_2Z]),
    # errors
    ("testing.test_raise_error", [S("ValueError"), S("boom")]),
    ("testing.test_raise_error", [S("RuntimeError"), S("two words")]),
    ("testing.test_raise_error", [S("TypeError"), S("")]),
    ("testing.test_raise_error", [S("IndexError"), S("out of range")]),
]


# Runs in the official subprocess: argv[1] = JSON [[func, [py expr...]], ...];
# prints JSON [[type, value] or ["raised", kind, message], ...].
OFFICIAL_DRIVER = r"""
import base64, json, math, sys
import numpy as np
import tvm_ffi

def jf(v):
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v

def fields_of(v):
    out, info = {}, type(v).__tvm_ffi_type_info__
    chain = []
    while info is not None:
        chain.append(info)
        info = info.parent_type_info
    for info in reversed(chain):
        for f in info.fields:
            try:
                out[f.name] = plain(getattr(v, f.name))
            except Exception as e:
                out[f.name] = {"unreadable": type(e).__name__}
    return out

def key(k):
    return k if isinstance(k, str) else json.dumps(plain(k), separators=(",", ":"))

def tensor(v):
    arr = np.from_dlpack(v)
    return {"dtype": str(v.dtype), "shape": [int(x) for x in v.shape],
            "device": str(v.device), "data": arr.tolist()}

def typed(v):
    if v is None:
        return "None", None
    if isinstance(v, bool):
        return "bool", v
    if isinstance(v, tvm_ffi.Shape):
        return "Shape", [int(x) for x in v]
    if isinstance(v, int):
        return "int", int(v)
    if isinstance(v, float):
        return "float", jf(v)
    if isinstance(v, tvm_ffi.dtype):
        return "DataType", str(v)
    if isinstance(v, str):
        return "str", str(v)
    if isinstance(v, bytes):
        return "bytes", base64.b64encode(v).decode()
    if isinstance(v, tvm_ffi.Device):
        return "Device", str(v)
    if isinstance(v, tvm_ffi.List):
        return "List", [plain(x) for x in v]
    if isinstance(v, tvm_ffi.Array):
        return "Array", [plain(x) for x in v]
    if isinstance(v, tvm_ffi.Dict):
        return "Dict", {key(k): plain(x) for k, x in v.items()}
    if isinstance(v, tvm_ffi.Map):
        return "Map", {key(k): plain(x) for k, x in v.items()}
    if isinstance(v, tvm_ffi.Tensor):
        return "Tensor", tensor(v)
    if isinstance(v, tvm_ffi.Function):
        return "Function", {"type": "ffi.Function"}
    if isinstance(v, tvm_ffi.Object):
        return "Object", {"type": type(v).__tvm_ffi_type_info__.type_key, "fields": fields_of(v)}
    return "other", type(v).__name__

def plain(v):
    return typed(v)[1]

out = []
for func, exprs in json.loads(sys.argv[1]):
    try:
        args = [eval(e, {"np": np, "tvm_ffi": tvm_ffi}) for e in exprs]
        r = tvm_ffi.get_global_func(func)(*args)
        out.append(list(typed(r)))
    except Exception as e:
        out.append(["raised", type(e).__name__, str(e)])
print(json.dumps(out))
"""


def ours_canonical(doc: dict) -> list:
    """(type, plain value) of a `tvmffi call --json` document, in the
    official driver's form (tensors without strides, DLTensor* as Tensor)."""
    if "error" in doc:
        return ["raised", doc["error"]["kind"], doc["error"]["message"]]
    return [_type(doc["type"]), _plain(doc["result"])]


def _type(t: str) -> str:
    return "Tensor" if t in ("Tensor", "DLTensor*") else t


def _plain(v):
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        if v.get("type") in ("ffi.Tensor", "DLTensor*") and "dtype" in v:
            return {k: v.get(k) for k in ("dtype", "shape", "device", "data")}
        return {k: _plain(x) for k, x in v.items()}
    return v

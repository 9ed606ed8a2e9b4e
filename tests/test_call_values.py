"""Every value type through `tvmffi call`: sent with typed flags or
schema-typed positionals, echoed back by our C fixture (basic.c `echo`) and by
the official-header C++ fixtures (kitchen.cc `echo_any`, typed.cc), decoded and
rendered (JSON validated against the schema). Each runs on both runtimes.

These go through the call task in one persistent worker per runtime (see
InProcessCall) rather than the whole CLI, so hundreds of calls stay fast; the
CLI end to end is covered by test_call.py."""

import json

import pytest

from test_call import rt  # noqa: F401  (rt: fixture over both runtimes)
from test_call_helpers import InProcessCall, basic, kernels, kitchen, tvmffi, typed


@pytest.fixture(scope="module")
def calls():
    made = {}
    # One worker per runtime for the module (setdefault(k, InProcessCall(k))
    # would start, and leak, a new one on every call).
    yield lambda runtime: made.get(runtime) or made.setdefault(runtime, InProcessCall(runtime))
    for c in made.values():
        c.close()


@pytest.fixture
def call_json(calls, rt):  # noqa: F811
    return lambda lib, *argv, expect="ok": calls(rt).json(lib, *argv, expect=expect)


@pytest.fixture
def call_text(calls, rt):  # noqa: F811
    return lambda lib, *argv: calls(rt).text(lib, *argv)


# flag args -> (type, plain JSON value) of the echoed result
ECHO_CASES = [
    (["--none"], "None", None),
    (["--int", "-9223372036854775808"], "int", -9223372036854775808),
    (["--bool", "true"], "bool", True),
    (["--float", "0.1"], "float", 0.1),
    (["--float", "-inf"], "float", "-Infinity"),
    (["--float", "nan"], "float", "NaN"),
    (
        ["--str", "héllo wörld, longer than seven bytes"],
        "str",
        "héllo wörld, longer than seven bytes",
    ),
    (["--str", "tiny"], "str", "tiny"),
    (["--bytes", "00ff10"], "bytes", "AP8Q"),
    (["--dtype", "bfloat16"], "DataType", "bfloat16"),
    (["--dtype", "int8x4"], "DataType", "int8x4"),
    (["--device", "cuda:1"], "Device", "cuda:1"),
    (["--shape", "2,3,4"], "Shape", [2, 3, 4]),
    (["--value", '[1, "two", [3.5, null], true]'], "Array", [1, "two", [3.5, None], True]),
    (["--value", '{"a": 1, "b": {"c": [2]}}'], "Map", {"a": 1, "b": {"c": [2]}}),
    (["--value", "[]"], "Array", []),
]


@pytest.mark.parametrize("flags,typ,value", ECHO_CASES)
def test_round_trip_through_c_echo(flags, typ, value, rt, call_json):  # noqa: F811
    doc = call_json(basic(), "echo", *flags)
    assert doc["type"] == typ
    assert doc["result"] == value
    assert doc["args"][0]["type"] == typ


@pytest.mark.parametrize("flags,typ,value", ECHO_CASES)
def test_round_trip_through_official_cpp_echo(flags, typ, value, rt, call_json):  # noqa: F811
    doc = call_json(kitchen(), "echo_any", *flags)
    assert doc["type"] == typ
    assert doc["result"] == value


def test_c_side_sees_the_types_we_send(rt, call_json):  # noqa: F811
    """The type index each flag arrives with in a plain C function."""
    expect = {
        "--none": 0,
        "--int": 1,
        "--bool": 2,
        "--float": 3,
        "--dtype": 5,
        "--device": 6,
        "--str": 8,
        "--bytes": 9,
        "--shape": 69,
        "--tensor": 7,
    }
    values = {
        "--int": "1",
        "--bool": "0",
        "--float": "1",
        "--dtype": "int32",
        "--device": "cpu",
        "--str": "s",
        "--bytes": "00",
        "--shape": "1",
        "--tensor": "int32[1]",
    }
    for flag, index in expect.items():
        args = [flag] if flag == "--none" else [flag, values[flag]]
        doc = call_json(kernels(), "describe", *args)
        assert doc["result"] == f"type_index:{index}", flag
    doc = call_json(kernels(), "describe", "--value", "[1]")
    assert doc["result"] == "type_index:71"
    doc = call_json(kernels(), "describe", "--value", '{"k": 1}')
    assert doc["result"] == "type_index:72"


# -- results of every kind from typed.cc -------------------------------------------

RESULTS = [
    ("make_map", "Map", {"a": 1, "b": 2}),
    ("make_int_key_map", "Map", {"7": "seven"}),
    ("make_shape", "Shape", [2, 3, 4]),
    ("make_mixed", "Array", [1, 2.5, "x", [3, 4], None, True]),
    ("make_bytes", "bytes", "AAH+/w=="),
    ("make_dtype", "DataType", "bfloat16"),
    ("make_device", "Device", "cuda:1"),
    ("make_nan", "float", "NaN"),
    ("make_inf", "float", "-Infinity"),
    ("make_long_string", "str", "z" * 100),
    ("make_function", "Function", {"type": "ffi.Function"}),
]


@pytest.mark.parametrize("func,typ,value", RESULTS)
def test_result_types(func, typ, value, rt, call_json):  # noqa: F811
    doc = call_json(typed(), func)
    assert (doc["type"], doc["result"]) == (typ, value)


def test_registered_object_result(rt, call_json):  # noqa: F811
    doc = call_json(kitchen(), "make_point", "3", "4.5", "here")
    assert doc["type"] == "Object"
    assert doc["result"] == {"type": "kitchen.Point", "fields": {"x": 3, "y": 4.5, "label": "here"}}


def test_human_rendering_of_values(rt, call_text):  # noqa: F811
    cases = [
        (typed(), ["make_map"], '{"a": 1, "b": 2}'),
        (typed(), ["make_shape"], "Shape(2, 3, 4)"),
        (typed(), ["make_mixed"], '[1, 2.5, "x", [3, 4], None, True]'),
        (typed(), ["make_bytes"], "b'\\x00\\x01\\xfe\\xff'"),
        (typed(), ["make_dtype"], "bfloat16"),
        (typed(), ["make_device"], "cuda:1"),
        (typed(), ["make_nan"], "nan"),
        (typed(), ["make_function"], "<Function>"),
        (typed(), ["concat", "a", "b"], '"ab"'),
        (kitchen(), ["make_point", "1", "2", "p"], 'kitchen.Point(x=1, y=2.0, label="p")'),
        (kitchen(), ["iota", "3"], "<Tensor float32[3] on cpu:0>\n  [0. , 0.5, 1. ]"),
    ]
    for lib, args, text in cases:
        assert call_text(lib, *args) == text, args


# -- schema-typed positionals ----------------------------------------------------------

TYPED = [
    (["sum_list", "[1,2,3]"], 6),
    (["nested_total", "[[1,2],[3]]"], 6),
    (["scale", "3", "none"], 6.0),
    (["scale", "3", "0.5"], 1.5),
    (["sum_values", '{"a": 1, "b": 5}'], 6),
    (["shape_prod", "2,3,4"], 24),
    (["shape_prod", "[5]"], 5),
    (["dtype_bits", "int8x4"], 32),
    (["device_code", "cuda:3"], 203),
    (["concat", "1", "2"], "12"),  # str parameters keep digits as text
    (["bytes_len", "00ff"], 2),
    (["negate", "true"], False),
    (["check_positive", "5"], 5),
]


@pytest.mark.parametrize("args,expect", TYPED)
def test_schema_typed_positionals(args, expect, rt, call_json):  # noqa: F811
    doc = call_json(typed(), *args)
    assert doc["result"] == expect


def test_schema_typed_positionals_in_kitchen(rt, call_json):  # noqa: F811
    assert call_json(kitchen(), "counts", '["a","b","a"]')["result"] == {"a": 2, "b": 1}
    assert call_json(kitchen(), "map_get", '{"k": 7}', "k")["result"] == 7
    assert call_json(kitchen(), "opt_name", "none")["result"] == "<none>"
    assert call_json(kitchen(), "widen", "float16")["result"] == "float32"
    assert call_json(kitchen(), "reverse", "0102")["result"] == "AgE="


@pytest.mark.parametrize(
    "args,msg",
    [
        (["sum_list", '[1,"a"]'], 'argument 0: "a" is not an int'),
        (["sum_list", "1", "2"], "sum_list(Array[int]) takes 1 argument, got 2"),
        (["dtype_bits", "floaty"], "bad dtype 'floaty'"),
        (["negate", "maybe"], "expected bool"),
        (["sum_values", "[1]"], "is not a JSON object"),
    ],
)
def test_schema_typed_positional_errors(args, msg, rt, call_json):  # noqa: F811
    reply = call_json(typed(), *args, expect="input_error")
    assert msg in reply.message and reply.exit_code == 2


def test_without_schema_positionals_are_inferred(rt, call_json):  # noqa: F811
    """basic.c has no metadata: "12" is an int, "x" a string, [..] an Array."""
    doc = call_json(basic(), "echo", "12")
    assert (doc["type"], doc["result"]) == ("int", 12)
    doc = call_json(basic(), "echo", '"12"')
    assert (doc["type"], doc["result"]) == ("str", "12")
    doc = call_json(basic(), "echo", "[1,2]")
    assert (doc["type"], doc["result"]) == ("Array", [1, 2])


def test_json_output_is_strict_json(rt):  # noqa: F811
    """NaN and infinities travel as strings: the output parses with a strict parser."""
    r = tvmffi("call", typed(), "make_nan", "--json", "--runtime", rt)

    def refuse(name):
        raise ValueError(name)

    json.loads(r.stdout, parse_constant=refuse)


def test_bytes_from_a_file(tmp_path, rt, call_json):  # noqa: F811
    blob = bytes(range(256)) * 3
    (tmp_path / "blob.bin").write_bytes(blob)
    doc = call_json(basic(), "echo", "--bytes", f"@{tmp_path}/blob.bin")
    import base64

    assert doc["type"] == "bytes" and base64.b64decode(doc["result"]) == blob
    doc = call_json(typed(), "bytes_len", f"@{tmp_path}/blob.bin")  # schema-typed positional
    assert doc["result"] == 768

"""Type schemas -> readable signatures, literal conversion, and bad schemas
raising FormatError (never another exception)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tvmffi_cli.abi import typeschema as schema
from tvmffi_cli.errors import FormatError, InputError


def fn(ret, *params):
    return {"type": "ffi.Function", "named_args": {"return": [ret], "params": list(params)}}


T = lambda k, *a: {"type": k, "args": list(a)} if a else {"type": k}


@pytest.mark.parametrize(
    "name,node,text",
    [
        ("mul3", fn(T("int"), T("int"), T("int"), T("int")), "mul3(int, int, int) -> int"),
        (
            "scale",
            fn(T("float"), T("float"), T("Optional", T("float"))),
            "scale(float, Optional[float]) -> float",
        ),
        (
            "c",
            fn(T("int"), T("ffi.Array", T("int")), T("ffi.Map", T("ffi.String"), T("int"))),
            "c(Array[int], Map[str, int]) -> int",
        ),
        (
            "t",
            fn(T("ffi.Tensor"), T("ffi.Tensor"), T("DLTensor*")),
            "t(Tensor, DLTensor*) -> Tensor",
        ),
        ("v", fn(T("None")), "v() -> None"),
        (
            "o",
            fn(T("my.Point"), T("my.Point"), T("Variant", T("int"), T("ffi.String"))),
            "o(my.Point, Variant[int, str]) -> my.Point",
        ),
        ("f", fn(T("int"), fn(T("float"), T("int"))), "f(Callable[[int], float]) -> int"),
        (
            "d",
            fn(T("DataType"), T("Device"), T("ffi.Shape"), T("ffi.Bytes")),
            "d(Device, Shape, bytes) -> dtype",
        ),
    ],
)
def test_signatures(name, node, text):
    assert schema.parse_type(json.dumps(node)).signature(name) == text


def test_metadata_string_as_the_official_getter_returns_it():
    inner = json.dumps(fn(T("int"), T("int")))
    md = json.dumps({"type_schema": inner})
    assert schema.signature("inc", md) == "inc(int) -> int"
    assert schema.signature("inc", {"type_schema": json.loads(inner)}) == "inc(int) -> int"
    assert schema.signature("x", "{}") is None


def test_type_spec_hook_for_call():
    spec = schema.parse_type(
        fn(T("int"), T("int"), T("Optional", T("float")), T("ffi.Array", T("int")))
    )
    p = spec.params
    assert [x.name for x in p] == ["int", "Optional", "Array"]
    assert p[1].args[0].name == "float"
    assert schema.convert_literal(p[0], "0x10") == 16
    assert schema.convert_literal(p[1], "None") is None
    assert schema.convert_literal(p[1], "2.5") == 2.5
    assert schema.convert_literal(p[2], "[1, 2]") == [1, 2]
    with pytest.raises(InputError, match=r"arg\[1\]: expected int"):
        schema.convert_literal(p[2], [1, "x"], "arg")
    with pytest.raises(InputError):
        schema.convert_literal(p[0], True)
    m = schema.parse_type(T("ffi.Map", T("ffi.String"), T("int")))
    assert schema.convert_literal(m, '{"a": "3"}') == {"a": 3}
    assert schema.convert_literal(schema.parse_type(T("bool")), "false") is False


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        "[]",
        "{}",
        '{"type": 3}',
        '{"type": "ffi.Array", "args": 5}',
        '{"type": "ffi.Function", "named_args": []}',
        '{"type": "ffi.Function", "named_args": {"return": [{"type":"int"}, {"type":"int"}]}}',
        "[" * 5000 + "]" * 5000,
        json.dumps(T("Optional", *[T("int")])).replace('{"type": "int"}', '{"type": ""}'),
    ],
)
def test_bad_schemas_raise_format_error(bad):
    with pytest.raises(FormatError):
        schema.parse_type(bad)


def test_deep_nesting_is_bounded():
    node = T("int")
    for _ in range(schema.MAX_DEPTH + 5):
        node = T("Optional", node)
    with pytest.raises(FormatError, match="deeper"):
        schema.parse_type(node)


def test_signature_of_non_function_raises():
    with pytest.raises(FormatError, match="not a function"):
        schema.parse_type(T("int")).signature("x")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(["type", "args", "named_args", "return", "params", "x"]),
            kids,
            max_size=4,
        )
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_random_json_gives_spec_or_format_error(value):
    try:
        spec = schema.parse_type(value)
    except FormatError:
        return
    assert isinstance(spec.render(), str)
    if spec.is_function:
        assert spec.signature("f").startswith("f(")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_random_text_gives_spec_or_format_error(text):
    try:
        schema.parse_metadata(text)
    except FormatError:
        pass

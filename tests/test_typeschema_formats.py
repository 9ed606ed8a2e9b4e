"""Every format of a type schema the official releases write parses into the
one model (abi/typeschema.py), and the commands built on it agree."""

from __future__ import annotations

import json

import pytest

from tvmffi_cli.abi import typeschema as ts
from tvmffi_cli.conform import sigs
from tvmffi_cli.diff import engine as diff
from tvmffi_cli.errors import FormatError
from tvmffi_cli.inspect.api import Api, Func, Method, ObjectType, TypeRef

INT, STR = {"type": "int"}, {"type": "ffi.String"}
OLD = {"type": "ffi.Function", "args": [INT, INT, STR]}  # 0.1.0 .. 0.1.14
NEW = {"type": "ffi.Function", "named_args": {"return": [INT], "params": [INT, STR]}}  # 0.1.15
STD_OLD = {"type": "std::function", "args": [INT, [INT, STR]]}  # 0.1.14's stl.h
STD_NEW = {"type": "std::function", "named_args": {"return": [INT], "params": [INT, STR]}}


@pytest.mark.parametrize("schema", [OLD, NEW, json.dumps(OLD), json.dumps(NEW)])
def test_old_and_new_function_formats_are_one_type(schema):
    t = ts.parse_type(schema)
    assert t == TypeRef("ffi.Function", (), (TypeRef("int"), TypeRef("ffi.String")), TypeRef("int"))
    assert t.args == () and t.signature("f") == "f(int, str) -> int"
    assert t.to_json() == {
        "type": "ffi.Function",
        "params": [INT, STR],
        "return": INT,
    }
    assert ts.TypeSpec.from_json(t.to_json()) == t


def test_std_function_both_formats():
    assert ts.parse_type(STD_OLD) == ts.parse_type(STD_NEW)
    assert ts.parse_type(STD_OLD).signature("g") == "g(int, str) -> int"


def test_nested_function_types_old_format():
    inner = {"type": "ffi.Function", "args": [{"type": "None"}, INT]}
    t = ts.parse_type({"type": "ffi.Function", "args": [inner, inner]})
    assert t.signature("h") == "h(Callable[[int], None]) -> Callable[[int], None]"


def test_untyped_function_says_nothing():
    t = ts.parse_type({"type": "ffi.Function"})
    assert t.is_untyped_function and not t.is_function and t.params is None
    assert t.signature("apply") == "apply(...) -> Any"
    assert ts.function_type('{"type_schema": "{\\"type\\":\\"ffi.Function\\"}"}') is None
    assert sigs.parse_type_schema({"type": "ffi.Function"}) is None


def test_return_only_old_format_is_a_function_of_no_parameters():
    t = ts.parse_type({"type": "ffi.Function", "args": [STR]})
    assert t.params == () and t.signature("name") == "name() -> str"


def test_metadata_with_type_schema_as_an_object():
    # 0.1.10's auto-init __ffi_init__ writes the schema as an object, not JSON text
    raw = '{"type_schema":{"type":"ffi.Function"},"auto_init":true}'
    md, t = ts.parse_metadata(raw)
    assert md["auto_init"] is True and t is not None and t.is_untyped_function
    md, t = ts.parse_metadata({"type_schema": OLD, "bool_attr": True})
    assert t is not None and len(t.params or ()) == 2


@pytest.mark.parametrize(
    "bad",
    [
        '{"type_schema": 3}',
        '{"type_schema": "{\\"type\\":\\"int\\",\\"named_args\\":{}}"}',
        '{"type_schema": "{\\"type\\":\\"ffi.Function\\",\\"args\\":[1]}"}',
        '["not", "an", "object"]',
        "not json",
    ],
)
def test_malformed_metadata_is_a_format_error(bad):
    with pytest.raises(FormatError):
        ts.function_type(bad)
    with pytest.raises(sigs.SchemaError):
        sigs.parse_metadata(bad)


def test_non_function_schema_of_a_function_is_an_error():
    with pytest.raises(FormatError, match="not a function type"):
        ts.function_type('{"type_schema": "{\\"type\\":\\"int\\"}"}')


def test_conform_reads_both_formats_alike():
    a = sigs.parse_metadata(json.dumps({"type_schema": json.dumps(OLD)}))[1]
    b = sigs.parse_metadata(json.dumps({"type_schema": json.dumps(NEW)}))[1]
    assert a is not None and b is not None
    assert (a.params, a.ret) == (b.params, b.ret)
    assert [p["type"] for p in a.params] == ["int", "ffi.String"]


def _api(funcs=(), globals_=(), types=()):
    return Api("x", "loaded", tuple(funcs), tuple(globals_), tuple(types), (), (), (), (), ())


def test_diff_gaining_a_signature_is_compatible_everywhere():
    untyped, typed = ts.parse_type({"type": "ffi.Function"}), ts.parse_type(NEW)
    old_fmt = ts.parse_type(OLD)
    ty = lambda t: ObjectType("k.T", "ffi.Object", (), (Method("m", t, False, None),))
    res = diff.compare(
        _api([Func("e", untyped)], [Func("g", untyped)], [ty(untyped)]),
        _api([Func("e", typed)], [Func("g", typed)], [ty(typed)]),
    )
    assert [(c.kind, c.compatible) for c in res.changes] == [
        ("export.type_added", True),
        ("global.type_added", True),
        ("type.method_type_added", True),
    ]
    # the same signature in the old and the new format is no change at all
    same = diff.compare(
        _api([Func("e", old_fmt)], [Func("g", old_fmt)], [ty(old_fmt)]),
        _api([Func("e", typed)], [Func("g", typed)], [ty(typed)]),
    )
    assert same.changes == ()


@pytest.mark.parametrize(
    ("schema", "status", "message"),
    [
        (OLD, "pass", "f(int, str) -> int"),
        (NEW, "pass", "f(int, str) -> int"),
        ({"type": "ffi.Function"}, "pass", "f(...) -> Any"),  # untyped: declares nothing
        (INT, "fail", "type_schema is int, not a function type"),
    ],
)
def test_conform_metadata_json_accepts_every_release_format(schema, status, message):
    from tvmffi_cli.conform.checks_probe import FunctionFacts, check_metadata_json

    f = FunctionFacts("f", {"metadata"})
    text = json.dumps({"type_schema": json.dumps(schema)})
    f.obs["metadata"] = {"rc": 0, "value_hex": text.encode().hex()}
    r = check_metadata_json(f)
    assert (r.status, r.message) == (status, message)

"""Stub names that clash with Python's object model or with a namespace
(both seen in apache-tvm 0.27's compiler library): the stub must still pass
`mypy --strict`. The rule is in stubs/engine.py's docstring."""

from __future__ import annotations

import releases
from test_stubs import _mypy
from tvmffi_cli import stubs
from tvmffi_cli.inspect.api import Api, Field, Func, Method, ObjectType, TypeRef


def _fn(params: tuple[TypeRef, ...], ret: TypeRef) -> TypeRef:
    return TypeRef("ffi.Function", (), params, ret)


def clashing_api() -> Api:
    pass_t, span_t = TypeRef("transform.Pass"), TypeRef("ir.Span")
    types = (
        # a reflected field named like object.__dict__, and one named like a builtin
        ObjectType(
            "ir.DictAttrs",
            "ffi.Object",
            (
                Field(
                    "__dict__",
                    TypeRef("ffi.Map", (TypeRef("ffi.String"), TypeRef("Any"))),
                    False,
                    None,
                ),
                Field("int", TypeRef("int"), True, None),
                Field("count", TypeRef("int"), True, None),
            ),
            (Method("__ffi_shallow_copy__", None, False, None),),
        ),
        ObjectType("ir.Span", "ffi.Object", (), ()),
        ObjectType("transform.Pass", "ffi.Object", (), ()),
        # inside class `relax`, the namespace relax.transform hides top-level `transform`
        ObjectType("relax.DataflowBlockPass", "transform.Pass", (), ()),
    )
    globals_ = (
        Func("relax.transform.Normalize", _fn((), pass_t)),
        Func("relax.apply", _fn((pass_t,), pass_t)),
        # inside class `script.builder`, its namespace `ir` hides top-level `ir`
        Func("script.builder.ir.Begin", _fn((), TypeRef("None"))),
        Func("script.builder.PushSpan", _fn((span_t,), TypeRef("None"))),
    )
    return Api("x", "loaded", (), globals_, types, (), (), (), (), ())


def test_names_clashing_with_python_and_namespaces_pass_mypy_strict(tmp_path):
    r = stubs.render(clashing_api(), "x.so")
    lines = r.text.splitlines()
    assert "        # field '__dict__'" in lines
    assert "        def __dict___(self) -> Mapping[str, Any]: ..." in lines
    assert "        int_: int" in lines and "        count: int" in lines
    assert any("def __ffi_shallow_copy__(self" in ln for ln in lines)  # TVM-FFI's own dunder
    assert "    class DataflowBlockPass(_root_transform.Pass):" in lines
    assert "    def apply(arg0: _root_transform.Pass, /) -> _root_transform.Pass: ..." in lines
    assert "        def PushSpan(arg0: _root_ir.Span, /) -> None: ..." in lines
    assert lines[-2:] == ["_root_ir = ir", "_root_transform = transform"]
    p = tmp_path / "x.pyi"
    p.write_text(r.text)
    _mypy(p)


def test_compiler_library_of_apache_tvm_027_passes_mypy_strict(tmp_path):
    lib = releases.extract(
        releases.fetch_wheel("apache-tvm", "0.27.0"), "tvm/lib/libtvm_compiler.so"
    )
    r = stubs.generate(str(lib), timeout=120)
    assert (r.globals, r.types) == (1830, 472)
    assert r.typed == 1640
    p = tmp_path / "tvm_compiler.pyi"
    p.write_text(r.text)
    _mypy(p)


def test_a_namespace_function_named_like_a_top_level_class_passes_mypy_strict(tmp_path):
    # tilelang's `diagnostics.Diagnostic(...)` builds the top-level type
    # `Diagnostic`: inside class `diagnostics` the static method hides the class
    # its own annotations name (7 mypy errors in tilelang 0.1.9..0.1.14 stubs).
    diag, ctx = TypeRef("Diagnostic"), TypeRef("DiagnosticContext")
    api = Api(
        "x",
        "loaded",
        (),
        (
            Func("diagnostics.Diagnostic", _fn((TypeRef("int"),), diag)),
            Func("diagnostics.DiagnosticContext", _fn((), ctx)),
            Func("diagnostics.Emit", _fn((ctx, diag), TypeRef("None"))),
        ),
        (
            ObjectType("Diagnostic", "ffi.Object", (), ()),
            ObjectType("DiagnosticContext", "ffi.Object", (), ()),
        ),
        (),
        (),
        (),
        (),
        (),
    )
    r = stubs.render(api, "x.so")
    lines = r.text.splitlines()
    assert "    def Diagnostic(arg0: int, /) -> _root_Diagnostic: ..." in lines
    assert (
        "    def Emit(arg0: _root_DiagnosticContext, arg1: _root_Diagnostic, /) -> None: ..."
        in lines
    )
    assert lines[-2:] == [
        "_root_Diagnostic = Diagnostic",
        "_root_DiagnosticContext = DiagnosticContext",
    ]
    p = tmp_path / "x.pyi"
    p.write_text(r.text)
    _mypy(p)

"""`tvmffi stubs`: typed .pyi stubs of a C++ library with metadata
(fixtures/cpp/kitchen.cc and fixtures/tools/api.cc, built in the test run),
checked with mypy --strict (and pyright when installed)."""

import functools
import importlib.util
import json
import shutil
import subprocess
import sys

import pytest

import fixturebuild
import tools_fixtures as tf
from test_call_helpers import kitchen, tvmffi, validate
from tvmffi_cli import stubs


@functools.cache
def api_v1():
    return fixturebuild.build(
        "tools/api.cc",
        name="api-v1-O1",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        flags=["-O1"],
    )


@functools.cache
def kitchen_stub():
    r = tvmffi("stubs", kitchen())
    assert r.returncode == 0, r.stderr
    return r.stdout


def _mypy(path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install mypy)")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(path.parent / ".mypy_cache"),
            str(path),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=path.parent,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success: no issues found in 1 source file" in r.stdout


def _pyright(path):
    exe = shutil.which("pyright")
    if exe is None:
        pytest.skip("pyright is not installed (pip install pyright)")
    r = subprocess.run(
        [exe, str(path)], check=False, capture_output=True, text=True, cwd=path.parent, timeout=300
    )
    if r.returncode != 0 and "0 errors" not in r.stdout and "error" not in r.stdout:
        pytest.skip(f"pyright could not run here: {(r.stdout + r.stderr).strip()[:200]}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 errors" in r.stdout


def test_kitchen_exports_are_typed_and_documented():
    text = kitchen_stub()
    lines = text.splitlines()
    assert "def add(arg0: int, arg1: int, /) -> int:" in lines
    i = lines.index("def add(arg0: int, arg1: int, /) -> int:")
    assert lines[i + 1 : i + 5] == ['    """Add two integers.', "", "    Returns a + b.", '    """']
    for sig in (
        "def scale(arg0: float, arg1: float | None, /) -> float:",
        "def counts(arg0: Sequence[str], /) -> Mapping[str, int]: ...",
        "def map_get(arg0: Mapping[str, int], arg1: str, /) -> int: ...",
        "def opt_name(arg0: str | None, /) -> str: ...",
        "def reverse(arg0: bytes, /) -> bytes: ...",
        "def tensor_sum(arg0: TensorLike, /) -> float: ...",
        "def double_in_place(arg0: TensorLike, /) -> None: ...",
        "def iota(arg0: int, /) -> Tensor: ...",
        "def is_even(arg0: int, /) -> bool: ...",
        "def noop() -> None: ...",
        "def make_point(arg0: int, arg1: float, arg2: str, /) -> kitchen.Point: ...",
        "def point_norm(arg0: kitchen.Point, /) -> float: ...",
        "def make_adder(arg0: int, /) -> Function: ...",
        "def widen(arg0: DataType, /) -> DataType: ...",
        "def next_device(arg0: Device, /) -> Device: ...",
        "def echo_any(arg0: Any, /) -> Any: ...",
    ):
        assert sig in lines, sig
    assert '    """Sum of an array of integers."""' in lines


def test_kitchen_globals_and_object_type():
    text = kitchen_stub()
    expected = '''class kitchen:
    """Namespace 'kitchen' of registered names."""

    class Point(Object):
        """Object type kitchen.Point."""
        @property
        def x(self) -> int:
            """horizontal position"""
            ...
        @property
        def y(self) -> float: ...
        @property
        def label(self) -> str: ...
    @staticmethod
    def add(arg0: int, arg1: int, /) -> int: ...
    @staticmethod
    def greet(arg0: str, /) -> str: ...
    @staticmethod
    def make_point(arg0: int, arg1: float, arg2: str, /) -> kitchen.Point: ...
'''
    assert expected in text


def test_kitchen_stub_passes_mypy_strict(tmp_path):
    p = tmp_path / "kitchen.pyi"
    p.write_text(kitchen_stub())
    _mypy(p)


def test_kitchen_stub_passes_pyright(tmp_path):
    p = tmp_path / "kitchen.pyi"
    p.write_text(kitchen_stub())
    _pyright(p)


def test_deterministic_and_written_atomically(tmp_path):
    out = tmp_path / "k.pyi"
    r = tvmffi("stubs", kitchen(), "-o", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "wrote" in r.stderr and "33 typed, 0 untyped" in r.stderr
    assert out.read_text() == kitchen_stub()
    assert [p.name for p in tmp_path.iterdir()] == ["k.pyi"]  # no temporary left behind


def test_check_both_ways(tmp_path):
    out = tmp_path / "api.pyi"
    assert tvmffi("stubs", api_v1(), "-o", out).returncode == 0
    r = tvmffi("stubs", api_v1(), "--check", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "up to date" in r.stderr
    out.write_text(
        out.read_text().replace(
            "def add(arg0: int, arg1: int, /) -> int:", "def add(arg0: int, arg1: int, /) -> float:"
        )
    )
    r = tvmffi("stubs", api_v1(), "--check", out)
    assert r.returncode == 1
    assert "out of date (differs)" in r.stderr
    assert r.stdout.startswith(f"--- {out}\n+++ expected\n")
    assert "-def add(arg0: int, arg1: int, /) -> float:" in r.stdout
    assert "+def add(arg0: int, arg1: int, /) -> int:" in r.stdout
    r = tvmffi("stubs", api_v1(), "--check", tmp_path / "missing.pyi")
    assert r.returncode == 1 and "(missing)" in r.stderr


def test_api_stub_types_fields_and_docs(tmp_path):
    text = tvmffi("stubs", api_v1()).stdout
    lines = text.splitlines()
    for sig in (
        "def total(arg0: Sequence[int], arg1: Mapping[str, int], /) -> int: ...",
        "def find(arg0: str, /) -> str | None: ...",
        "def make_point(arg0: int, /) -> api.Point: ...",
        "def echo(arg0: TensorLike, /) -> Tensor:",
        '    """Return the tensor \\"as is\\"."""',
        "    def old_global() -> None: ...",
        "        def tag(self) -> str: ...",
        "        @weight.setter",
        "        def weight(self, value: int, /) -> None: ...",
        "        def __init__(self, arg0: int, arg1: int, /) -> None: ...",
        "        def dot(self, arg0: int, /) -> int:",
        '            """x times k"""',
        "        @staticmethod",
        "        def origin() -> int: ...",
    ):
        assert sig in lines, sig
    p = tmp_path / "api.pyi"
    p.write_text(text)
    _mypy(p)


def test_static_stub_is_untyped_and_clean(tmp_path):
    r = tvmffi("stubs", kitchen(), "--static")
    assert r.returncode == 0, r.stderr
    assert "def add(*args: Any) -> Any: ..." in r.stdout.splitlines()
    assert "class kitchen:" not in r.stdout  # globals and types need loading
    p = tmp_path / "k.pyi"
    p.write_text(r.stdout)
    _mypy(p)


def test_names_that_are_not_identifiers(tmp_path):
    r = tvmffi("stubs", tf.plain(), "--static")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for want in (
        "# 'class' in the library",
        "def class_(*args: Any) -> Any: ...",
        "# 'Tensor' in the library",
        "def Tensor_(*args: Any) -> Any: ...",
        "def lambda_(*args: Any) -> Any: ...",
        "def Any_(*args: Any) -> Any: ...",
        "def ok(*args: Any) -> Any: ...",
    ):
        assert want in lines, want
    p = tmp_path / "plain.pyi"
    p.write_text(r.stdout)
    _mypy(p)


@pytest.mark.parametrize("case", ["not-a-library", "missing", "check-dir"])
def test_bad_input_exit_2(tmp_path, case):
    lib, extra = tmp_path / "x.so", []
    if case == "not-a-library":
        lib.write_text("hello")
    elif case == "check-dir":
        lib, extra = tf.plain(), ["--static", "--check", str(tmp_path)]
    r = tvmffi("stubs", lib, *extra)
    assert r.returncode == 2
    assert r.stderr.startswith("tvmffi: error:") and r.stderr.count("\n") == 1, r.stderr


def test_sanitize():
    assert stubs.sanitize("kitchen-add") == "kitchen_add"
    assert stubs.sanitize("1st") == "_1st"
    assert stubs.sanitize("def") == "def_"
    assert stubs.sanitize("match") == "match"  # soft keywords are identifiers
    assert stubs.sanitize("Object") == "Object_"
    assert stubs.sanitize("x", ["x", "x_2"]) == "x_3"
    assert stubs.sanitize("") == "_"


def test_docstrings_cannot_break_out():
    from tvmffi_cli.inspect.api import Api, Func

    evil = 'end"""\nimport os\x00\x1b[31m\x85\u2028\\'
    api = Api("x", "loaded", (Func("f", None, evil),), (), (), (), (), (), (), ())
    text = stubs.render(api, "x.so").text
    compile(text, "x.pyi", "exec")  # still valid Python
    assert '"""end\\"\\"\\"' in text
    for bad in ("\x00", "\x1b", "\x85", "\u2028"):
        assert bad not in text
    assert len(text.splitlines()) == len(text.split("\n")) - 1  # no other line breaks


def test_our_runtime_keeps_global_metadata():
    # ffi.GetGlobalFuncMetadata: the metadata a library gave with
    # TVMFFIFunctionSetGlobalFromMethodInfo, which types the stub's globals.
    # In a child process: other tests load another build of the kitchen
    # fixture in-process, and one process cannot register its globals twice.
    driver = r"""
import json, sys
import tvmffi_cli
lib = tvmffi_cli.load(sys.argv[1])
get = lib.get_global("ffi.GetGlobalFuncMetadata")
out = {"has": get is not None, "add": json.loads(get("kitchen.add")),
       "remove": get("ffi.FunctionRemoveGlobal")}
try:
    get("kitchen.nope")
    out["nope"] = None
except Exception as e:
    out["nope"] = str(e)
print(json.dumps(out))
"""
    r = subprocess.run(
        [sys.executable, "-c", driver, str(kitchen())],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["has"]
    assert json.loads(out["add"]["type_schema"]) == {
        "type": "ffi.Function",
        "named_args": {"return": [{"type": "int"}], "params": [{"type": "int"}, {"type": "int"}]},
    }
    assert out["remove"] == ""  # registered without metadata
    assert "Global Function is not found: kitchen.nope" in out["nope"]


def test_same_stub_with_the_official_runtime():
    official = fixturebuild.official_runtime()
    if official is None:
        pytest.skip("apache-tvm-ffi is not installed (pip install '.[test]')")
    r = tvmffi("stubs", kitchen(), "--runtime", official)
    assert r.returncode == 0, r.stderr
    assert r.stdout == kitchen_stub()


def test_inspect_json_carries_global_metadata():
    r = tvmffi("inspect", kitchen(), "--json")
    doc = validate(json.loads(r.stdout), "inspect")
    assert sorted(doc["global_info"]) == ["kitchen.add", "kitchen.greet", "kitchen.make_point"]
    point = doc["types"][0]
    assert [f["metadata"]["type_schema"] for f in point["fields"]] == [
        '{"type":"int"}',
        '{"type":"float"}',
        '{"type":"ffi.String"}',
    ]


def test_load_failure_exit_1_and_static_still_works():
    lib = tf.aborts_when_loaded()  # its constructor aborts in the child
    r = tvmffi("stubs", lib)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith("tvmffi: error:") and r.stderr.count("\n") == 1, r.stderr
    assert "loading the library failed" in r.stderr and "--static" in r.stderr
    r = tvmffi("stubs", lib, "--static")
    assert r.returncode == 0 and "def main(*args: Any) -> Any: ..." in r.stdout


def test_namespace_named_like_an_export(tmp_path):
    from tvmffi_cli.inspect.api import Api, Func, ObjectType, TypeRef

    int_fn = TypeRef("ffi.Function", (), (TypeRef("int"),), TypeRef("ns.T"))
    api = Api(
        "x",
        "loaded",
        (Func("ns", int_fn),),
        (Func("ns.f", int_fn), Func("g", None)),
        (ObjectType("ns.T", "ffi.Object", (), ()),),
        (),
        (),
        (),
        (),
        (),
    )
    r = stubs.render(api, "x.so")
    lines = r.text.splitlines()
    assert "def ns(arg0: int, /) -> ns_2.T: ..." in lines
    assert "class ns_2:" in lines and "    class T(Object):" in lines
    assert "def g(*args: Any) -> Any: ..." in lines  # a global without a namespace
    assert ("ns", "ns_2") in r.renamed and r.untyped == ("g",)
    p = tmp_path / "x.pyi"
    p.write_text(r.text)
    _mypy(p)

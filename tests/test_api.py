"""The public Python API (docs/python-api.md): results, their JSON documents
against the CLI's, the runnable examples of the docs, and the coexistence of
load() with the official tvm_ffi package (in subprocesses only: tvm_ffi must
never be imported in the pytest process)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tvmffi_cli
from tvmffi_cli import api
from tvmffi_cli.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "src" / "tvmffi_cli" / "schemas"
DOCS = ROOT / "docs" / "python-api.md"
TVMFFI = [sys.executable, "-m", "tvmffi_cli"]


def validate(doc: dict, name: str) -> None:
    import jsonschema

    jsonschema.validate(doc, json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def cli_json(*args: str) -> tuple[int, dict]:
    """Exit code and --json document of the CLI, without elapsed_s (run times
    differ; compare with plain(api_doc))."""
    p = subprocess.run(
        [*TVMFFI, *args, "--json"], capture_output=True, text=True, timeout=300, check=False
    )
    return p.returncode, plain(json.loads(p.stdout))


def plain(doc: dict) -> dict:
    assert doc.pop("elapsed_s") >= 0
    return doc


@pytest.fixture(scope="module")
def add_one(tmp_path_factory) -> str:
    """examples/add_one.c built with the flags `tvmffi config` prints (as
    examples/run.sh does)."""
    out = tmp_path_factory.mktemp("api") / "libadd_one.so"
    flags = []
    for what in ("--cflags", "--ldflags", "--libs"):
        p = subprocess.run([*TVMFFI, "config", what], capture_output=True, text=True, check=True)
        flags += p.stdout.split()
    subprocess.run(
        [
            "gcc",
            "-std=c11",
            "-shared",
            "-fPIC",
            "-O2",
            "-Wall",
            "-Wextra",
            "-Werror",
            str(ROOT / "examples" / "add_one.c"),
            "-o",
            str(out),
            *flags,
        ],
        check=True,
    )
    return str(out)


# ---------------------------------------------------------------------------
# the package surface


def test_import_is_cheap_and_lazy():
    code = (
        "import sys, tvmffi_cli; "
        "print(sorted(m for m in ('numpy', 'click', 'rich', 'tvmffi_cli.api') "
        "if m in sys.modules)); "
        "f = tvmffi_cli.inspect_library; print(f.__module__, 'tvmffi_cli.api' in sys.modules)"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.split("\n")[:2] == ["[]", "tvmffi_cli.api True"]


def test_exports():
    for name in tvmffi_cli.__all__:
        assert getattr(tvmffi_cli, name) is not None, name
    assert tvmffi_cli.call_function is api.call is api.call_function
    assert tvmffi_cli.conform_library is api.conform is api.conform_library
    with pytest.raises(AttributeError):
        tvmffi_cli.no_such_name
    # The engine packages keep their names (and stay modules after imports).
    from tvmffi_cli.call import engine

    assert tvmffi_cli.call.engine is engine
    assert (ROOT / "src" / "tvmffi_cli" / "py.typed").is_file()


# ---------------------------------------------------------------------------
# inspect_library


def test_inspect_library_matches_the_cli(add_one):
    rep = tvmffi_cli.inspect_library(add_one)
    assert isinstance(rep, api.InspectReport)
    assert rep.mode == "loaded" and rep.ok and rep.format == "elf"
    assert [f.name for f in rep.functions] == ["add_one", "mul3"]
    assert rep.function("mul3").signature == "mul3(int, int, int) -> int"
    assert rep.function("add_one").signature == "add_one(DLTensor*) -> None"
    assert rep.needs_runtime and "TVMFFIErrorSetRaisedFromCStr" in rep.runtime_imports
    doc = rep.to_json()
    validate(doc, "inspect")
    plain(doc)
    rc, cli = cli_json("inspect", add_one)
    assert rc == 0
    assert doc == cli
    with pytest.raises(KeyError):
        rep.function("nope")


def test_inspect_library_static(add_one):
    rep = tvmffi_cli.inspect_library(add_one, static=True)
    assert rep.mode == "static"
    assert [f.signature for f in rep.functions] == [None, None]
    rc, cli = cli_json("inspect", "--static", add_one)
    assert (rc, plain(rep.to_json())) == (0, cli)


def test_inspect_library_bad_input(tmp_path):
    with pytest.raises(InputError):
        tvmffi_cli.inspect_library(tmp_path / "missing.so")
    (tmp_path / "text.so").write_text("not a library")
    with pytest.raises(InputError):
        tvmffi_cli.inspect_library(tmp_path / "text.so")
    with pytest.raises(InputError, match="positive"):
        tvmffi_cli.inspect_library(tmp_path / "text.so", timeout=0)


# ---------------------------------------------------------------------------
# call_function


def test_call_value_matches_the_cli(add_one):
    res = tvmffi_cli.call_function(add_one, "mul3", 2, 3, 7)
    assert (res.ok, res.value, res.type, res.resolved, res.args) == (
        True,
        42,
        "int",
        "export",
        (2, 3, 7),
    )
    assert res.error is None and res.call_ns > 0
    doc = res.to_json()
    validate(doc, "call")
    plain(doc)
    rc, cli = cli_json("call", add_one, "mul3", "2", "3", "7")
    assert rc == 0
    doc.pop("call_ns")
    cli.pop("call_ns")
    assert doc == cli


def test_call_tensor_written_in_place(add_one, tmp_path):
    x = np.arange(6, dtype="float32").reshape(2, 3)
    res = tvmffi_cli.call_function(add_one, "add_one", x)
    assert res.value is None and res.type == "None"
    assert list(res.tensors) == [0]
    np.testing.assert_array_equal(res.tensors[0], x + 1)
    np.testing.assert_array_equal(x, np.arange(6, dtype="float32").reshape(2, 3))  # untouched
    doc = res.to_json()
    validate(doc, "call")
    plain(doc)
    assert "files" not in doc
    np.save(tmp_path / "x.npy", x)
    rc, cli = cli_json("call", add_one, "add_one", "--tensor", str(tmp_path / "x.npy"))
    assert rc == 0
    doc.pop("call_ns")
    cli.pop("call_ns")
    assert doc == cli
    assert doc["args"][0]["value"]["data"] == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]


def test_call_raised_matches_the_cli(add_one):
    res = tvmffi_cli.call_function(add_one, "mul3", "a", 3, 7)
    assert not res.ok and res.value is None
    assert (res.error.kind, res.error.message) == ("TypeError", "mul3 expects integers")
    doc = res.to_json()
    validate(doc, "call")
    plain(doc)
    rc, cli = cli_json("call", add_one, "mul3", "--str", "a", "--int", "3", "--int", "7")
    assert (rc, doc) == (1, cli)


def test_call_values_of_every_kind_reach_the_child(build_lib, tmp_path):
    # An echo that returns its first argument: each Python kind round-trips.
    src = textwrap.dedent("""
        #include <tvm/ffi/c_api.h>
        TVM_FFI_DLL_EXPORT int __tvm_ffi_echo(void* h, const TVMFFIAny* args, int32_t n,
                                              TVMFFIAny* result) {
          (void)h;
          if (n != 1) { TVMFFIErrorSetRaisedFromCStr("TypeError", "echo takes 1"); return -1; }
          return TVMFFIAnyViewToOwnedAny(&args[0], result);
        }
    """)
    (tmp_path / "echo.c").write_text(src)
    path = str(build_lib(str(tmp_path / "echo.c"), name="api_echo"))
    cases = [
        (None, None, "None"),
        (True, True, "bool"),
        (-5, -5, "int"),
        (2.5, 2.5, "float"),
        ("héllo", "héllo", "str"),
        (b"\x00\x01", "AAE=", "bytes"),
        ([1, "a", [2.0]], [1, "a", [2.0]], "Array"),
        ({"k": 1}, {"k": 1}, "Map"),
        ((1, 2), [1, 2], "Array"),
        (np.int32(7), 7, "int"),
    ]
    for value, expect, typ in cases:
        res = tvmffi_cli.call_function(path, "echo", value)
        assert (res.ok, res.type, res.value) == (True, typ, expect), value
    arr = np.array([1.5, 2.5], dtype="float64")
    res = tvmffi_cli.call_function(path, "echo", arr, owned_tensors=True)
    assert res.type == "Tensor"
    np.testing.assert_array_equal(res.value, arr)


def test_call_crash_and_hang_are_results(build_lib):
    lib = str(build_lib("c/crashy.c", headers="ours"))
    res = tvmffi_cli.call_function(lib, "segv")
    assert (res.ok, res.value, res.error.kind, dict(res.error.extra)) == (
        False,
        None,
        "Crash",
        {"signal": "SIGSEGV"},
    )
    assert res.error.message == "segv crashed the worker process (SIGSEGV)"
    rc, cli = cli_json("call", lib, "segv")
    validate(res.to_json(), "call")
    assert (rc, plain(res.to_json())) == (1, cli)
    res = tvmffi_cli.call_function(lib, "hang", timeout=0.5)
    assert (res.error.kind, dict(res.error.extra)) == ("Timeout", {"timeout": 0.5})
    assert res.error.message == "hang did not return within 0.5 s; the worker was killed"
    assert tvmffi_cli.call_function(lib, "chatty").value == 7


def test_call_bad_input_raises(add_one):
    with pytest.raises(InputError, match="no function 'nope'"):
        tvmffi_cli.call_function(add_one, "nope")
    with pytest.raises(InputError, match="cannot pass a object"):
        tvmffi_cli.call_function(add_one, "mul3", object())
    with pytest.raises(InputError, match="no such file"):
        tvmffi_cli.call_function(add_one + ".missing", "mul3")


# ---------------------------------------------------------------------------
# conform_library


def test_conform_matches_the_cli(add_one):
    rep = tvmffi_cli.conform_library(add_one, jobs=1, select=["no-crash", "export-names"])
    assert rep.passed and not rep.failures()
    assert rep.functions == ("add_one", "mul3")
    assert {r.check for r in rep.results} == {"export-names", "no-crash"}
    assert dict(rep.summary) == {
        **{"pass": len(rep.results), "fail": 0, "skip": 0, "error": 0},
        **{"blocking": 0, "warning": 0},
    }
    doc = rep.to_json()
    validate(doc, "conform")
    rc, cli = cli_json("conform", add_one, "-j", "1", "--select", "no-crash,export-names")
    assert rc == 0
    plain(doc)
    for d in (doc, cli):  # the run times differ
        d["summary_line"] = re.sub(r"\([0-9.]+ s,", "(T s,", d["summary_line"])
    assert doc == cli
    assert rep.summary_line.startswith("tvmffi conform PASSED libadd_one.so: 0 error(s)")
    # examples/add_one.c registers one global while loading, as C++ code does
    assert rep.globals == ("example.scale",)
    assert rep.min_runtime_version == doc.get("min_runtime_version")


def test_conform_options(add_one, tmp_path):
    rep = tvmffi_cli.conform_library(add_one, jobs=1, select=["no-crash"], functions=["mul3"])
    assert {(r.check, r.function) for r in rep.results} == {("no-crash", "mul3")}
    with pytest.raises(InputError, match="threads must be between 2 and 256"):
        tvmffi_cli.conform_library(add_one, threads=1)
    with pytest.raises(InputError, match="no such file"):
        tvmffi_cli.conform_library(add_one, runtime=tmp_path / "nope.so")
    with pytest.raises(InputError, match="unknown check id"):
        tvmffi_cli.conform_library(add_one, select=["nope"])


# ---------------------------------------------------------------------------
# results are frozen


def test_results_are_frozen(add_one):
    rep = tvmffi_cli.inspect_library(add_one, static=True)
    res = tvmffi_cli.call_function(add_one, "mul3", 1, 2, 3)
    bad = tvmffi_cli.call_function(add_one, "mul3", "x", 2, 3)
    for obj, attr in [
        (rep, "mode"),
        (rep.functions[0], "name"),
        (res, "value"),
        (bad.error, "kind"),
    ]:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, attr, 1)
    with pytest.raises(TypeError):
        res.tensors[0] = np.zeros(1)  # type: ignore[index]
    doc = res.to_json()
    doc["result"] = 0  # a copy: the result keeps its document
    assert res.to_json()["result"] == 6


# ---------------------------------------------------------------------------
# the examples of docs/python-api.md run as written


def doc_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.DOTALL)


def test_docs_have_an_example_per_function():
    text = "\n".join(doc_examples())
    for name in ("inspect_library(", "call_function(", "conform_library(", "load("):
        assert name in text, name


@pytest.mark.parametrize("i", range(len(doc_examples())))
def test_docs_example_runs(i, add_one, tmp_path):
    code = doc_examples()[i]
    env = dict(os.environ, TVMFFI_EXAMPLE_LIB=add_one)
    p = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env,
        check=False,
    )
    assert p.returncode == 0, p.stderr
    # Each example states its output in "# ->" comments; they must be what it prints.
    expected = [m.strip() for m in re.findall(r"# -> (.*)", code)]
    assert p.stdout.split("\n")[: len(expected)] == expected


# ---------------------------------------------------------------------------
# load() and the official tvm_ffi package, in subprocesses


def run_py(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_import_tvm_ffi_after_load_raises_clearly(add_one, official_runtime):
    p = run_py(f"""
        import tvmffi_cli
        import importlib.util, sys
        lib = tvmffi_cli.load({add_one!r})
        print(lib.mul3(2, 3, 7))
        for _ in range(2):
            try:
                import tvm_ffi
            except ImportError as e:
                print(type(e).__name__, isinstance(e, tvmffi_cli.RuntimeConflict), e.name)
                print(str(e).split(';')[0], "tvm_ffi" in sys.modules)
        # Looking the package up (as build helpers do) still finds it.
        print(importlib.util.find_spec("tvm_ffi").origin.endswith("tvm_ffi/__init__.py"))
        print(lib.mul3(1, 2, 3))
    """)
    assert (p.returncode, p.stderr) == (0, "")
    line = "tvmffi_cli.load() put tvmffi's libtvm_ffi.so in this process False"
    assert p.stdout.splitlines() == [
        "42",
        "RuntimeConflict True tvm_ffi",
        line,
        "RuntimeConflict True tvm_ffi",
        line,
        "True",
        "6",
    ]


def test_the_api_runs_without_click_or_rich(add_one):
    p = run_py(f"""
        import sys, tvmffi_cli
        tvmffi_cli.inspect_library({add_one!r})
        tvmffi_cli.call_function({add_one!r}, "mul3", 1, 2, 3)
        tvmffi_cli.conform_library({add_one!r}, select=["export-names"], jobs=1)
        print(sorted(m for m in ("click", "rich") if m in sys.modules))
    """)
    assert (p.returncode, p.stderr, p.stdout) == (0, "", "[]\n")


def test_the_abort_the_guard_prevents(add_one, official_runtime):
    # Without the guard (our runtime loaded directly), importing tvm_ffi
    # after it aborts the process: the reason the guard exists.
    p = run_py(f"""
        from tvmffi_cli.ffi.library import load
        print(load({add_one!r}).mul3(2, 3, 7), flush=True)
        import tvm_ffi
        print("imported")
    """)
    assert p.returncode == -6, (p.returncode, p.stdout, p.stderr)  # SIGABRT
    assert p.stdout == "42\n"
    assert "is already registered" in p.stderr


def test_load_after_import_tvm_ffi_uses_the_official_runtime(add_one, official_runtime):
    p = run_py(f"""
        import os, numpy as np, tvm_ffi, tvmffi_cli
        lib = tvmffi_cli.load({add_one!r})
        print(lib.runtime.is_ours, os.path.samefile(lib.runtime.path, {str(official_runtime)!r}))
        print(lib.mul3(2, 3, 7))
        x = np.zeros(3, dtype="float32"); lib.add_one(x); print(x.tolist())
        try:
            lib.mul3("x", 1, 2)
        except Exception as e:
            print(type(e).__name__, e)
        print(tvm_ffi.convert("still works"))
        try:
            tvmffi_cli.load({add_one!r}, runtime=tvmffi_cli.api.__file__)
        except tvmffi_cli.RuntimeConflict as e:
            print("conflict", "official tvm_ffi package is imported" in str(e))
    """)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == [
        "False True",
        "42",
        "[1.0, 1.0, 1.0]",
        "FFITypeError mul3 expects integers",
        "still works",
        "conflict True",
    ]


def test_sandboxed_api_and_tvm_ffi_share_a_process(add_one, official_runtime):
    # inspect_library/call_function never load the library here: both orders work.
    p = run_py(f"""
        import tvmffi_cli
        print(tvmffi_cli.call_function({add_one!r}, "mul3", 2, 3, 7).value)
        import tvm_ffi
        print(tvm_ffi.convert("ok"))
        print(tvmffi_cli.inspect_library({add_one!r}).function("mul3").signature)
    """)
    assert (p.returncode, p.stderr) == (0, "")
    assert p.stdout.splitlines() == ["42", "ok", "mul3(int, int, int) -> int"]


def test_api_modules_are_mypy_strict_clean():
    try:
        import mypy.api
    except ImportError:
        pytest.skip("mypy is not installed (pip install mypy)")
    files = [
        str(ROOT / "src" / "tvmffi_cli" / f)
        for f in ("api.py", "__init__.py", "call/engine.py", "inspect")
    ]
    out, err, rc = mypy.api.run(["--strict", "--no-incremental", *files])
    assert rc == 0, out + err

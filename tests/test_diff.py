"""`tvmffi diff OLD NEW`: two builds of fixtures/tools/api.cc (v1, and
-DAPI_V2 which removes, changes and adds), identical builds, and TVM-style
libraries whose embedded kernels change (compared statically)."""

import functools
import json

import pytest

import fixturebuild
import tools_fixtures as tf
from test_call_helpers import schema, tvmffi, validate
from tvmffi_cli import diff
from tvmffi_cli.inspect.api import Api, Func, TypeRef


@functools.cache
def api_build(version, opt="-O1"):
    defines = ["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"] + (["API_V2"] if version == 2 else [])
    return fixturebuild.build(
        "tools/api.cc",
        name=f"api-v{version}{opt}",
        headers="official",
        defines=defines,
        flags=[opt],
    )


def _diff_json(old, new, *flags):
    r = tvmffi("diff", old, new, "--json", *flags)
    assert r.stdout.strip(), r.stderr
    return r, validate(json.loads(r.stdout), "diff")


EXPECTED_V1_V2 = {
    ("export.removed", "export legacy", "legacy() -> None", None, False),
    ("export.added", "export added", None, "added(int) -> int", True),
    (
        "export.param_count_changed",
        "export scale",
        "scale(float, Optional[float]) -> float",
        "scale(float) -> float",
        False,
    ),
    ("export.param_type_changed", "export greet parameter 0", "str", "int", False),
    ("export.result_type_changed", "export norm result", "float", "int", False),
    ("global.removed", "global api.old_global", "api.old_global() -> None", None, False),
    ("global.added", "global api.new_global", None, "api.new_global(int) -> int", True),
    ("type.field_removed", "type api.Point field tag", "str", None, False),
    ("type.field_type_changed", "type api.Point field y", "float", "int", False),
    ("type.field_added", "type api.Point field z", None, "int", True),
    (
        "type.method_type_changed",
        "type api.Point method dot",
        "dot(api.Point, int) -> int",
        "dot(api.Point, float) -> float",
        False,
    ),
}


def test_remove_change_add_exit_1():
    r, doc = _diff_json(api_build(1), api_build(2))
    assert r.returncode == 1, r.stderr
    assert doc["mode"] == "loaded" and doc["compatible"] is False
    got = {(c["kind"], c["subject"], c["old"], c["new"], c["compatible"]) for c in doc["changes"]}
    assert got == EXPECTED_V1_V2
    assert doc["summary"] == {"changes": 11, "incompatible": 8, "suppressed": 0}
    assert doc["warnings"] == []


def test_human_output_names_each_change():
    r = tvmffi("diff", api_build(1), api_build(2), env={"COLUMNS": "250"})
    assert r.returncode == 1
    for kind, subject, *_ in EXPECTED_V1_V2:
        line = next((ln for ln in r.stdout.splitlines() if subject in ln), None)
        assert line is not None and kind in line, subject
        assert ("BREAKS" in line) == (kind in diff.KINDS and not diff.KINDS[kind][0])
    assert "11 change(s), 8 incompatible: incompatible" in r.stdout


def test_reverse_direction_is_incompatible_too():
    _r, doc = _diff_json(api_build(2), api_build(1))
    kinds = {(c["kind"], c["subject"]) for c in doc["changes"]}
    assert ("export.removed", "export added") in kinds
    assert ("export.added", "export legacy") in kinds
    assert ("type.field_removed", "type api.Point field z") in kinds


def test_identical_builds_exit_0():
    # Same source, other optimisation level: another file, the same API.
    a, b = api_build(1), api_build(1, "-O2")
    assert a.read_bytes() != b.read_bytes()
    r, doc = _diff_json(a, b)
    assert r.returncode == 0, r.stdout
    assert doc["changes"] == [] and doc["compatible"] is True
    r = tvmffi("diff", a, a)
    assert r.returncode == 0 and "No changes" in r.stdout


def test_static_compares_exports_only():
    r, doc = _diff_json(api_build(1), api_build(2), "--static")
    assert r.returncode == 1
    assert doc["mode"] == "static"
    assert {(c["kind"], c["subject"]) for c in doc["changes"]} == {
        ("export.removed", "export legacy"),
        ("export.added", "export added"),
    }
    assert any("statically" in w for w in doc["warnings"])


def test_kernels_and_modules_static():
    r, doc = _diff_json(tf.kernels_lib(1), tf.kernels_lib(2), "--static")
    assert r.returncode == 1
    got = {(c["kind"], c["subject"], c["old"], c["new"], c["compatible"]) for c in doc["changes"]}
    assert got == {
        ("export.added", "export sub", None, "sub(...)", True),
        ("module.removed", "module opencl#0", "opencl", None, False),
        ("kernel.removed", "module cuda#0 kernel mul", "mul(int32, int32)", None, False),
        ("kernel.added", "module cuda#0 kernel sub", None, "sub(float32, float32)", True),
        (
            "kernel.args_changed",
            "module cuda#0 kernel add",
            "add(float32, float32)",
            "add(float32, int32)",
            False,
        ),
    }


def test_additions_only_exit_0():
    r, doc = _diff_json(tf.kernels_lib(1), tf.kernels_lib(3))
    assert r.returncode == 0, r.stdout
    assert doc["compatible"] is True
    assert {c["kind"] for c in doc["changes"]} == {"export.added", "kernel.added"}
    assert all(c["compatible"] for c in doc["changes"])


@pytest.mark.parametrize("case", ["missing", "not-a-library"])
def test_bad_input_exit_2(tmp_path, case):
    bad = tmp_path / "x.so"
    if case == "not-a-library":
        bad.write_text("not a library")
    for args in ((bad, api_build(1)), (api_build(1), bad)):
        r = tvmffi("diff", *args)
        assert r.returncode == 2
        assert r.stderr.startswith("tvmffi: error:") and r.stderr.count("\n") == 1, r.stderr


def _api(*exports, runtime_imports=()):
    return Api(
        path="x",
        mode="loaded",
        exports=tuple(exports),
        globals=(),
        types=(),
        modules=(),
        cubins=(),
        runtime_imports=tuple(runtime_imports),
        unsupported_imports=(),
        problems=(),
    )


def test_runtime_requirements():
    old = _api(runtime_imports=["TVMFFIFunctionCall"])
    new = _api(runtime_imports=["TVMFFIFunctionCall", "TVMFFIEnvTensorAlloc", "TVMFFIFutureThing"])
    res = diff.compare(old, new)
    assert [(c.kind, c.compatible) for c in res.changes] == [
        ("runtime.import_added", True),
        ("runtime.newer_required", False),
    ]
    assert res.exit_code == 1


def test_engine_pure_compare():
    f = TypeRef("ffi.Function", (), (TypeRef("int"),), TypeRef("int"))
    g = TypeRef("ffi.Function", (), (TypeRef("Optional", (TypeRef("int"),)),), TypeRef("int"))
    res = diff.compare(_api(Func("f", f)), _api(Func("f", g)))
    assert [(c.kind, c.old, c.new) for c in res.changes] == [
        ("export.param_type_changed", "int", "Optional[int]")
    ]
    assert diff.compare(_api(Func("f", f)), _api(Func("f", f))).exit_code == 0


def test_schema_lists_every_kind_with_its_verdict():
    kinds = schema("diff")["$defs"]["change"]["properties"]["kind"]["oneOf"]
    listed = {k["const"]: k["description"] for k in kinds}
    assert set(listed) == set(diff.KINDS)
    for k, (ok, _m) in diff.KINDS.items():
        assert listed[k].startswith("compatible" if ok else "incompatible")


def test_a_library_that_cannot_load_is_compared_statically():
    # Loading aborts, so neither side can have globals or types: compare the
    # files, say so, and do not report the loaded side's extras as changes.
    r, doc = _diff_json(tf.aborts_when_loaded(), tf.aborts_when_loaded())
    assert r.returncode == 0 and doc["changes"] == [] and doc["mode"] == "static"
    assert any("loading the library failed" in w for w in doc["warnings"])
    r, doc = _diff_json(api_build(1), tf.aborts_when_loaded())
    assert doc["mode"] == "static"
    assert not [c for c in doc["changes"] if c["kind"].startswith(("global.", "type."))]
    assert ("export.removed", "export add") in {(c["kind"], c["subject"]) for c in doc["changes"]}
    assert any("read statically only" in w for w in doc["warnings"])


def test_suppress_file(tmp_path):
    rules = tmp_path / "accepted.txt"
    rules.write_text(
        "# accepted for release 2\nkernel.removed module cuda#0 kernel mul\nkernel.args_changed\n"
    )
    r, doc = _diff_json(tf.kernels_lib(1), tf.kernels_lib(2), "--static", "--suppress", rules)
    assert r.returncode == 1  # module.removed opencl#0 still breaks
    assert {c["subject"] for c in doc["changes"] if c["suppressed"]} == {
        "module cuda#0 kernel mul",
        "module cuda#0 kernel add",
    }
    assert doc["summary"] == {"changes": 5, "incompatible": 3, "suppressed": 2}
    rules.write_text(rules.read_text() + "module.* module opencl*\n")
    r, doc = _diff_json(tf.kernels_lib(1), tf.kernels_lib(2), "--static", "--suppress", rules)
    assert r.returncode == 0 and doc["compatible"] is True
    r = tvmffi(
        "diff",
        tf.kernels_lib(1),
        tf.kernels_lib(2),
        "--static",
        "--suppress",
        rules,
        env={"COLUMNS": "200"},
    )
    assert r.returncode == 0
    assert "5 change(s), 3 incompatible (3 suppressed): compatible" in r.stdout
    assert sum("accepted" in ln for ln in r.stdout.splitlines()) == 3


def test_suppress_file_with_an_unknown_kind_exit_2(tmp_path):
    rules = tmp_path / "accepted.txt"
    rules.write_text("\nexport.removd export legacy\n")
    r = tvmffi("diff", tf.kernels_lib(1), tf.kernels_lib(2), "--static", "--suppress", rules)
    assert r.returncode == 2
    assert r.stderr == (f"tvmffi: error: {rules}:2: 'export.removd' matches no change kind\n")

"""`tvmffi diff OLD NEW`: two builds of fixtures/tools/api.cc (v1, and
-DAPI_V2 which removes, changes and adds), identical builds, and TVM-style
libraries whose embedded kernels change (compared statically).

The default checks the runtime range by loading NEW on each release of OLD's
range (13 loads of a fixture: ~1 s on 2 cores): test_remove_change_add_exit_1
and test_a_release_that_cannot_be_fetched_is_not_judged take that path; the
tests of other things pass --symbols-range (the range by symbols, said so)."""

import functools
import json
from dataclasses import replace

import pytest

import fixturebuild
import tools_fixtures as tf
from test_call_helpers import schema, tvmffi, validate
from tvmffi_cli import diff
from tvmffi_cli.inspect.api import Api, Field, Func, Method, ObjectType, TypeRef


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
    from tvmffi_cli.abi.versions import KNOWN_RELEASES

    r, doc = _diff_json(api_build(1), api_build(2))
    assert r.returncode == 1, r.stderr
    assert doc["mode"] == "loaded" and doc["compatible"] is False
    got = {(c["kind"], c["subject"], c["old"], c["new"], c["compatible"]) for c in doc["changes"]}
    assert got == EXPECTED_V1_V2
    assert doc["summary"] == {"changes": 11, "incompatible": 8, "suppressed": 0, "notes": 0}
    assert doc["warnings"] == []
    assert (doc["verdict"], doc["complete"], doc["not_compared"], doc["promise"]) == (
        "incompatible",
        True,
        [],
        None,
    )
    # the default: NEW loaded on every release of OLD's range (all at hand in
    # the suite's cache), and it loads on each: OLD is loaded on none
    check = doc["range_check"]
    assert check["loads"] == len(KNOWN_RELEASES) and check["same_file"] is False
    assert [(x["release"], x["verdict"], x["new"], x["old"]) for x in check["releases"]] == [
        (v, "kept", "loads", "not-needed") for v in KNOWN_RELEASES
    ]
    assert doc["runtime_ranges"]["new"] == {"releases": list(KNOWN_RELEASES), "basis": "loading"}


def test_human_output_names_each_change():
    r = tvmffi("diff", api_build(1), api_build(2), "--symbols-range", env={"COLUMNS": "250"})
    assert r.returncode == 1
    for kind, subject, *_ in EXPECTED_V1_V2:
        line = next((ln for ln in r.stdout.splitlines() if subject in ln), None)
        assert line is not None and kind in line, subject
        assert ("BREAKS" in line) == (kind in diff.KINDS and not diff.KINDS[kind][0])
    assert "11 change(s), 8 incompatible: incompatible" in r.stdout
    assert "runtime ranges compared by symbols only (--symbols-range)" in r.stdout


def test_reverse_direction_is_incompatible_too():
    _r, doc = _diff_json(api_build(2), api_build(1), "--symbols-range")
    kinds = {(c["kind"], c["subject"]) for c in doc["changes"]}
    assert ("export.removed", "export added") in kinds
    assert ("export.added", "export legacy") in kinds
    assert ("type.field_removed", "type api.Point field z") in kinds


def test_identical_builds_exit_0():
    # Same source, other optimisation level: another file, the same API.
    a, b = api_build(1), api_build(1, "-O2")
    assert a.read_bytes() != b.read_bytes()
    r, doc = _diff_json(a, b, "--symbols-range")
    assert r.returncode == 0, r.stdout
    assert doc["changes"] == [] and doc["compatible"] is True
    assert doc["promise"] == diff.kinds.SYMBOLS_PROMISE and doc["range_check"] is None
    # one file against itself runs where it runs: nothing to load
    # (--verify-range is the default's old name, accepted)
    r, doc = _diff_json(a, a, "--verify-range")
    assert r.returncode == 0 and doc["changes"] == [] and doc["verdict"] == "compatible"
    assert doc["promise"] is None and doc["not_compared"] == []
    assert doc["range_check"] == {"loads": 0, "same_file": True, "releases": []}
    r = tvmffi("diff", a, b, "--verify-range", "--symbols-range")
    assert r.returncode == 2 and "give one of them" in r.stderr


def test_static_compares_exports_only():
    r, doc = _diff_json(api_build(1), api_build(2), "--static")
    assert r.returncode == 1
    assert doc["mode"] == "static"
    assert {(c["kind"], c["subject"]) for c in doc["changes"]} == {
        ("export.removed", "export legacy"),
        ("export.added", "export added"),
    }
    # the reduced promise is stated, and static by request is no gap
    assert doc["promise"] == diff.kinds.STATIC_PROMISE and doc["not_compared"] == []
    assert "globals, object types and type schemas" in doc["promise"]
    r = tvmffi("diff", api_build(1), api_build(1, "-O2"), "--static", env={"COLUMNS": "300"})
    assert r.returncode == 0 and "static comparison (--static)" in r.stdout


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
    r, doc = _diff_json(tf.kernels_lib(1), tf.kernels_lib(3), "--symbols-range")
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


def _compare(old, new, **kw):
    """The pure comparison with the runtime ranges by symbols (what these
    tests give it); test_the_range_by_loading gives it a range check."""
    return diff.compare(old, new, symbols_range=kw.pop("symbols_range", True), **kw)


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
    res = _compare(old, new)
    assert [(c.kind, c.compatible) for c in res.changes] == [
        ("runtime.import_added", True),
        ("runtime.newer_required", False),
    ]
    assert res.exit_code == 1


def test_engine_pure_compare():
    f = TypeRef("ffi.Function", (), (TypeRef("int"),), TypeRef("int"))
    g = TypeRef("ffi.Function", (), (TypeRef("Optional", (TypeRef("int"),)),), TypeRef("int"))
    res = _compare(_api(Func("f", f)), _api(Func("f", g)))
    assert [(c.kind, c.old, c.new) for c in res.changes] == [
        ("export.param_type_changed", "int", "Optional[int]")
    ]
    assert _compare(_api(Func("f", f)), _api(Func("f", f))).exit_code == 0


def test_schema_lists_every_kind_with_its_verdict():
    kinds = schema("diff")["$defs"]["change"]["properties"]["kind"]["oneOf"]
    listed = {k["const"]: k["description"] for k in kinds}
    assert set(listed) == set(diff.KINDS)
    for k, (ok, _m) in diff.KINDS.items():
        assert listed[k].startswith("compatible" if ok else "incompatible")


def test_a_library_that_cannot_load_is_not_judged_compatible():
    # Loading aborts, so neither side has globals or types: the files are
    # compared, what was not is said, and no break seen is not "compatible":
    # exit 2 (cannot judge), never 0.
    r, doc = _diff_json(tf.aborts_when_loaded(), tf.aborts_when_loaded())
    assert r.returncode == 2 and doc["changes"] == [] and doc["mode"] == "static"
    assert doc["verdict"] == "cannot judge" and doc["complete"] is False
    assert [n.split(" (")[0] for n in doc["not_compared"]] == ["OLD", "NEW"]
    assert all("loading the library failed" in n for n in doc["not_compared"])
    assert all(
        n.endswith("globals, object types and type schemas were not compared")
        for n in doc["not_compared"]
    )
    r = tvmffi("diff", tf.aborts_when_loaded(), tf.aborts_when_loaded(), env={"COLUMNS": "300"})
    assert r.returncode == 2
    assert "No changes seen (not everything was compared)" in r.stdout
    assert "cannot judge:" in r.stdout and "not compared: OLD" in r.stdout
    # one side loaded: compared statically, the loaded side's extras are no changes
    r, doc = _diff_json(api_build(1), tf.aborts_when_loaded(), "--symbols-range")
    assert doc["mode"] == "static"
    assert not [c for c in doc["changes"] if c["kind"].startswith(("global.", "type."))]
    assert ("export.removed", "export add") in {(c["kind"], c["subject"]) for c in doc["changes"]}
    assert any("read statically only" in w for w in doc["warnings"])
    # a break seen statically is a break whatever was not compared
    assert r.returncode == 1 and doc["verdict"] == "incompatible"
    assert [n.split(" (")[0] for n in doc["not_compared"]] == ["NEW"]
    # (with its range by loading, NEW's aborts on every release OLD runs on too)
    # asked for statically: judged on the files, and the promise says so
    r, doc = _diff_json(tf.aborts_when_loaded(), tf.aborts_when_loaded(), "--static")
    assert r.returncode == 0 and doc["verdict"] == "compatible" and doc["promise"]


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
    assert doc["summary"] == {"changes": 5, "incompatible": 3, "suppressed": 2, "notes": 0}
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


# --- the API model compared (pure: no builds, no processes) ---------------------------
T_INT, T_STR, T_STDSTR = TypeRef("int"), TypeRef("ffi.String"), TypeRef("std::string")


def _typed(*params, ret=T_INT):
    return TypeRef("ffi.Function", (), tuple(params), ret)


def _types_api(*types, mode="loaded", releases=(), load_error=None):
    return replace(
        _api(),
        types=tuple(types),
        mode=mode,
        runtime_releases=tuple(releases),
        load_error=load_error,
    )


def _t(key, parent="ffi.Object", fields=(), methods=(), attrs=()):
    return ObjectType(
        key,
        parent,
        tuple(Field(n, t, True, None) for n, t in fields),
        tuple(Method(n, t, static, None) for n, t, static in methods),
        None,
        tuple(attrs),
    )


def _kinds(res):
    return sorted((c.kind, c.subject) for c in res.changes)


def test_a_field_moved_to_the_base_type_is_no_change():
    # 0.1.6's TestUnregisteredObject registered v1 itself; 0.1.15's inherits it
    # from TestUnregisteredBaseObject: a caller of OLD still reads obj.v1.
    base = _t("t.Base", fields=[("v1", T_INT)])
    old = _types_api(base, _t("t.Obj", "t.Base", fields=[("v1", T_INT), ("v2", T_INT)]))
    new = _types_api(base, _t("t.Obj", "t.Base", fields=[("v2", T_INT)]))
    res = _compare(old, new)
    assert res.changes == () and res.exit_code == 0
    # the reverse (a field re-registered on the subtype) adds nothing either
    assert _compare(new, old).changes == ()


def test_a_member_gone_from_the_base_is_one_break_not_one_per_subtype():
    old = _types_api(
        _t("t.Base", fields=[("x", T_INT)], methods=[("f", _typed(T_INT), False)]),
        _t("t.A", "t.Base"),
        _t("t.B", "t.A"),
    )
    new = _types_api(_t("t.Base"), _t("t.A", "t.Base"), _t("t.B", "t.A"))
    res = _compare(old, new)
    assert _kinds(res) == [
        ("type.field_removed", "type t.Base field x"),
        ("type.method_removed", "type t.Base method f"),
    ]
    assert res.exit_code == 1
    # a type whose base is gone loses the inherited members itself
    res = _compare(old, _types_api(_t("t.A"), _t("t.B", "t.A")))
    assert ("type.field_removed", "type t.A field x") in _kinds(res)
    assert ("type.field_removed", "type t.B field x") not in _kinds(res)


def test_generated_methods_and_attr_constructors_are_notes():
    copy = ("__ffi_shallow_copy__", _typed(TypeRef("t.Obj"), ret=TypeRef("ffi.Object")), False)
    init = ("__ffi_init__", _typed(T_INT, T_INT, ret=TypeRef("ffi.Object")), True)
    old = _types_api(_t("t.Obj", methods=[copy, init]))
    # newer headers: both are type attributes, not methods
    new = _types_api(_t("t.Obj", attrs=["__ffi_init__", "__ffi_shallow_copy__"]))
    res = _compare(old, new)
    assert _kinds(res) == [
        ("type.generated_method_removed", "type t.Obj method __ffi_shallow_copy__"),
        ("type.method_now_attr", "type t.Obj method __ffi_init__"),
    ]
    assert all(c.compatible and c.note for c in res.changes) and res.exit_code == 0
    assert res.to_json()["summary"]["notes"] == 2
    # a constructor gone for good is a break; the copy never is
    res = _compare(old, _types_api(_t("t.Obj")))
    assert [(c.kind, c.compatible) for c in res.changes] == [
        ("type.method_removed", False),  # __ffi_init__
        ("type.generated_method_removed", True),
    ]
    r = _compare(_types_api(_t("t.Obj")), old)
    assert _kinds(r) == [
        ("type.generated_method_added", "type t.Obj method __ffi_shallow_copy__"),
        ("type.method_added", "type t.Obj method __ffi_init__"),
    ]


def test_spellings_of_one_type_are_equal():
    # tilelang 0.1.9 wrote std::string where 0.1.12 writes ffi.String: both are str
    a = _api(Func("f", _typed(T_STDSTR, ret=T_STDSTR)))
    b = _api(Func("f", _typed(T_STR, ret=T_STR)))
    assert _compare(a, b).changes == ()
    old = _types_api(_t("t.C", fields=[("p", T_STDSTR)]))
    assert _compare(old, _types_api(_t("t.C", fields=[("p", T_STR)]))).changes == ()
    res = _compare(old, _types_api(_t("t.C", fields=[("p", T_INT)])))
    assert _kinds(res) == [("type.field_type_changed", "type t.C field p")]


def test_a_runtime_range_that_shrinks_or_moves_breaks():
    from tvmffi_cli.abi.versions import KNOWN_RELEASES as K

    old = _types_api(releases=K[:10])  # apache-tvm 0.25: 0.1.0 .. 0.1.12
    new = _types_api(releases=K[10:])  # 0.26: 0.1.13.post3 ..
    res = _compare(old, new)
    got = {c.kind: c for c in res.changes}
    assert set(got) == {"runtime.releases_dropped", "runtime.releases_added"}
    drop = got["runtime.releases_dropped"]
    assert not drop.compatible and res.exit_code == 1
    assert drop.detail == "NEW does not run on 0.1.0..0.1.12, where OLD runs"
    assert (drop.old, drop.new) == (
        "0.1.0..0.1.12 (by symbols)",
        "0.1.13.post3..0.1.15.post2 (by symbols)",
    )
    assert got["runtime.releases_added"].compatible
    # a range that grows is compatible; the same range is no change
    assert _compare(new, _types_api(releases=K)).exit_code == 0
    assert _compare(old, old).changes == ()
    # a failure seen by loading is named
    failing = replace(new, runtime_releases=K[9:], range_failures=(("0.1.12", "aborts: X"),))
    failing = replace(failing, runtime_releases=K[10:], range_basis="loading")
    res = _compare(_types_api(releases=K[9:]), failing)
    (c,) = [c for c in res.changes if c.kind == "runtime.releases_dropped"]
    assert c.detail == "NEW does not run on 0.1.12, where OLD runs (on 0.1.12: aborts: X)"
    assert c.new == "0.1.13.post3..0.1.15.post2 (by loading)"


def test_fails_closed_when_a_side_was_not_loaded():
    loaded = _types_api(_t("t.A"))
    unloaded = replace(_api(), mode="static", load_error="loading the library failed: boom")
    res = _compare(loaded, unloaded)
    assert res.changes == () and res.verdict == "cannot judge" and res.exit_code == 2
    assert res.not_compared == (
        "NEW (x) could not be loaded: loading the library failed: boom; its globals, "
        "object types and type schemas were not compared",
    )
    # static by request: the promise, judged on the files
    res = diff.compare(unloaded, unloaded, static_requested=True)
    assert res.exit_code == 0 and res.not_compared == () and res.promise
    # a break seen outranks what was not compared
    gone = replace(unloaded, exports=(Func("f"),))
    assert _compare(gone, unloaded).exit_code == 1


def test_the_range_by_loading(capsys, monkeypatch):
    """compare() on a range check (inspect/ranges.py cover): a release where
    OLD loads and NEW does not is dropped; where both fail it is not OLD's;
    where NEW could not be judged the verdict is "cannot judge"."""
    from tvmffi_cli.inspect.ranges import Cover, Coverage

    K = ("0.1.10", "0.1.11", "0.1.12", "0.1.13.post3")
    api = _types_api(releases=K)
    boom = "crashed the worker process (SIGABRT) while loading: boom"
    rows = (
        Cover("0.1.10", "fails", "fails", boom, "it aborts too"),  # not OLD's either
        Cover("0.1.11", "fails", "loads", boom),
        Cover("0.1.12", "lacks-symbols", "loads", "lacks a runtime symbol it imports"),
        Cover("0.1.13.post3", "loads", "not-needed"),
    )
    res = diff.compare(api, api, coverage=Coverage(rows, 5))
    (c,) = res.changes
    assert (c.kind, c.compatible, res.exit_code) == ("runtime.releases_dropped", False, 1)
    assert c.detail == f"NEW does not run on 0.1.11..0.1.12, where OLD runs (on 0.1.11: {boom})"
    assert (c.old, c.new) == (
        "0.1.11..0.1.13.post3 (by loading and symbols)",
        "0.1.13.post3 (by loading)",
    )
    assert res.not_compared == () and res.promise is None
    assert res.to_json()["range_check"]["releases"][0]["verdict"] == "outside"
    # a release NEW could not be judged on: cannot judge, named, unless a break
    rows = (
        rows[0],
        Cover("0.1.11", "not-checked", "not-needed", "no network"),
        Cover("0.1.12", "loads", "not-needed"),
        rows[3],
    )
    res = diff.compare(api, api, coverage=Coverage(rows, 2))
    assert res.changes == () and (res.verdict, res.exit_code) == ("cannot judge", 2)
    assert res.not_compared == (
        "runtime range: NEW was not judged on 0.1.11 of OLD's range (0.1.11: no network); "
        "it may not run there",
    )
    from tvmffi_cli.render.tools import render_diff

    monkeypatch.setenv("COLUMNS", "400")
    render_diff(res)
    assert capsys.readouterr().out.splitlines()[1:] == [
        f"not compared: {res.not_compared[0]}",
        "cannot judge: no break among what was compared, but not everything was (exit 2); "
        "make the runtimes of those releases reachable (the registry, or the cache "
        "~/.cache/tvmffi) or compare the ranges by symbols with --symbols-range",
    ]
    gone = replace(api, exports=(Func("f"),))
    assert diff.compare(gone, api, coverage=Coverage(rows, 2)).exit_code == 1
    # no range check and none asked away: fails closed, by symbols
    res = diff.compare(api, api)
    assert res.exit_code == 2 and res.not_compared == (
        "runtime range: compared by symbols only (not checked by loading)",
    )
    # --symbols-range: the reduced promise, judged on it
    res = diff.compare(api, api, symbols_range=True)
    assert res.exit_code == 0 and res.promise == diff.kinds.SYMBOLS_PROMISE


def test_a_release_that_cannot_be_fetched_is_not_judged(tmp_path):
    """Runtimes of 0.1.0 and 0.1.15.post2 at hand, the others not, and pip
    pointed at no index (PIP_NO_INDEX=1: the fetch fails as offline): NEW is
    loaded on the two, the others are named, exit 2 (--symbols-range would
    pass: test_identical_builds_exit_0). ~3 s, most of it one pip run."""
    from tvmffi_cli.abi.versions import KNOWN_RELEASES
    from tvmffi_cli.ffi import fetch

    cache = tmp_path / "runtimes"
    for v in ("0.1.0", "0.1.15.post2"):
        found = fetch.cached_runtime(v)
        if found is None:
            pytest.skip(f"the runtime of apache-tvm-ffi {v} is not cached")
        (cache / v).mkdir(parents=True)
        (cache / v / "libtvm_ffi.so").symlink_to(found)
    env = {
        "TVMFFI_RUNTIME_CACHE": str(cache),
        "TVMFFI_WHEEL_CACHE": str(tmp_path / "no-wheels"),
        "PIP_NO_INDEX": "1",
    }
    a, b = api_build(1), api_build(1, "-O2")
    r = tvmffi("diff", "--json", a, b, env=env)
    doc = validate(json.loads(r.stdout), "diff")
    assert r.returncode == 2 and doc["verdict"] == "cannot judge" and doc["changes"] == []
    rows = {x["release"]: x for x in doc["range_check"]["releases"]}
    assert [v for v, x in rows.items() if x["verdict"] == "kept"] == ["0.1.0", "0.1.15.post2"]
    missing = KNOWN_RELEASES[1:-1]
    assert all(rows[v]["verdict"] == "unchecked" for v in missing)
    first = rows["0.1.3"]["new_message"]
    assert first.startswith("its runtime could not be fetched: --runtime 0.1.3: cannot download")
    (line,) = doc["not_compared"]
    assert line.startswith(
        "runtime range: NEW was not judged on 0.1.3..0.1.14.post1 of OLD's range (0.1.3: its "
        "runtime could not be fetched"
    )
    # the first fetch runs alone; after it failed the others are not tried
    assert all(
        rows[v]["new_message"] == "not fetched: fetching the runtime of 0.1.3 failed first"
        for v in missing[1:]
    )
    assert doc["range_check"]["loads"] == 2

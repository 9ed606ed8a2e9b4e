"""`tvmffi conform`: the zoo (one planted defect per function or library, each
caught by its rule and nothing else), good libraries that pass, outputs and
exit codes."""

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "src" / "tvmffi_cli" / "schemas" / "conform.schema.json").read_text())
BAD = ("fail", "error")


def conform(*args, env=None, timeout=120):
    e = dict(os.environ)
    e.pop("GITHUB_ACTIONS", None)
    e.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "conform", *map(str, args)],
        capture_output=True,
        text=True,
        env=e,
        timeout=timeout,
    )


def conform_json(lib, *args, **kw):
    r = conform(lib, "--json", *args, **kw)
    assert r.returncode in (0, 1), r.stderr
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, SCHEMA)
    return r, doc


def bad_results(doc):
    return {(x["check"], x["function"]) for x in doc["results"] if x["status"] in BAD}


# --- the zoo ------------------------------------------------------------------
# Functions of zoo.c are named <check>__<what>; the check with '_' for '-'.
ZOO_FUNCTIONS = """arg_bounds__reads_first arg_bounds__reads_second wrong_type__unchecked
arg_refcount__keeps_ref arg_refcount__drops_ref args_unchanged__writes_args
error_protocol__returns_one error_protocol__no_error error_protocol__stale_error
result_invariants__raw_str result_invariants__dirty_padding result_invariants__bad_index
result_invariants__writes_on_error no_leak__scratch tensor_bounds__reads_past no_crash__segv no_crash__abort
no_hang__spins valid_call__wrong_return thread_safety__counter metadata_json__not_json
metadata_json__bad_schema doc_utf8__latin1 symbol_kind__table orphan_getter__ghost""".split()
ZOO_TYPO = "__tvm_ffi__metdata_export_names__typo"


def expected_check(fn):
    return fn.split("__")[0].replace("_", "-")


@pytest.fixture(scope="module")
def zoo(build_lib):
    lib = build_lib("conform/zoo.c")
    r, doc = conform_json(lib, "--timeout", "1", "-j", "2")
    return lib, r, doc


def test_zoo_every_planted_defect_is_caught_and_nothing_else(zoo):
    _lib, r, doc = zoo
    expected = {(expected_check(f), f) for f in ZOO_FUNCTIONS} | {("export-names", ZOO_TYPO)}
    assert bad_results(doc) == expected
    assert r.returncode == 1 and doc["passed"] is False


def test_zoo_every_check_of_the_registry_is_exercised(zoo, build_lib):
    from tvmffi_cli.conform import registry

    caught = {c for c, _ in bad_results(zoo[2])}
    # Library-level checks have their own fixtures (here, in test_conform_ci.py, and
    # has-functions in test_sandbox_results.py; declared-runtime in test_wheels_input.py).
    library_level = {
        "library-bin",
        "context-symbols",
        "c-api-imports",
        "library-load",
        "min-runtime",
        "max-runtime",  # tests/test_runtime_ranges.py
        "exit-clean",
        "has-functions",
        "declared-runtime",
    }
    # The CUDA checks have their own fixtures (the stand-in driver's kernels,
    # tests/test_gpu_standin.py; on a GPU tests/test_gpu_device.py); the kernel
    # probes' checks have their planted bugs in tests/test_kernel_bugs.py.
    cuda = {"device-call", "device-mismatch", "device-bounds", "stream-use", "memcheck"}
    kernel = {"type-layout", *(c.id for c in registry.KERNEL_CHECKS)}
    assert caught | library_level | cuda | kernel == set(registry.BY_ID)


@pytest.mark.parametrize(
    "fn, needle",
    [
        ("arg_bounds__reads_first", "called with 0 arguments, it read args[0] from the guard page"),
        ("arg_bounds__reads_second", "called with 1 argument(s), it read past args[0]"),
        ("arg_refcount__keeps_ref", "(2 -> 3)"),
        ("arg_refcount__drops_ref", "(2 -> 1)"),
        ("error_protocol__returns_one", "returned 1; only 0 and -1 are allowed"),
        ("error_protocol__no_error", "returned -1 without raising an error"),
        ("error_protocol__stale_error", "left a raised error behind (ValueError: left behind)"),
        ("result_invariants__raw_str", "kTVMFFIRawStr"),
        ("result_invariants__dirty_padding", "padding is 0xdead"),
        ("result_invariants__bad_index", "type index 40"),
        ("result_invariants__writes_on_error", "the call failed but the result was written"),
        ("no_leak__scratch", "+1 live object(s)"),
        ("no_crash__segv", "valid (int 2): killed by SIGSEGV"),
        ("no_crash__abort", "zero-args: killed by SIGABRT"),
        ("no_hang__spins", "valid (int 2): no return within 1 s"),
        ("valid_call__wrong_return", "returned float but the metadata declares int"),
        ("wrong_type__unchecked", "parameter 0 (int) accepted a String"),
        ("doc_utf8__latin1", "byte 0xe9 at offset 3"),
        ("symbol_kind__table", "is a data symbol"),
    ],
)
def test_zoo_messages_name_the_defect(zoo, fn, needle):
    msgs = [
        x["message"] for x in zoo[2]["results"] if x["function"] == fn and x["status"] == "fail"
    ]
    assert len(msgs) == 1 and needle in msgs[0], msgs


def test_zoo_crashing_functions_leave_the_others_probed(zoo):
    # Every probed zoo function got its full set of per-function results,
    # including the ones after a crash or a hang in the same worker.
    doc = zoo[2]
    for fn in doc["functions"]:
        checks = [x["check"] for x in doc["results"] if x["function"] == fn]
        if fn == "symbol_kind__table":
            assert "no-crash" in checks  # reported as skipped: not code
        assert len(checks) == len(set(checks))
        assert {"no-crash", "no-hang", "error-protocol"} <= set(checks), fn
    skipped = [
        x
        for x in doc["results"]
        if x["function"] == "symbol_kind__table" and x["check"] == "no-crash"
    ]
    assert skipped[0]["status"] == "skip"


@pytest.mark.parametrize(
    "src, check, needle",
    [
        ("conform/zoo_context.c", "context-symbols", "__TVMFFIEnvCheckSignals: is 4 bytes"),
        ("conform/zoo_imports.c", "c-api-imports", "TVMFFINotInTheAbi"),
        ("conform/zoo_libbin.c", "library-bin", "2 `_lib` modules"),
        ("conform/zoo_load.c", "library-load", "crashes the process (SIGABRT)"),
    ],
)
def test_library_level_zoo(build_lib, src, check, needle):
    r, doc = conform_json(build_lib(src), "--timeout", "5")
    bad = [x for x in doc["results"] if x["status"] in BAD]
    assert [(x["check"], x["function"]) for x in bad] == [(check, None)], bad
    assert needle in bad[0]["message"]
    assert r.returncode == 1
    if check == "context-symbols":
        assert "__TVMFFINoSuchApi: TVMFFINoSuchApi is not a C API function" in bad[0]["message"]
    if check == "library-load":
        # Nothing could be probed, and every function says why.
        probes = [x for x in doc["results"] if x["function"] == "fine" and x["check"] == "no-crash"]
        assert probes[0]["status"] == "skip" and "did not load" in probes[0]["message"]


# --- good libraries -------------------------------------------------------------
def _assert_good(doc, r, min_typed):
    assert bad_results(doc) == set()
    assert r.returncode == 0 and doc["passed"] is True
    # The typed probes really ran (a run that skipped everything would pass too).
    ran = {
        c: sum(1 for x in doc["results"] if x["check"] == c and x["status"] == "pass")
        for c in ("valid-call", "wrong-type", "thread-safety", "arg-bounds", "no-leak")
    }
    assert all(n >= min_typed for n in ran.values()), ran


def test_good_c_library_passes(build_lib):
    r, doc = conform_json(build_lib("conform/good.c"))
    _assert_good(doc, r, 5)
    assert doc["functions"] == [
        "add",
        "concat",
        "identity",
        "nothing",
        "numel",
        "raises",
        "scale",
        "sum_tensor",
        "untyped",
    ]


def test_good_official_cpp_library_passes(build_lib):
    lib = build_lib(
        "conform/good_official.cc",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
    )
    r, doc = conform_json(lib)
    _assert_good(doc, r, 10)
    sigs = {x["function"]: x["message"] for x in doc["results"] if x["check"] == "metadata-json"}
    assert sigs["mul3"] == "mul3(int, int, int) -> int"
    assert sigs["scale"] == "scale(float, Optional[float]) -> float"


def test_jobs_do_not_change_results(build_lib):
    lib = build_lib("conform/good.c")
    _, one = conform_json(lib, "-j", "1")
    _, two = conform_json(lib, "-j", "2")
    assert one["results"] == two["results"]


# --- interface ------------------------------------------------------------------
def test_select_and_ignore(build_lib):
    lib = build_lib("conform/zoo.c")
    _, doc = conform_json(lib, "--select", "symbol-kind,orphan-getter")
    assert {x["check"] for x in doc["results"]} == {"symbol-kind", "orphan-getter"}
    assert bad_results(doc) == {
        ("symbol-kind", "symbol_kind__table"),
        ("orphan-getter", "orphan_getter__ghost"),
    }
    r, doc = conform_json(lib, "--select", "export-names,symbol-kind", "--ignore", "symbol-kind")
    assert {x["check"] for x in doc["results"]} == {"export-names"}
    # export-names is a warning: it fails but does not fail the run.
    assert r.returncode == 0 and doc["passed"] is True and bad_results(doc)


def test_unknown_check_id_is_a_usage_error(build_lib):
    r = conform(build_lib("conform/good.c"), "--select", "no-such-check")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unknown check id 'no-such-check'" in r.stderr


@pytest.mark.parametrize("content", [None, b"", b"not a library at all"])
def test_unreadable_file_exits_2(tmp_path, content):
    p = tmp_path / "lib.so"
    if content is not None:
        p.write_bytes(content)
    r = conform(p, "--json")
    assert r.returncode == 2, r.stderr
    assert r.stdout == "" and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_junit_xml(zoo, tmp_path, build_lib):
    lib, _, doc = zoo
    out = tmp_path / "conform.xml"
    r = conform(
        lib,
        "--junit-xml",
        out,
        "--timeout",
        "1",
        "--select",
        "symbol-kind,error-protocol,thread-safety",
    )
    assert r.returncode == 1
    suite = ET.parse(out).getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert int(suite.get("tests")) == len(cases)
    failed = {
        (c.get("classname").split(".", 1)[1], c.get("name"))
        for c in cases
        if c.find("failure") is not None
    }
    assert failed == {
        ("symbol_kind__table", "symbol-kind"),
        ("error_protocol__returns_one", "error-protocol"),
        ("error_protocol__no_error", "error-protocol"),
        ("error_protocol__stale_error", "error-protocol"),
    }
    assert int(suite.get("failures")) == len(failed)
    # A warning is never a <failure>: a property and system-out carry it.
    warn = [
        c
        for c in cases
        if c.get("name") == "thread-safety"
        and c.get("classname").endswith("thread_safety__counter")
    ]
    assert warn[0].find("failure") is None
    props = {p.get("name"): p.get("value") for p in warn[0].iter("property")}
    assert "different results" in props["warning"]
    assert props["reproduce"].endswith(
        "--select thread-safety --function thread_safety__counter --threads 4 --timeout 1"
    )
    assert "warning: " in warn[0].find("system-out").text


def test_github_annotations(build_lib):
    lib = build_lib("conform/zoo.c")
    r = conform(
        lib,
        "--select",
        "symbol-kind,orphan-getter",
        env={"GITHUB_ACTIONS": "true", "NO_COLOR": "1"},
    )
    lines = [x for x in r.stdout.splitlines() if x.startswith("::")]
    f = str(lib).replace(":", "%3A").replace(",", "%2C")
    # The error first (most severe), each with file= the library.
    assert lines[0].startswith(
        f"::error file={f},title=tvmffi conform symbol-kind (error)%3A "
        "symbol_kind__table::Function symbols are code. symbol_kind__table"
        ": __tvm_ffi_symbol_kind__table is a data symbol in .rodata"
    )
    assert lines[1].startswith(
        f"::warning file={f},title=tvmffi conform orphan-getter (warning)%3A orphan_getter__ghost::"
    )
    assert "%0Areproduce: tvmffi conform" in lines[0] and len(lines) == 2
    r = conform(lib, "--select", "symbol-kind", "--json", env={"GITHUB_ACTIONS": "true"})
    json.loads(r.stdout)  # annotations never mix into the JSON
    assert "::error file=" in r.stderr


def test_people_output_groups_by_function(build_lib):
    r = conform(
        build_lib("conform/zoo.c"),
        "--select",
        "symbol-kind,export-names",
        env={"NO_COLOR": "1", "COLUMNS": "200"},
    )
    assert r.returncode == 1
    assert "\x1b[" not in r.stdout
    row = [x for x in r.stdout.splitlines() if "symbol_kind__table" in x]
    assert row and "FAIL" in row[0] and "symbol-kind: __tvm_ffi_symbol_kind__table" in row[0]
    assert "FAILED" in r.stdout.splitlines()[-1]


def test_people_output_folds_clean_functions(build_lib):
    """Functions without findings are one summary row, so a big clean library
    stays one screen; -v lists every function."""
    lib = build_lib("conform/good.c")
    env = {"NO_COLOR": "1", "COLUMNS": "200"}
    r = conform(lib, env=env)
    assert r.returncode == 0, r.stderr
    rows = [x for x in r.stdout.splitlines() if x.startswith("│")]
    assert len(rows) == 2, r.stdout  # (library) and the folded row
    assert "(library)" in rows[0]
    assert "all 9 functions" in rows[1] and "ok" in rows[1]
    assert "no findings" in rows[1]
    assert not any(f" {fn} " in r.stdout for fn in ("add", "concat", "numel", "untyped"))
    v = conform(lib, "-v", env=env)
    names = {x.split("│")[1].strip() for x in v.stdout.splitlines() if x.startswith("│")}
    assert {"add", "concat", "identity", "nothing", "numel", "untyped"} <= names
    assert "functions" not in " ".join(names)
    # A function with a finding keeps its own row next to the folded ones.
    z = conform(
        build_lib("conform/zoo.c"),
        *("--select", "symbol-kind,no-crash", "--function", "symbol_kind__table"),
        *("--function", "arg_refcount__keeps_ref", "--function", "doc_utf8__latin1"),
        env=env,
    )
    assert any("symbol_kind__table" in x and "FAIL" in x for x in z.stdout.splitlines())
    assert any("2 other functions" in x for x in z.stdout.splitlines())


def test_docs_page_matches_registry():
    from tvmffi_cli.conform import registry

    # One source, in the package (installed with it); docs/checks.md points there.
    assert registry.DOCS.parts[-3:] == ("tvmffi_cli", "docs", "checks.md")
    assert registry.DOCS.read_text() == registry.markdown()
    src = ROOT / "src" / "tvmffi_cli" / "docs" / "checks.md"
    assert src.read_text() == registry.markdown()
    assert "src/tvmffi_cli/docs/checks.md" in (ROOT / "docs" / "checks.md").read_text()


def test_registry_records_are_complete():
    import re

    from tvmffi_cli.conform import registry

    for c in registry.CHECKS:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c.id), c.id
        assert c.severity in (registry.ERROR, registry.WARNING)
        assert c.scope in (registry.LIBRARY, registry.FUNCTION, registry.WHEEL)
        assert c.stage in (registry.STATIC, registry.LOAD, registry.PROBE)
        assert all(len(t) > 20 for t in (c.what, c.why, c.fix)), c.id


def test_benchmark_library_generator_conforms(tmp_path):
    """The generated library of bench/bench_conform.py (fewer functions here)
    passes the full check set, with its typed probes running."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        import bench_conform
    finally:
        sys.path.pop(0)
    src, lib = tmp_path / "gen.c", tmp_path / "libgen.so"
    src.write_text(bench_conform.generate(24))
    bench_conform.build(src, lib)
    r, doc = conform_json(lib, "-j", "2")
    assert len(doc["functions"]) == 24
    _assert_good(doc, r, 24)


def test_help_points_to_the_installed_checks_reference():
    import re

    r = conform("--help", env={"COLUMNS": "400"})
    assert r.returncode == 0
    m = re.search(r"^ *(/\S+/tvmffi_cli/docs/)$", r.stdout, re.M)
    assert m, r.stdout
    assert "checks.md" in r.stdout and "security.md" in r.stdout
    assert (Path(m.group(1)) / "checks.md").is_file()
    assert (Path(m.group(1)) / "security.md").is_file()
    # At 80 columns no line is wider, unless the folder's path alone is.
    r = conform("--help", env={"COLUMNS": "80"})
    wide = [ln for ln in r.stdout.splitlines() if len(ln) > 80]
    assert wide == [] or wide == [f"  {m.group(1)}"], wide
